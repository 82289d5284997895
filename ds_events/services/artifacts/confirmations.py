"""Confirming a baseline: its numbers and its canonical metric contract (materialised to
``<baseline_path>/json/metric_contract.json``), which opens the baseline gate; and
overwriting the confirmation in place, judged for what it does to the runs already
compared with it.

What a call leaves out comes from the baseline as published (in this quest or the
home's registry) or, for an overwrite, as confirmed; conflicting values are refused,
never silently preferred.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.artifacts.metrics import (
    check_metrics,
    contract_input,
    merge_directions,
    normalise_contract,
    normalise_directions,
    primary_metric_ref,
)
from ds_events.artifacts.validate import (
    check_id,
    check_materialised,
    check_objects,
    check_text,
    comment_text,
    confine_path,
    optional_id,
)
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events.artifact import BaselineConfirmed
from ds_events.home import Quest
from projections.artifacts import record_path

from .baselines import advance, check_variant
from .commands import ConfirmBaseline, OverwriteBaseline
from .registry import registry_entry
from .results import ConfirmBaselineResult
from .vocabulary import metric_stage

__all__ = ["confirm_baseline", "overwrite_baseline"]


@metric_stage("baseline")
def confirm_baseline(quest: Quest, cmd: ConfirmBaseline) -> ConfirmBaselineResult:
    """Confirm a baseline's numbers and its canonical metric contract, which is
    materialised to ``<baseline_path>/json/metric_contract.json``. What the call leaves
    out (contract, numbers, primary metric, summary, variant) comes from the baseline as
    published in this quest or in the home's registry."""
    rel = confine_path(quest.root, cmd.baseline_path, "baseline_path")
    state = quest.state("artifacts")
    attached = state.attached
    baseline_id = optional_id(cmd.baseline_id, "baseline_id") or (attached["baseline_id"] if attached else None)
    if baseline_id is None:
        baseline_id = check_id(rel.rsplit("/", 1)[-1], "baseline_id")
    variant_id = optional_id(cmd.variant_id, "variant_id")
    if variant_id is None and attached is not None and attached["baseline_id"] == baseline_id:
        variant_id = attached["variant_id"]
    local = state.baselines.get(baseline_id)
    published: dict[str, Any] = dict(local.payload) if local is not None else {}
    if not published:  # neither published here nor attached from the registry: the registry may know it
        entry = registry_entry(quest.home, baseline_id)
        published = dict(entry.payload) if entry is not None else {}
        if entry is not None and variant_id is not None and entry.variant_ids and variant_id not in entry.variant_ids:
            raise NotFound(
                f"baseline {baseline_id!r} has no variant {variant_id!r}", code="unknown_variant", variant_ids=entry.variant_ids
            )
    variant_id = variant_id or published.get("default_variant_id")
    resolved = _resolve(
        quest, baseline_id=baseline_id, variant_id=variant_id, rel=rel, published=published,
        contract=cmd.metric_contract, metrics=cmd.metrics_summary, primary=cmd.primary_metric,
        directions=cmd.metric_directions, summary=cmd.summary,
    )  # fmt: skip
    comment = comment_text(cmd.comment)
    baseline_kind = check_text(cmd.baseline_kind, "baseline_kind", required=False, max_chars=100)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        baseline = state.baselines.get(baseline_id)
        if baseline is None and state.id_taken(baseline_id):
            raise Conflict(f"{baseline_id!r} names another artifact, not a baseline", code="artifact_exists", artifact_id=baseline_id)
        if baseline is not None and (baseline.published_seq is not None or baseline.source_quest is not None):
            check_variant(baseline, variant_id)
        check_materialised(quest.root, [record_path("baseline", baseline_id)])
        check_materialised(quest.root, [resolved.contract_path], field="baseline_path")  # a link planted meanwhile
        event = BaselineConfirmed(
            baseline_id=baseline_id, baseline_path=rel, contract_path=resolved.contract_path,
            contract=resolved.contract, metrics_summary=resolved.metrics, primary_metric=resolved.primary,
            metric_directions=resolved.directions, summary=resolved.summary, variant_id=variant_id,
            comment=comment, baseline_kind=baseline_kind,
        )  # fmt: skip
        stored = txn.append([event, *advance(quest, cmd.auto_advance, f"baseline {baseline_id} confirmed")])[0]
    return _result(quest, event, stored.seq)


@metric_stage("baseline")
def overwrite_baseline(quest: Quest, cmd: OverwriteBaseline) -> ConfirmBaselineResult:
    """Refresh the confirmed baseline in place (new numbers, an added metric, another
    variant). A change that breaks comparability with runs already recorded (a metric
    removed, a direction or the primary metric or the evaluation protocol changed) is
    refused unless ``allow_protocol_breaking_change``; another path unless
    ``allow_path_change``. What the call leaves out is kept from the confirmation."""
    change = check_text(cmd.change_summary, "change_summary", max_chars=5000)
    state = quest.state("artifacts")
    if state.confirmed_baseline is None or state.baseline_gate != "confirmed":
        raise Conflict("no confirmed baseline to overwrite: call confirm_baseline first", code="no_confirmed_baseline")
    baseline_id = state.confirmed_baseline
    if cmd.baseline_id is not None and check_id(cmd.baseline_id, "baseline_id") != baseline_id:
        raise Conflict(
            f"only the confirmed baseline {baseline_id!r} can be overwritten: confirm {cmd.baseline_id!r} as a new baseline instead",
            code="baseline_mismatch", baseline_id=baseline_id,
        )  # fmt: skip
    current = state.baselines[baseline_id].confirmed
    assert current is not None
    rel = confine_path(quest.root, cmd.baseline_path, "baseline_path") if cmd.baseline_path is not None else current.baseline_path
    if rel != current.baseline_path and not cmd.allow_path_change:
        raise Conflict(
            f"baseline_path {rel!r} differs from the confirmed {current.baseline_path!r}: "
            "pass allow_path_change=true if it is the same comparator",
            code="baseline_path_changed", baseline_path=current.baseline_path,
        )  # fmt: skip
    variant_id = optional_id(cmd.variant_id, "variant_id") or current.variant_id
    if cmd.metric_contract is not None:
        contract_in = cmd.metric_contract
    else:
        contract_in = contract_input(current.contract, normalise_directions(cmd.metric_directions))
    resolved = _resolve(
        quest, baseline_id=baseline_id, variant_id=variant_id, rel=rel, published={}, contract=contract_in,
        metrics=cmd.metrics_summary if cmd.metrics_summary is not None else dict(current.metrics_summary),
        primary=cmd.primary_metric if cmd.primary_metric is not None else current.primary_metric,
        directions=cmd.metric_directions, summary=cmd.summary if cmd.summary is not None else current.summary,
    )  # fmt: skip
    overwrite = _judge_overwrite(current, resolved, rel, variant_id, allow_breaking=cmd.allow_protocol_breaking_change)
    overwrite.update(
        change_summary=change, overwrite_scope=check_text(cmd.overwrite_scope, "overwrite_scope", max_chars=100),
        supplementary_baselines=check_objects(cmd.supplementary_baselines, "supplementary_baselines"),
    )  # fmt: skip
    contract = {**resolved.contract, "overwrite": overwrite}
    comment = comment_text(cmd.comment)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if state.confirmed_baseline != baseline_id or state.baselines[baseline_id].confirmed != current:
            raise Conflict(
                "the confirmed baseline changed meanwhile: read it again and retry", code="baseline_mismatch", baseline_id=baseline_id
            )
        check_materialised(quest.root, [resolved.contract_path], field="baseline_path")
        event = BaselineConfirmed(
            baseline_id=baseline_id, baseline_path=rel, contract_path=resolved.contract_path, contract=contract,
            metrics_summary=resolved.metrics, primary_metric=resolved.primary,
            metric_directions=resolved.directions, summary=resolved.summary, variant_id=variant_id,
            comment=comment, baseline_kind=current.baseline_kind, overwrite=overwrite,
        )  # fmt: skip
        stored = txn.append(event)
    result = _result(quest, event, stored.seq)
    result.compatibility_verdict = overwrite["compatibility_verdict"]
    return result


# -- private helpers ----------------------------------------------------------------------

# The keys of an overwrite's record (BaselineConfirmed.overwrite, and the contract's
# "overwrite"), in the order they are stored.
_OVERWRITE_KEYS = (
    "change_summary", "overwrite_scope", "compatibility_verdict", "risk_level", "added_metric_ids", "removed_metric_ids",
    "direction_changed_metric_ids", "path_changed", "variant_changed", "protocol_breaking_reasons", "superseded_seq",
    "superseded_contract_path", "supplementary_baselines",
)  # fmt: skip


class _Resolution(msgspec.Struct, kw_only=True, frozen=True):
    """What a confirmation records, once every value is settled."""

    contract: dict[str, Any]  # the normalised contract (its primary_metric_id dropped)
    contract_path: str
    metrics: dict[str, float]
    primary: str
    directions: dict[str, str]
    summary: str


def _resolve(
    quest: Quest, *, baseline_id: str, variant_id: str | None, rel: str, published: dict[str, Any],
    contract: Any, metrics: Any, primary: Any, directions: Any, summary: Any,
) -> _Resolution:  # fmt: skip
    """The confirmation's contract, numbers, primary metric, directions and summary:
    what the caller gave, else what the baseline was published with. Conflicting values
    are refused, never silently preferred; explicit ``metric_directions`` are the one
    exception: they set the contract's directions (DeepScientist applies them so)."""
    directions = normalise_directions(directions)
    primary_id, primary_value, primary_direction = primary_metric_ref(primary)
    if primary_id is None:
        primary_id, primary_value, primary_direction = primary_metric_ref(published.get("primary_metric"))
    if contract is None:
        contract = published.get("metric_contract")
        if contract is None:
            raise Invalid(
                f"no metric_contract given and baseline {baseline_id!r} was not published with one",
                code="missing_fields", missing=["metric_contract"],
            )  # fmt: skip
    if not isinstance(contract, dict):
        raise Invalid("metric_contract must be an object with 'metrics'", code="invalid_metric_contract")
    if metrics is None:
        metrics = _published_metrics(published, variant_id)
    numbers = check_metrics(metrics, allow_empty=True) if metrics is not None else {}
    contract_primary = contract.get("primary_metric_id")
    if primary_id is None:
        primary_id = contract_primary if isinstance(contract_primary, str) else (next(iter(numbers)) if len(numbers) == 1 else None)
    elif isinstance(contract_primary, str) and contract_primary != primary_id:
        raise Invalid(
            f"primary_metric {primary_id!r} and the contract's primary_metric_id {contract_primary!r} differ",
            code="primary_metric_mismatch",
        )  # fmt: skip
    if primary_id is not None and primary_value is not None:
        if primary_id not in numbers:
            numbers[primary_id] = primary_value
        elif abs(numbers[primary_id] - primary_value) > 1e-12:
            raise Invalid(
                f"primary_metric.value {primary_value} differs from metrics_summary[{primary_id!r}] = {numbers[primary_id]}",
                code="metric_value_mismatch",
            )  # fmt: skip
    implied: dict[str, str] = {}
    if primary_id is not None and primary_direction is not None:
        merge_directions(directions, {primary_id: primary_direction})  # the caller's two directions may not disagree
        implied = {primary_id: primary_direction}
    if not numbers:
        raise Invalid(
            "metrics_summary must be a non-empty flat object of metric id -> number",
            code="invalid_metrics_summary", field="metrics_summary",
        )  # fmt: skip
    if primary_id is None:
        raise Invalid("primary_metric is required: name one metric of metrics_summary", code="missing_fields", missing=["primary_metric"])
    normalised = normalise_contract(
        contract, numbers, primary_id, implied, baseline_id=baseline_id, variant_id=variant_id, overrides=directions
    )
    normalised.pop("primary_metric_id", None)
    contract_path = "json/metric_contract.json" if rel == "." else f"{rel}/json/metric_contract.json"
    check_materialised(quest.root, [contract_path], field="baseline_path")
    _check_writable_dirs(quest, contract_path)
    text = summary if summary is not None else published.get("summary")
    return _Resolution(
        contract=normalised, contract_path=contract_path, metrics=numbers, primary=primary_id,
        directions={m: e["direction"] for m, e in normalised["metrics"].items()},
        summary=check_text(text if isinstance(text, str) else None, "summary", required=False),
    )  # fmt: skip


def _judge_overwrite(
    current: BaselineConfirmed, resolved: _Resolution, rel: str, variant_id: str | None, *, allow_breaking: bool
) -> dict[str, Any]:
    """What an overwrite changes against ``current`` and how risky that is for the runs
    compared with it; refuses (``protocol_breaking_change``) what breaks comparability
    unless ``allow_breaking``. The caller adds the keys the call itself gives."""
    old, new = current.contract["metrics"], resolved.contract["metrics"]
    added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
    turned = sorted(m for m in set(old) & set(new) if old[m]["direction"] != new[m]["direction"])
    reasons = []
    if removed:
        reasons.append("required metric coverage would shrink")
    if turned:
        reasons.append("metric directions changed")
    if resolved.primary != current.primary_metric:
        reasons.append("primary metric changed")
    if resolved.contract.get("evaluation_protocol") != current.contract.get("evaluation_protocol"):
        reasons.append("evaluation protocol changed")
    if reasons and not allow_breaking:
        raise Conflict(
            "this overwrite would break comparability with recorded runs: " + "; ".join(reasons)
            + ". Confirm a new baseline id or variant instead, or pass allow_protocol_breaking_change=true",
            code="protocol_breaking_change", reasons=reasons, removed_metric_ids=removed, direction_changed_metric_ids=turned,
        )  # fmt: skip
    path_changed, variant_changed = rel != current.baseline_path, variant_id != current.variant_id
    if reasons:
        verdict, risk = "protocol_breaking_change_forced", "high"
    elif added and not variant_changed and not path_changed:
        verdict, risk = "metrics_only_safe", "low"
    elif variant_changed and not path_changed:
        verdict, risk = "variant_refresh_safe", "medium"
    elif path_changed:
        verdict, risk = "path_changed_but_compatible", "medium"
    else:
        verdict, risk = "same_comparator_refresh_safe", "low"
    judged = {
        "compatibility_verdict": verdict, "risk_level": risk, "added_metric_ids": added, "removed_metric_ids": removed,
        "direction_changed_metric_ids": turned, "path_changed": path_changed, "variant_changed": variant_changed,
        "protocol_breaking_reasons": reasons, "superseded_seq": current.seq, "superseded_contract_path": current.contract_path,
    }  # fmt: skip
    return {key: judged.get(key) for key in _OVERWRITE_KEYS}


def _published_metrics(published: dict[str, Any], variant_id: str | None) -> Any:
    for variant in published.get("variants") or published.get("baseline_variants") or []:
        if isinstance(variant, dict) and variant.get("variant_id") == variant_id and variant.get("metrics_summary"):
            return variant["metrics_summary"]
    return published.get("metrics_summary")


def _check_writable_dirs(quest: Quest, rel_file: str) -> None:
    # The contract is materialised on every replay: a file where a directory must be
    # (or a directory where the file must be) would break that, so refuse it up front.
    parts = rel_file.split("/")
    for i in range(1, len(parts)):
        p = quest.root.joinpath(*parts[:i])
        if p.exists() and not p.is_dir():
            raise Invalid(f"{'/'.join(parts[:i])} is a file, not a directory", code="invalid_field", field="baseline_path")
    if quest.root.joinpath(*parts).is_dir():
        raise Invalid(f"{rel_file} is a directory", code="invalid_field", field="baseline_path")


def _result(quest: Quest, event: BaselineConfirmed, seq: int) -> ConfirmBaselineResult:
    """The answer to a confirmation, from the event that records it."""
    contract_json = str(quest.root / event.contract_path)
    ref = {
        "baseline_id": event.baseline_id, "variant_id": event.variant_id, "baseline_path": str(quest.root / event.baseline_path),
        "baseline_root_rel_path": event.baseline_path, "metric_contract_json_rel_path": event.contract_path,
        "metric_contract_json_path": contract_json, "primary_metric": event.primary_metric,
        "confirmed_seq": seq, "overwrite": event.overwrite,
    }  # fmt: skip
    overrides = {
        metric_id: {"contract": entry["contract_direction"], "used": entry["direction"]}
        for metric_id, entry in event.contract.get("metrics", {}).items()
        if isinstance(entry, dict) and "contract_direction" in entry
    }
    said = "; ".join(f"{m}: {o['used']} (the contract entry said {o['contract']})" for m, o in overrides.items())
    return ConfirmBaselineResult(
        direction_overrides=overrides,
        message=f"metric_directions overrode the contract's direction for {said}" if overrides else "",
        baseline_id=event.baseline_id, variant_id=event.variant_id, contract_path=event.contract_path,
        metric_ids=event.contract["metric_ids"], primary_metric=event.primary_metric,
        metric_directions=event.metric_directions, seq=seq, baseline_gate="confirmed", confirmed_baseline_ref=ref,
        metric_contract_json_path=contract_json, metric_contract_json_rel_path=event.contract_path,
        overwrite=event.overwrite,
    )  # fmt: skip
