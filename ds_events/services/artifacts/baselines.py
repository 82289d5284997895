"""Baselines of a quest: publishing one (here and in the home's registry), attaching one
(this quest's or the registry's) as the quest's reference, and waiving the baseline
gate. Confirming a baseline's numbers and metric contract is :mod:`.confirmations`'.

The baseline gate: ``record_main_experiment`` needs a confirmed baseline, or a gate
waived with ``waive_baseline`` (the run is then recorded without a comparison).
Published baselines also enter the home's registry (:mod:`.registry`), where every quest
of the home can attach them.
"""

from __future__ import annotations

from typing import Any

from ds_events.artifacts.metrics import check_metrics, contract_input, primary_metric_ref
from ds_events.artifacts.validate import check_id, check_materialised, check_text, comment_text, confine_path, optional_id
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.artifact import BaselineAttached, BaselinePublished, BaselineWaived
from ds_events.home import Home, Quest
from projections.artifacts import Baseline, State, record_path

from .commands import AttachBaseline, PublishBaseline, WaiveBaseline
from .registry import publish_to_registry, registry_entry, registry_state, unregistered_publication
from .results import AttachBaselineResult, PublishBaselineResult, WaiveBaselineResult

__all__ = [
    "publish_baseline",
    "attach_baseline",
    "waive_baseline",
    "known_baseline",
    "unknown_baseline",
    "check_variant",
    "advance",
]


def publish_baseline(quest: Quest, cmd: PublishBaseline) -> PublishBaselineResult:
    """Register a baseline (``baseline_id``, ``title`` or ``name``, optional ``variants``
    or ``baseline_variants``, ``baseline_path``, ``metrics_summary``, ``primary_metric``,
    ``metric_contract``) in the quest and in the home's registry."""
    payload = dict(cmd.payload)
    if not payload.get("title") and isinstance(payload.get("name"), str):
        payload["title"] = payload["name"]  # DeepScientist names a baseline `name`
    if "variants" not in payload and "baseline_variants" in payload:
        payload["variants"] = payload["baseline_variants"]
    missing = [f for f in ("baseline_id", "title") if not payload.get(f)]
    if missing:
        raise Invalid(f"a baseline needs {', '.join(missing)}", code="missing_fields", missing=missing)
    baseline_id = check_id(payload["baseline_id"], "baseline_id")
    check_text(payload["title"], "title", max_chars=500)
    variants = _variant_ids(payload.get("variants"))
    clean = {k: v for k, v in payload.items() if k not in ("baseline_id", "kind")}
    if "baseline_path" in clean:
        clean["baseline_path"] = confine_path(quest.root, clean["baseline_path"], "baseline_path")
    if "metrics_summary" in clean:
        clean["metrics_summary"] = check_metrics(clean["metrics_summary"])
    if clean.get("primary_metric") is not None:
        primary_metric_ref(clean["primary_metric"])
    if clean.get("metric_contract") is not None and not isinstance(clean["metric_contract"], dict):
        raise Invalid("metric_contract must be an object with 'metrics'", code="invalid_metric_contract")
    default = clean.get("default_variant_id")
    if default is not None and default not in variants:
        raise NotFound(f"default_variant_id {default!r} is not one of the variants", code="unknown_variant", variant_ids=variants)
    if cmd.comment is not None:
        clean.setdefault("comment", cmd.comment)
    state = quest.state("artifacts")
    confirmed = state.baselines[baseline_id].confirmed if baseline_id in state.baselines else None
    if confirmed is not None:
        # DeepScientist's skills confirm a baseline, then publish it for reuse: what the
        # payload leaves out comes from the confirmation, so other quests can confirm it
        # from the registry alone.
        for key, value in (
            ("metric_contract", contract_input(confirmed.contract, {})), ("metrics_summary", dict(confirmed.metrics_summary)),
            ("primary_metric", confirmed.primary_metric), ("summary", confirmed.summary or None),
            ("baseline_path", confirmed.baseline_path),
            ("default_variant_id", confirmed.variant_id if confirmed.variant_id in variants else None),
        ):  # fmt: skip
            if value is not None and key not in clean:
                clean[key] = value
    unregistered = unregistered_publication(quest, state, baseline_id)
    if unregistered is not None:
        return _complete_publication(quest, unregistered, clean, variants)
    _check_publishable(state, baseline_id)
    check_materialised(quest.root, [record_path("baseline", baseline_id)])
    # The quest first, then the registry, whose event takes the quest event's id: a
    # publisher that dies between the two leaves a quest publication the registry lacks,
    # and a retry completes it (the same id makes the registry append idempotent).
    with quest.transaction() as txn:
        _check_publishable(quest.state("artifacts"), baseline_id)
        stored = txn.append(BaselinePublished(baseline_id=baseline_id, payload=clean, variant_ids=variants))
    assert isinstance(stored, BaselinePublished)
    entry = publish_to_registry(quest, stored)
    return PublishBaselineResult(
        baseline_id=baseline_id, variant_ids=variants, path=record_path("baseline", baseline_id), seq=stored.seq,
        baseline_registry_entry=entry,
    )  # fmt: skip


def attach_baseline(quest: Quest, cmd: AttachBaseline) -> AttachBaselineResult:
    """Choose a baseline (and variant) as the quest's reference: one published in this
    quest, else one of the home's registry (its entry is copied into the event)."""
    baseline_id = check_id(cmd.baseline_id, "baseline_id")
    variant_id = optional_id(cmd.variant_id, "variant_id")
    local = quest.state("artifacts").baselines.get(baseline_id)
    entry = None if local is not None else registry_entry(quest.home, baseline_id)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        baseline = state.baselines.get(baseline_id)
        if baseline is not None:
            check_variant(baseline, variant_id)
            event = BaselineAttached(baseline_id=baseline_id, variant_id=variant_id)
            source = baseline.source_quest or quest.id
        elif entry is not None:
            if variant_id is not None and variant_id not in entry.variant_ids:
                raise NotFound(
                    f"baseline {baseline_id!r} has no variant {variant_id!r}", code="unknown_variant", variant_ids=entry.variant_ids
                )
            variant_id = variant_id or entry.payload.get("default_variant_id")
            check_materialised(quest.root, [record_path("baseline", baseline_id)])
            # The entry as it is now, so this quest's replay needs no other log.
            event = BaselineAttached(
                baseline_id=baseline_id, variant_id=variant_id, source_quest=entry.source_quest,
                entry={"payload": entry.payload, "variant_ids": entry.variant_ids, "registry_seq": entry.seq},
            )  # fmt: skip
            source = entry.source_quest
        else:
            raise unknown_baseline(state, baseline_id, home=quest.home)
        stored = txn.append(event)
    confirmed = baseline is not None and baseline.confirmed is not None
    return AttachBaselineResult(
        baseline_id=baseline_id, variant_id=variant_id, confirmed=confirmed, seq=stored.seq,
        attachment={"source_baseline_id": baseline_id, "source_variant_id": variant_id, "source_quest": source},
    )  # fmt: skip


def waive_baseline(quest: Quest, cmd: WaiveBaseline) -> WaiveBaselineResult:
    """Open the baseline gate without a baseline, for a written reason: main experiments
    are then recorded without a comparison. Refused once a baseline is confirmed."""
    reason = check_text(cmd.reason, "reason", max_chars=5000)
    comment = comment_text(cmd.comment)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if state.baseline_gate == "confirmed":
            raise Conflict(
                f"baseline {state.confirmed_baseline!r} is confirmed: there is no gate to waive (overwrite_baseline refreshes it)",
                code="baseline_already_confirmed", baseline_id=state.confirmed_baseline,
            )  # fmt: skip
        batch: list[Event] = [BaselineWaived(reason=reason, comment=comment)]
        batch += advance(quest, cmd.auto_advance, f"baseline gate waived: {reason}")
        stored = txn.append(batch)[0]
    return WaiveBaselineResult(baseline_gate="waived", reason=reason, anchor=quest.state("status").anchor, seq=stored.seq)


def known_baseline(state: State, baseline_id: str) -> Baseline:
    """The quest's baseline ``baseline_id``, or the ``unknown_baseline`` refusal."""
    baseline = state.baselines.get(baseline_id)
    if baseline is None:
        raise unknown_baseline(state, baseline_id)
    return baseline


def unknown_baseline(state: State, baseline_id: str, *, home: Home | None = None) -> NotFound:
    """The refusal for an id neither the quest nor (given ``home``) the registry knows."""
    known = set(state.baselines)
    registry = registry_state(home) if home is not None else None
    if registry is not None:
        known |= set(registry.entries)
    return NotFound(
        f"no baseline {baseline_id!r}: publish or confirm it first", code="unknown_baseline", known_baseline_ids=sorted(known)
    )


def check_variant(baseline: Baseline, variant_id: str | None) -> None:
    """Refuse (``unknown_variant``) a variant the baseline does not have."""
    if variant_id is not None and variant_id not in baseline.variant_ids:
        raise NotFound(
            f"baseline {baseline.baseline_id!r} has no variant {variant_id!r}",
            code="unknown_variant",
            variant_ids=list(baseline.variant_ids),
        )


def advance(quest: Quest, auto_advance: bool, reason: str) -> list[Event]:
    """Past the baseline gate the quest moves from the baseline stage to idea (only from
    that stage: a quest already further on stays where it is)."""
    previous = quest.state("status").anchor
    if not auto_advance or previous != "baseline":
        return []
    return [QuestAnchorChanged(anchor="idea", previous=previous, reason=reason[:2000])]


# -- private helpers ----------------------------------------------------------------------


def _check_publishable(state: State, baseline_id: str) -> None:
    """An id is published once per quest; a baseline confirmed (or attached) here but
    not yet published may be published."""
    baseline = state.baselines.get(baseline_id)
    if baseline is not None and baseline.published_seq is None:
        return
    if state.id_taken(baseline_id):
        raise Conflict(f"baseline {baseline_id!r} already exists", code="baseline_exists", baseline_id=baseline_id)


def _complete_publication(
    quest: Quest, published: BaselinePublished, payload: dict[str, Any], variants: list[str]
) -> PublishBaselineResult:
    """Finish a publication its publisher left half done: the registry gets the quest's
    publication as it was made. A retry with the same payload is answered as the first
    call would have been; another payload is refused (the id is published here), after
    the registry was brought in line."""
    entry = publish_to_registry(quest, published)
    if (published.payload, list(published.variant_ids)) != (payload, variants):
        raise Conflict(
            f"baseline {published.baseline_id!r} already exists (its earlier publication, cut short, is now complete "
            "in the home's registry)", code="baseline_exists", baseline_id=published.baseline_id,
        )  # fmt: skip
    return PublishBaselineResult(
        baseline_id=published.baseline_id, variant_ids=list(published.variant_ids),
        path=record_path("baseline", published.baseline_id), seq=published.seq, baseline_registry_entry=entry,
        recovered=True,
    )  # fmt: skip


def _variant_ids(variants: Any) -> list[str]:
    if variants is None:
        return []
    if not isinstance(variants, list):
        raise Invalid("variants must be a list of ids or of objects with variant_id", code="invalid_field", field="variants")
    ids = [check_id(v.get("variant_id") if isinstance(v, dict) else v, "variant_id") for v in variants]
    if len(set(ids)) != len(ids):
        raise Invalid("variant ids must be unique", code="invalid_field", field="variants")
    return ids
