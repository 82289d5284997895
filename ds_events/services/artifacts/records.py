"""Quest state commands of the `artifact` namespace: records, baselines and metric
contracts, main experiments, analysis campaigns, summary refreshes.

Each function takes its command (:mod:`ds_events.services.artifacts.commands`, decoded at
the edge, so argument names and JSON types are already right) and returns its result
struct. Every command validates against the `artifacts` projection inside
``quest.transaction()`` (so ids are allocated and duplicates refused across processes),
checks that the files its event will materialise stay inside the quest, then appends one
event. An analysis campaign creates its branches and worktrees before that, outside the
lock, and undoes them if its event does not reach the log
(:func:`ds_events.services.artifacts.checkpoints.append_recording`). Error codes, besides those of
:mod:`ds_events.artifacts.validate` and :mod:`ds_events.services.artifacts.checkpoints`:
``artifact_exists``, ``baseline_exists``, ``unknown_baseline``, ``unknown_variant``,
``baseline_not_confirmed``, ``no_confirmed_baseline``, ``run_exists``, ``unknown_run``,
``missing_metric_ids``, ``metric_direction_mismatch``, ``evaluation_protocol_mismatch``,
``invalid_slices``, ``duplicate_slice_id``, ``unknown_campaign``, ``unknown_slice``,
``slice_already_recorded``, ``invalid_slice_status``, ``primary_metric_mismatch``,
``baseline_already_confirmed``, ``baseline_mismatch``, ``baseline_path_changed``,
``protocol_breaking_change``, ``variant_mismatch``.

The baseline gate: ``record_main_experiment`` needs a confirmed baseline, or a gate
waived with ``waive_baseline`` (the run is then recorded without a comparison).
Published baselines also enter the home's registry (its own log under
``DS_HOME/baselines``, see :mod:`projections.baseline_registry`), where every quest of
the home can attach them.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.validate import (
    check_evaluation_summary,
    check_id,
    check_materialised,
    check_metrics,
    check_record,
    check_text,
    check_text_list,
    compare_to_contract,
    confine_path,
    merge_metrics,
    metric_rows,
    normalise_contract,
    normalise_directions,
    normalise_protocol,
    optional_id,
    primary_metric_ref,
)
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    BaselineWaived,
    BranchPrepared,
    MainExperimentRecorded,
    RegistryBaselinePublished,
    SummaryRefreshed,
)
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.home import Home, Quest
from ds_events.store import EventStore, StoreTransaction
from ds_events.stores import REGISTRY_LOG
from ds_events.views import Views
from projections import baseline_registry
from projections import results as results_view
from projections.artifacts import record_path, run_page_path

from ds_events.services.quest.commands import ANCHORS

from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts.commands import (
    AttachBaseline,
    AttachBaselineResult,
    CampaignResult,
    CampaignSlice,
    ConfirmBaseline,
    ConfirmBaselineResult,
    CreateAnalysisCampaign,
    FrontierResult,
    GetMethodScoreboard,
    GetOptimizationFrontier,
    MainExperimentResult,
    OverwriteBaseline,
    PublishBaseline,
    PublishBaselineResult,
    Record,
    RecordAnalysisSlice,
    RecordMainExperiment,
    RecordResult,
    RefreshSummary,
    ScoreboardResult,
    SliceResult,
    SummaryResult,
    WaiveBaseline,
    WaiveBaselineResult,
)

__all__ = [
    "record",
    "publish_baseline",
    "registry_state",
    "unregistered_publications",
    "complete_registry",
    "attach_baseline",
    "confirm_baseline",
    "record_main_experiment",
    "create_analysis_campaign",
    "record_analysis_slice",
    "refresh_summary",
    "waive_baseline",
    "overwrite_baseline",
    "method_scoreboard",
    "optimization_frontier",
    "registry_entry",
    "open_registry",
    "SLICE_STATUSES",
]

SLICE_STATUSES = ("completed", "failed", "abandoned")
_MAX_SLICES = 32
_MAX_CAMPAIGN_PROBES = 1000


def record(quest: Quest, cmd: Record) -> RecordResult:
    """Record an artifact of ``payload['kind']``; returns its id and file path."""
    kind, artifact_id, clean = check_record(cmd.payload, quest.root)
    next_anchor = clean.get("next_anchor") if kind == "decision" else None
    if next_anchor is not None and next_anchor not in ANCHORS:
        raise Invalid(
            f"next_anchor {next_anchor!r} is not a stage: use one of {', '.join(ANCHORS)}",
            code="invalid_anchor", allowed=list(ANCHORS),
        )  # fmt: skip
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if artifact_id is None:
            n = state.counters.get(kind, 0) + 1
            while state.id_taken(f"{kind}-{n:04d}"):
                n += 1
            artifact_id = f"{kind}-{n:04d}"
        elif state.id_taken(artifact_id):
            raise Conflict(f"artifact id {artifact_id!r} is taken: omit artifact_id for a fresh one", code="artifact_exists", artifact_id=artifact_id)
        check_materialised(quest.root, [record_path(kind, artifact_id)])
        batch: list[Event] = [ArtifactRecorded(artifact_id=artifact_id, kind=kind, payload=clean, branch=state.active_branch)]
        previous = quest.state("status").anchor
        if next_anchor is not None and next_anchor != previous:
            # A decision that moves the quest to another stage (forward, or back: write ->
            # experiment, experiment -> idea) moves its anchor, with the decision's reason.
            reason = str(clean.get("reason") or clean.get("action") or "")[:2000]
            batch.append(QuestAnchorChanged(anchor=next_anchor, previous=previous, reason=f"{artifact_id}: {reason}"))
        stored = txn.append(batch)[0]
    return RecordResult(
        artifact_id=artifact_id, kind=kind, path=record_path(kind, artifact_id), branch=state.active_branch, seq=stored.seq
    )


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
            ("metric_contract", _contract_input(confirmed.contract, {})), ("metrics_summary", dict(confirmed.metrics_summary)),
            ("primary_metric", confirmed.primary_metric), ("summary", confirmed.summary or None),
            ("baseline_path", confirmed.baseline_path), ("default_variant_id", confirmed.variant_id if confirmed.variant_id in variants else None),
        ):  # fmt: skip
            if value is not None and key not in clean:
                clean[key] = value
    unregistered = _unregistered_publication(quest, state, baseline_id)
    if unregistered is not None:
        return _complete_publication(quest, unregistered, clean, variants)
    _check_publishable(state, baseline_id)
    check_materialised(quest.root, [record_path("baseline", baseline_id)])
    # The quest first, then the registry, whose event takes the quest event's id: a
    # publisher that dies between the two leaves a quest publication the registry lacks,
    # and a retry completes it (the same id makes the registry append idempotent).
    with quest.transaction() as txn:
        _check_publishable(quest.state("artifacts"), baseline_id)
        stored = txn.append(BaselinePublished(baseline_id=baseline_id, payload=clean, variant_ids=variants))[0]
    entry = _publish_to_registry(quest, stored)  # type: ignore[arg-type]
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
            _check_variant(baseline, variant_id)
            event = BaselineAttached(baseline_id=baseline_id, variant_id=variant_id)
            source = baseline.source_quest or quest.id
        elif entry is not None:
            if variant_id is not None and variant_id not in entry["variant_ids"]:
                raise NotFound(
                    f"baseline {baseline_id!r} has no variant {variant_id!r}", code="unknown_variant", variant_ids=entry["variant_ids"]
                )
            variant_id = variant_id or entry["payload"].get("default_variant_id")
            check_materialised(quest.root, [record_path("baseline", baseline_id)])
            event = BaselineAttached(
                baseline_id=baseline_id, variant_id=variant_id, source_quest=entry["source_quest"],
                entry={"payload": entry["payload"], "variant_ids": entry["variant_ids"], "registry_seq": entry["seq"]},
            )  # fmt: skip
            source = entry["source_quest"]
        else:
            raise _unknown_baseline(state, baseline_id, home=quest.home)
        stored = txn.append(event)[0]
    confirmed = baseline is not None and baseline.confirmed is not None
    return AttachBaselineResult(
        baseline_id=baseline_id, variant_id=variant_id, confirmed=confirmed, seq=stored.seq,
        attachment={"source_baseline_id": baseline_id, "source_variant_id": variant_id, "source_quest": source},
    )  # fmt: skip


def confirm_baseline(quest: Quest, cmd: ConfirmBaseline) -> ConfirmBaselineResult:
    """Confirm a baseline's numbers and its canonical metric contract, which is
    materialised to ``<baseline_path>/json/metric_contract.json``. What the call leaves
    out (contract, numbers, primary metric, summary, variant) comes from the baseline as
    published in this quest or in the home's registry."""
    rel = confine_path(quest.root, cmd.baseline_path, "baseline_path")
    state = quest.state("artifacts")
    attached = state.attached or {}
    baseline_id = optional_id(cmd.baseline_id, "baseline_id") or attached.get("baseline_id")
    if baseline_id is None:
        baseline_id = check_id(rel.rsplit("/", 1)[-1], "baseline_id")
    variant_id = optional_id(cmd.variant_id, "variant_id")
    if variant_id is None and attached.get("baseline_id") == baseline_id:
        variant_id = attached.get("variant_id")
    local = state.baselines.get(baseline_id)
    published: dict[str, Any] = dict(local.payload) if local is not None else {}
    if not published:  # neither published here nor attached from the registry: the registry may know it
        entry = registry_entry(quest.home, baseline_id)
        published = dict(entry["payload"]) if entry is not None else {}
        if entry is not None and variant_id is not None and entry["variant_ids"] and variant_id not in entry["variant_ids"]:
            raise NotFound(
                f"baseline {baseline_id!r} has no variant {variant_id!r}", code="unknown_variant", variant_ids=entry["variant_ids"]
            )
    variant_id = variant_id or published.get("default_variant_id")
    resolved = _resolve_confirmation(
        quest, baseline_id=baseline_id, variant_id=variant_id, rel=rel, published=published,
        contract=cmd.metric_contract, metrics=cmd.metrics_summary, primary=cmd.primary_metric,
        directions=cmd.metric_directions, summary=cmd.summary,
    )  # fmt: skip
    comment = _comment_text(cmd.comment)
    baseline_kind = check_text(cmd.baseline_kind, "baseline_kind", required=False, max_chars=100)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        baseline = state.baselines.get(baseline_id)
        if baseline is None and state.id_taken(baseline_id):
            raise Conflict(f"{baseline_id!r} names another artifact, not a baseline", code="artifact_exists", artifact_id=baseline_id)
        if baseline is not None and (baseline.published_seq is not None or baseline.source_quest is not None):
            _check_variant(baseline, variant_id)
        check_materialised(quest.root, [record_path("baseline", baseline_id)])
        check_materialised(quest.root, [resolved["contract_path"]], field="baseline_path")  # a link planted meanwhile
        event = BaselineConfirmed(
            baseline_id=baseline_id, baseline_path=rel, contract_path=resolved["contract_path"],
            contract=resolved["contract"], metrics_summary=resolved["metrics"], primary_metric=resolved["primary"],
            metric_directions=resolved["directions"], summary=resolved["summary"], variant_id=variant_id,
            comment=comment, baseline_kind=baseline_kind,
        )  # fmt: skip
        stored = txn.append([event, *_advance(quest, cmd.auto_advance, f"baseline {baseline_id} confirmed")])[0]
    return _confirm_result(quest, event, stored.seq)


def waive_baseline(quest: Quest, cmd: WaiveBaseline) -> WaiveBaselineResult:
    """Open the baseline gate without a baseline, for a written reason: main experiments
    are then recorded without a comparison. Refused once a baseline is confirmed."""
    reason = check_text(cmd.reason, "reason", max_chars=5000)
    comment = _comment_text(cmd.comment)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if state.baseline_gate == "confirmed":
            raise Conflict(
                f"baseline {state.confirmed_baseline!r} is confirmed: there is no gate to waive (overwrite_baseline refreshes it)",
                code="baseline_already_confirmed", baseline_id=state.confirmed_baseline,
            )  # fmt: skip
        batch: list[Event] = [BaselineWaived(reason=reason, comment=comment)]
        batch += _advance(quest, cmd.auto_advance, f"baseline gate waived: {reason}")
        stored = txn.append(batch)[0]
    return WaiveBaselineResult(baseline_gate="waived", reason=reason, anchor=quest.state("status").anchor, seq=stored.seq)


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
            f"baseline_path {rel!r} differs from the confirmed {current.baseline_path!r}: pass allow_path_change=true if it is the same comparator",
            code="baseline_path_changed", baseline_path=current.baseline_path,
        )  # fmt: skip
    variant_id = optional_id(cmd.variant_id, "variant_id") or current.variant_id
    contract_in = cmd.metric_contract if cmd.metric_contract is not None else _contract_input(current.contract, normalise_directions(cmd.metric_directions))
    primary_in = cmd.primary_metric if cmd.primary_metric is not None else current.primary_metric
    metrics_in = cmd.metrics_summary if cmd.metrics_summary is not None else dict(current.metrics_summary)
    resolved = _resolve_confirmation(
        quest, baseline_id=baseline_id, variant_id=variant_id, rel=rel, published={}, contract=contract_in,
        metrics=metrics_in, primary=primary_in, directions=cmd.metric_directions,
        summary=cmd.summary if cmd.summary is not None else current.summary,
    )  # fmt: skip
    old, new = current.contract["metrics"], resolved["contract"]["metrics"]
    added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
    turned = sorted(m for m in set(old) & set(new) if old[m]["direction"] != new[m]["direction"])
    reasons = []
    if removed:
        reasons.append("required metric coverage would shrink")
    if turned:
        reasons.append("metric directions changed")
    if resolved["primary"] != current.primary_metric:
        reasons.append("primary metric changed")
    if resolved["contract"].get("evaluation_protocol") != current.contract.get("evaluation_protocol"):
        reasons.append("evaluation protocol changed")
    if reasons and not cmd.allow_protocol_breaking_change:
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
    overwrite = {
        "change_summary": change, "overwrite_scope": check_text(cmd.overwrite_scope, "overwrite_scope", max_chars=100),
        "compatibility_verdict": verdict, "risk_level": risk, "added_metric_ids": added, "removed_metric_ids": removed,
        "direction_changed_metric_ids": turned, "path_changed": path_changed, "variant_changed": variant_changed,
        "protocol_breaking_reasons": reasons, "superseded_seq": current.seq,
        "superseded_contract_path": current.contract_path,
        "supplementary_baselines": _objects(cmd.supplementary_baselines, "supplementary_baselines"),
    }  # fmt: skip
    contract = {**resolved["contract"], "overwrite": overwrite}
    comment = _comment_text(cmd.comment)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if state.confirmed_baseline != baseline_id or state.baselines[baseline_id].confirmed != current:
            raise Conflict("the confirmed baseline changed meanwhile: read it again and retry", code="baseline_mismatch", baseline_id=baseline_id)
        check_materialised(quest.root, [resolved["contract_path"]], field="baseline_path")
        event = BaselineConfirmed(
            baseline_id=baseline_id, baseline_path=rel, contract_path=resolved["contract_path"], contract=contract,
            metrics_summary=resolved["metrics"], primary_metric=resolved["primary"],
            metric_directions=resolved["directions"], summary=resolved["summary"], variant_id=variant_id,
            comment=comment, baseline_kind=current.baseline_kind, overwrite=overwrite,
        )  # fmt: skip
        stored = txn.append(event)[0]
    result = _confirm_result(quest, event, stored.seq)
    result.compatibility_verdict = verdict
    return result


def record_main_experiment(quest: Quest, cmd: RecordMainExperiment) -> MainExperimentResult:
    """Record a main experiment on its run branch, with its narrative and a progress
    verdict. Against a confirmed baseline its metrics must cover every metric of the
    contract (extras allowed), with the same directions and protocol; with the gate
    waived it is recorded without a comparison. Without a prepared branch the run gets
    ``run/<run_id>``, made at the active branch's head."""
    run_id = check_id(cmd.run_id, "run_id")
    title = check_text(cmd.title or run_id, "title", max_chars=500)
    rows, from_rows, row_directions = metric_rows(cmd.metric_rows)
    given = check_metrics(cmd.metrics_summary, allow_empty=True) if cmd.metrics_summary is not None else {}
    metrics = merge_metrics(given, from_rows)
    if not metrics:
        raise Invalid("a main experiment needs metrics: metrics_summary or metric_rows", code="missing_fields", missing=["metrics_summary"])
    directions = _merge_directions(normalise_directions(cmd.metric_directions), row_directions)
    idea_id = optional_id(cmd.idea_id, "idea_id")
    summary_text = check_text(cmd.summary, "summary", required=False)
    baseline_id = optional_id(cmd.baseline_id, "baseline_id")
    variant_id = optional_id(cmd.baseline_variant_id, "baseline_variant_id")
    protocol = normalise_protocol(cmd.evaluation_protocol)
    narrative = {f: check_text(getattr(cmd, f), f, required=False) for f in ("hypothesis", "setup", "execution", "results", "conclusion")}
    evaluation = check_evaluation_summary(cmd.evaluation_summary)
    evidence = check_text_list(cmd.evidence_paths, "evidence_paths")
    report = _report(
        status=check_text(cmd.status, "status", max_chars=40), dataset_scope=check_text(cmd.dataset_scope, "dataset_scope", max_chars=40),
        changed_files=check_text_list(cmd.changed_files, "changed_files"), config_paths=check_text_list(cmd.config_paths, "config_paths"),
        notes=check_text_list(cmd.notes, "notes"), baseline_variant_id=variant_id, metric_contract=cmd.metric_contract,
        comment=cmd.comment,
    )  # fmt: skip
    verdict_given = check_text(cmd.verdict, "verdict", required=False, max_chars=100)
    check_materialised(quest.root, [record_path("run", run_id), run_page_path(run_id)])
    repo = quest.repo()

    def decide(state: Any) -> tuple[str, git_ops.BranchSpec | None]:
        # The run's branch: the one named, the one prepared for this run, the active run
        # branch, else run/<run_id> to be made (DeepScientist records a main run on its
        # own run branch).
        if cmd.branch is not None:
            return cmd.branch, None
        prepared = next((b.branch for b in state.branches.values() if b.run == run_id), None)
        if prepared is not None:
            return prepared, None
        active = state.branches.get(state.active_branch)
        if active is not None and active.kind == "run":
            return active.branch, None
        name = git_ops.validate_branch_name(f"run/{run_id}", "run")
        return name, git_ops.BranchSpec(branch=name, kind="run", worktree=None)

    def judge(state: Any) -> tuple[Any, dict[str, dict[str, Any]], str, str, float | None, list[str], Any]:
        # The baseline compared with and what the comparison says; refusals first.
        baseline = _gate(state, baseline_id, run_id)
        if baseline is None:  # the gate was waived: nothing to compare with
            primary = next(iter(metrics))
            return None, {}, primary, directions.get(primary, "higher"), None, sorted(metrics), protocol
        confirmed = baseline.confirmed
        if variant_id is not None and variant_id != confirmed.variant_id:
            raise Conflict(
                f"baseline_variant_id {variant_id!r} is not the confirmed variant {confirmed.variant_id!r}",
                code="variant_mismatch", variant_id=confirmed.variant_id,
            )  # fmt: skip
        problems, comparisons = compare_to_contract(confirmed.contract, metrics, directions, protocol)
        if problems:
            raise Invalid(_problem_message(problems), code=_problem_code(problems), baseline_id=baseline.baseline_id, **problems)
        primary = confirmed.primary_metric
        extra = sorted(m for m in metrics if m not in confirmed.contract["metrics"])
        used = protocol or confirmed.contract.get("evaluation_protocol")
        return baseline, comparisons, primary, comparisons[primary]["direction"], comparisons[primary]["baseline"], extra, used

    state = quest.state("artifacts")
    judge(state)  # refuse before a branch is made
    if state.id_taken(run_id):
        raise Conflict(f"run {run_id!r} is already recorded", code="run_exists", run_id=run_id)
    run_branch, spec = decide(state)
    with git_ops.Rollback() as undo:
        made: Event | None = None
        if spec is not None:
            start_sha, start_label = git_ops.resolve_start(repo, None, state.active_branch)
            git_ops.check_free(quest.root, repo, [spec])
            git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
            made = BranchPrepared(
                branch=spec.branch, branch_kind="run", start_sha=start_sha, start_point=start_label, worktree=None,
                run=run_id, idea_id=idea_id or _idea_of(state, state.active_branch), activate=False,
            )  # fmt: skip
        with quest.transaction() as txn:
            state = quest.state("artifacts")
            baseline, comparisons, primary_metric, direction, baseline_value, extra, used_protocol = judge(state)
            if decide(state)[0] != run_branch and spec is None:
                raise Conflict("the run's branch changed meanwhile: record it again", code="branch_moved", branch=run_branch)
            if state.id_taken(run_id):
                raise Conflict(f"run {run_id!r} is already recorded", code="run_exists", run_id=run_id)
            head = git_ops.branch_head(repo, run_branch)
            if head is None:
                raise NotFound(f"branch {run_branch!r} does not exist in the quest repository", code="unknown_branch", branch=run_branch)
            progress = results_view.progress_eval(
                state, primary_metric=primary_metric, direction=direction, value=metrics[primary_metric], baseline_value=baseline_value
            )
            verdict = verdict_given or (
                "supported" if progress["breakthrough"] else "inconclusive" if progress["beats_baseline"] is False else "recorded"
            )
            info = state.branches.get(run_branch)
            event = MainExperimentRecorded(
                run=run_id, title=title, baseline_id=baseline.baseline_id if baseline is not None else "",
                metrics_summary=metrics, comparisons=comparisons, primary_metric=primary_metric, branch=run_branch,
                head_sha=head, idea_id=idea_id or (info.idea_id if info else None) or (made.idea_id if made else None),
                summary=summary_text, evaluation_protocol=used_protocol, details=cmd.details or {},
                evaluation_summary=evaluation, evidence_paths=evidence, metric_rows=rows, progress=progress,
                verdict=verdict, report=report, **narrative,
            )  # fmt: skip
            stored = txn.append([made, event] if made is not None else [event])[-1]
            undo.keep()
    primary = comparisons.get(primary_metric) or {
        "baseline": None, "value": metrics[primary_metric], "delta": None, "direction": direction, "better": None
    }  # fmt: skip
    return MainExperimentResult(
        run_id=run_id, baseline_id=event.baseline_id or None, branch=run_branch, head_sha=head,
        primary_metric=primary_metric, primary=primary, comparisons=comparisons, extra_metric_ids=extra,
        path=record_path("run", run_id), seq=stored.seq, run_md_path=str(quest.root / run_page_path(run_id)),
        result_json_path=str(quest.root / record_path("run", run_id)), metrics_summary=metrics, progress_eval=progress,
        evaluation_summary=evaluation, verdict=verdict,
    )  # fmt: skip


def create_analysis_campaign(
    quest: Quest, cmd: CreateAnalysisCampaign, *, create_worktrees: bool = True
) -> CampaignResult:
    """Create a campaign whose slices are child branches (with worktrees) of the result
    node: ``parent_run_id``'s branch head, else the latest main experiment's, else the
    active branch. Branches are named ``analysis/<idea_id>/<campaign_id>-<slice_id>``.

    The branches and worktrees (up to 32) are made outside the log's lock, under a
    campaign id reserved across processes (:func:`_reserve_campaign_id`), so campaigns
    created at once by several processes get distinct ids; the lock is held only to
    append. If the append fails, every branch and worktree made is removed.
    ``create_worktrees=False`` makes the branches only (tests and tools that need no
    checkout)."""
    title = check_text(cmd.campaign_title, "campaign_title", max_chars=500)
    goal = check_text(cmd.campaign_goal, "campaign_goal")
    parent_run_id = optional_id(cmd.parent_run_id, "parent_run_id")
    wanted = _parse_slices(cmd.slices)
    state = quest.state("artifacts")
    if parent_run_id is not None and parent_run_id not in state.runs:
        raise NotFound(f"no main experiment {parent_run_id!r}", code="unknown_run", run_id=parent_run_id)
    parent = state.runs.get(parent_run_id or state.latest_run or "")
    repo = quest.repo()
    parent_sha, parent_branch = git_ops.resolve_start(repo, None, parent.branch if parent else state.active_branch)
    idea = (parent.idea_id or parent.run) if parent else quest.id
    campaign_id = _reserve_campaign_id(quest, repo, parent_sha)
    try:
        specs = []
        for s in wanted:
            name = git_ops.validate_branch_name(f"analysis/{idea}/{campaign_id}-{s['slice_id']}", "analysis")
            worktree = git_ops.worktree_path(name) if create_worktrees else None
            specs.append(git_ops.BranchSpec(branch=name, kind="analysis", worktree=worktree))
            s.update(branch=name, worktree=worktree)
        check_materialised(quest.root, [_campaign_path(campaign_id)])
        git_ops.check_free(quest.root, repo, specs)
        event = AnalysisCampaignCreated(
            campaign_id=campaign_id,
            title=title,
            goal=goal,
            parent_run=parent.run if parent else None,
            parent_branch=parent_branch,
            parent_sha=parent_sha,
            slices=wanted,
        )

        def recheck(txn: StoreTransaction) -> Event:
            # The reservation keeps other campaigns off this id; a record given this
            # id explicitly (artifact_id="campaign-...") is the one thing that can take it.
            if quest.state("artifacts").id_taken(campaign_id):
                raise Conflict(f"{campaign_id!r} was taken meanwhile by another artifact: create the campaign again", code="artifact_exists", artifact_id=campaign_id)
            return event

        with git_ops.Rollback() as undo:
            git_ops.create_branches(quest.root, repo, specs, parent_sha, undo)
            stored = git.append_recording(quest, undo, recheck)
    finally:
        git_ops.release(repo, campaign_id)
    return CampaignResult(
        campaign_id=campaign_id,
        parent_run_id=parent.run if parent else None,
        parent_branch=parent_branch,
        parent_sha=parent_sha,
        slices=[
            CampaignSlice(**s, worktree_path=str(quest.root / s["worktree"]) if s["worktree"] else None) for s in wanted
        ],
        path=_campaign_path(campaign_id),
        seq=stored.seq,
    )


def record_analysis_slice(quest: Quest, cmd: RecordAnalysisSlice) -> SliceResult:
    """Record one slice's outcome (status, metrics or metric rows, narrative, evidence,
    evaluation) and its branch head; reports the slices left and the next one."""
    campaign_id = check_id(cmd.campaign_id, "campaign_id")
    slice_id = check_id(cmd.slice_id, "slice_id")
    status = cmd.status
    if status not in SLICE_STATUSES:
        raise Invalid(f"status {status!r}: use {', '.join(SLICE_STATUSES)}", code="invalid_slice_status", allowed=list(SLICE_STATUSES))
    rows, from_rows, _directions = metric_rows(cmd.metric_rows)
    metrics = merge_metrics(check_metrics(cmd.metrics_summary, allow_empty=True), from_rows)
    summary_text = check_text(cmd.summary, "summary", required=False)
    narrative = {f: check_text(getattr(cmd, f), f, required=False) for f in ("setup", "execution", "results")}
    evaluation = check_evaluation_summary(cmd.evaluation_summary)
    evidence = check_text_list(cmd.evidence_paths, "evidence_paths")
    scope = check_text(cmd.dataset_scope, "dataset_scope", max_chars=40)
    if scope == "subset" and not (cmd.subset_approval_ref or "").strip():
        raise Invalid("a subset slice needs subset_approval_ref (the approval to run on a subset)", code="missing_fields", missing=["subset_approval_ref"])
    report = _report(
        deviations=check_text_list(cmd.deviations, "deviations"),
        **{f: check_text(getattr(cmd, f), f, required=False) for f in (
            "claim_impact", "reviewer_resolution", "manuscript_update_hint", "next_recommendation", "subset_approval_ref")},
        dataset_scope=scope if scope != "full" else None,
        comparison_baselines=_objects(cmd.comparison_baselines, "comparison_baselines"),
        comment=cmd.comment,
    )  # fmt: skip
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        campaign = state.campaigns.get(campaign_id)
        if campaign is None:
            raise NotFound(f"no analysis campaign {campaign_id!r}", code="unknown_campaign", campaign_id=campaign_id)
        found = campaign.slice(slice_id)
        if found is None:
            raise NotFound(
                f"campaign {campaign_id!r} has no slice {slice_id!r}",
                code="unknown_slice",
                slice_ids=[s.slice_id for s in campaign.slices],
            )
        if found.status != "pending":
            raise Conflict(f"slice {slice_id!r} is already recorded as {found.status}", code="slice_already_recorded")
        check_materialised(quest.root, [_campaign_path(campaign_id)])
        head = git_ops.branch_head(quest.repo(), found.branch)
        event = AnalysisSliceRecorded(
            campaign_id=campaign_id, slice_id=slice_id, status=status, metrics_summary=metrics, summary=summary_text,
            head_sha=head, details=cmd.details or {}, evaluation_summary=evaluation, evidence_paths=evidence,
            metric_rows=rows, report=report, **narrative,
        )  # fmt: skip
        stored = txn.append(event)[0]
    pending = [s for s in campaign.slices if s.status == "pending" and s.slice_id != slice_id]
    after = pending[0] if pending else None
    return SliceResult(
        campaign_id=campaign_id, slice_id=slice_id, status=status, branch=found.branch, head_sha=head,
        remaining_slice_ids=[s.slice_id for s in pending], campaign_complete=not pending, seq=stored.seq,
        completed=not pending, metrics_summary=metrics, evaluation_summary=evaluation, path=_campaign_path(campaign_id),
        next_slice=None if after is None else {
            "slice_id": after.slice_id, "title": after.title, "goal": after.goal, "branch": after.branch,
            "worktree": after.worktree, "worktree_path": str(quest.root / after.worktree) if after.worktree else None,
        },
    )  # fmt: skip


def method_scoreboard(quest: Quest, cmd: GetMethodScoreboard) -> ScoreboardResult:
    """The quest's research lines with their runs, best results and the incumbent line."""
    return ScoreboardResult(scoreboard=results_view.method_scoreboard(quest.state("artifacts")))


def optimization_frontier(quest: Quest, cmd: GetOptimizationFrontier) -> FrontierResult:
    """Best run and lines, waiting idea briefs and candidates, stagnant lines, a mode."""
    return FrontierResult(optimization_frontier=results_view.optimization_frontier(quest.state("artifacts")))


# -- the home's baseline registry ---------------------------------------------------------


def open_registry(home: Home, actor: str = "cli") -> tuple[EventStore, Views]:
    """The registry's log and view (the caller closes the log)."""
    log = home.open_log(REGISTRY_LOG, actor=actor)
    try:
        views = Views(log, home.log_root(REGISTRY_LOG), projections=[baseline_registry.PROJECTION]).load()
    except BaseException:
        log.close()
        raise
    return log, views


def registry_state(home: Home) -> baseline_registry.State | None:
    """The home's baseline registry as folded now, or None when nothing was ever
    published (a read: no registry log is created)."""
    if not home.has_log(REGISTRY_LOG):
        return None
    log, views = open_registry(home)
    try:
        return views.state(baseline_registry.PROJECTION.name)
    finally:
        log.close()


def registry_entry(home: Home, baseline_id: str) -> dict[str, Any] | None:
    """The registry's entry for ``baseline_id`` as plain JSON, or None."""
    state = registry_state(home)
    entry = None if state is None else state.entries.get(baseline_id)
    return None if entry is None else msgspec.to_builtins(entry)


def _publish_to_registry(quest: Quest, published: BaselinePublished) -> dict[str, Any]:
    """The registry half of ``published`` (a quest event), under the quest event's id:
    appending it again (a retry, two retries racing) stores nothing new."""
    log, views = open_registry(quest.home, quest.log.actor)
    try:
        event = RegistryBaselinePublished(
            baseline_id=published.baseline_id, payload=dict(published.payload), variant_ids=list(published.variant_ids),
            source_quest=quest.id, id=published.id,
        )  # fmt: skip
        stored = log.append([event])
        views.materialise(stored)
        entry = views.state(baseline_registry.PROJECTION.name).entries[published.baseline_id]
        return {**msgspec.to_builtins(entry), "path": str(views.root / baseline_registry.entry_path(published.baseline_id))}
    finally:
        log.close()


def unregistered_publications(home: Home) -> list[dict[str, Any]]:
    """Every quest publication (``artifact.baseline_published``) the home's registry
    lacks — a publisher died between its quest append and its registry append — as
    ``{quest_id, baseline_id, seq, event_id}``. Reads the logs only."""
    registry = registry_state(home)
    held = registry.sources if registry is not None else {}
    missing: list[dict[str, Any]] = []
    for quest_id in home.quest_ids():
        log = home.open_log(quest_id, read_only=True)
        try:
            latest: dict[str, Event] = {}  # one publication per baseline: the last one counts
            for event in log.read(types=[BaselinePublished.TAG]):
                latest[event.baseline_id] = event  # type: ignore[attr-defined]
        finally:
            log.close()
        for baseline_id, event in sorted(latest.items()):
            if held.get(baseline_registry.source_key(quest_id, baseline_id)) != event.id:
                missing.append({"quest_id": quest_id, "baseline_id": baseline_id, "seq": event.seq, "event_id": event.id})
    return missing


def complete_registry(home: Home, actor: str = "cli") -> list[dict[str, Any]]:
    """Append to the registry every quest publication it lacks (what a retry of each
    ``publish_baseline`` would do; idempotent by the quest event's id). Returns them."""
    done = []
    for item in unregistered_publications(home):
        with home.open_quest(item["quest_id"], actor=actor) as quest:
            event = quest.log.get(item["seq"])
            assert isinstance(event, BaselinePublished)
            _publish_to_registry(quest, event)
        done.append(item)
    return done


def _unregistered_publication(quest: Quest, state: Any, baseline_id: str) -> BaselinePublished | None:
    """This quest's publication of ``baseline_id`` when the registry does not hold it (its
    publisher died between the two appends), else None."""
    baseline = state.baselines.get(baseline_id)
    if baseline is None or baseline.published_seq is None:
        return None
    event = quest.log.get(baseline.published_seq)
    if not isinstance(event, BaselinePublished):
        return None
    registry = registry_state(quest.home)
    held = registry is not None and baseline_registry.source_key(quest.id, baseline_id) in registry.sources
    return None if held else event


def _complete_publication(
    quest: Quest, published: BaselinePublished, payload: dict[str, Any], variants: list[str]
) -> PublishBaselineResult:
    """Finish a publication its publisher left half done: the registry gets the quest's
    publication as it was made. A retry with the same payload is answered as the first
    call would have been; another payload is refused (the id is published here), after
    the registry was brought in line."""
    entry = _publish_to_registry(quest, published)
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


def refresh_summary(quest: Quest, cmd: RefreshSummary) -> SummaryResult:
    """Record a refresh and return ``SUMMARY.md`` as rendered from the log."""
    reason_text = check_text(cmd.reason, "reason", required=False, max_chars=2000)
    check_materialised(quest.root, ["SUMMARY.md"])
    stored = quest.emit(SummaryRefreshed(reason=reason_text))
    path = quest.root / "SUMMARY.md"
    return SummaryResult(path="SUMMARY.md", markdown=path.read_text(encoding="utf-8"), seq=stored.seq)


# -- helpers ------------------------------------------------------------------------------


def _campaign_path(campaign_id: str) -> str:
    return f"artifacts/campaigns/{campaign_id}.json"


def _reserve_campaign_id(quest: Quest, repo: Any, sha: str) -> str:
    """The next free ``campaign-NNN``, reserved in the repository until the caller
    releases it (:func:`ds_events.artifacts.git.reserve`).

    A process appends its campaign before it releases the id, so once we hold a
    reservation, catching up with the log shows whether that id was used meanwhile.
    """
    state = quest.state("artifacts")
    n = len(state.campaigns) + 1
    for _ in range(_MAX_CAMPAIGN_PROBES):
        campaign_id = f"campaign-{n:03d}"
        if not state.id_taken(campaign_id) and git_ops.reserve(repo, campaign_id, sha):
            state = quest.state("artifacts")
            if not state.id_taken(campaign_id):
                return campaign_id
            git_ops.release(repo, campaign_id)
        n += 1
    raise Conflict(
        f"no free campaign id after {_MAX_CAMPAIGN_PROBES} tries: remove stale refs/ds/reserved/campaign-* refs",
        code="campaign_ids_exhausted",
    )


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


def _variant_ids(variants: Any) -> list[str]:
    if variants is None:
        return []
    if not isinstance(variants, list):
        raise Invalid("variants must be a list of ids or of objects with variant_id", code="invalid_field", field="variants")
    ids = [check_id(v.get("variant_id") if isinstance(v, dict) else v, "variant_id") for v in variants]
    if len(set(ids)) != len(ids):
        raise Invalid("variant ids must be unique", code="invalid_field", field="variants")
    return ids


def _known_baseline(state: Any, baseline_id: str) -> Any:
    baseline = state.baselines.get(baseline_id)
    if baseline is None:
        raise _unknown_baseline(state, baseline_id)
    return baseline


def _check_publishable(state: Any, baseline_id: str) -> None:
    """An id is published once per quest; a baseline confirmed (or attached) here but
    not yet published may be published."""
    baseline = state.baselines.get(baseline_id)
    if baseline is not None and baseline.published_seq is None:
        return
    if state.id_taken(baseline_id):
        raise Conflict(f"baseline {baseline_id!r} already exists", code="baseline_exists", baseline_id=baseline_id)


def _unknown_baseline(state: Any, baseline_id: str, *, home: Home | None = None) -> NotFound:
    """The refusal for an id neither the quest nor (given ``home``) the registry knows."""
    known = set(state.baselines)
    registry = registry_state(home) if home is not None else None
    if registry is not None:
        known |= set(registry.entries)
    return NotFound(
        f"no baseline {baseline_id!r}: publish or confirm it first", code="unknown_baseline", known_baseline_ids=sorted(known)
    )


def _gate(state: Any, baseline_id: str | None, run_id: str) -> Any:
    """The confirmed baseline a run is compared with, None when the gate is waived and no
    baseline was confirmed (or named), else the refusal saying how to open the gate."""
    if baseline_id is None and state.confirmed_baseline is None and state.baseline_gate == "waived":
        return None
    try:
        return _baseline_for_run(state, baseline_id)
    except Conflict as exc:
        if exc.code == "no_confirmed_baseline":
            raise Conflict(
                f"the baseline gate is closed: confirm a baseline (confirm_baseline) or waive the gate (waive_baseline) "
                f"before recording {run_id!r}",
                code="no_confirmed_baseline",
            ) from None
        raise


def _idea_of(state: Any, branch: str) -> str | None:
    info = state.branches.get(branch)
    return info.idea_id if info is not None else None


def _merge_directions(given: dict[str, str], from_rows: dict[str, str]) -> dict[str, str]:
    out = dict(given)
    for metric_id, direction in from_rows.items():
        if out.setdefault(metric_id, direction) != direction:
            raise Invalid(
                f"metric_directions and metric_rows give {metric_id!r} different directions",
                code="invalid_metric_direction", metric_id=metric_id,
            )  # fmt: skip
    return out


def _report(**fields: Any) -> dict[str, Any]:
    """The facts worth keeping: empty strings, lists and None are left out."""
    out = {}
    for key, value in fields.items():
        if key == "comment":
            value = _comment_text(value) if not isinstance(value, dict) else value
        if value in (None, "", [], {}):
            continue
        out[key] = value
    return out


def _objects(items: list[Any] | None, field: str) -> list[dict[str, Any]]:
    """Objects kept as given (their JSON type is checked; the log's event size limit
    bounds them)."""
    if any(not isinstance(i, dict) for i in items or []):
        raise Invalid(f"each {field} entry must be an object", code="invalid_field", field=field)
    return list(items or [])


def _comment_text(comment: Any) -> str:
    if comment is None:
        return ""
    if isinstance(comment, dict):
        return msgspec.json.encode(comment).decode()[:5000]
    return check_text(comment, "comment", required=False, max_chars=5000)


def _advance(quest: Quest, auto_advance: bool, reason: str) -> list[Event]:
    """Past the baseline gate the quest moves from the baseline stage to idea (only from
    that stage: a quest already further on stays where it is)."""
    previous = quest.state("status").anchor
    if not auto_advance or previous != "baseline":
        return []
    return [QuestAnchorChanged(anchor="idea", previous=previous, reason=reason[:2000])]


def _contract_input(contract: dict[str, Any], directions: dict[str, str]) -> dict[str, Any]:
    """A confirmed (normalised) contract as input for a new confirmation; the directions
    the caller gives replace the kept ones (and the overwrite judges the change)."""
    out = {k: v for k, v in contract.items() if k not in ("baseline_id", "variant_id", "primary_metric", "metric_ids", "overwrite")}
    out["metrics"] = {m: {**e, "direction": directions.get(m, e.get("direction"))} for m, e in contract["metrics"].items()}
    return out


def _resolve_confirmation(
    quest: Quest, *, baseline_id: str, variant_id: str | None, rel: str, published: dict[str, Any],
    contract: Any, metrics: Any, primary: Any, directions: Any, summary: Any,
) -> dict[str, Any]:  # fmt: skip
    """The confirmation's contract, numbers, primary metric, directions and summary:
    what the caller gave, else what the baseline was published with. Conflicting values
    are refused, never silently preferred."""
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
    if primary_id is not None and primary_direction is not None:
        directions = _merge_directions(directions, {primary_id: primary_direction})
    if not numbers:
        raise Invalid("metrics_summary must be a non-empty flat object of metric id -> number", code="invalid_metrics_summary", field="metrics_summary")
    if primary_id is None:
        raise Invalid("primary_metric is required: name one metric of metrics_summary", code="missing_fields", missing=["primary_metric"])
    normalised = normalise_contract(contract, numbers, primary_id, directions, baseline_id=baseline_id, variant_id=variant_id)
    normalised.pop("primary_metric_id", None)
    contract_path = "json/metric_contract.json" if rel == "." else f"{rel}/json/metric_contract.json"
    check_materialised(quest.root, [contract_path], field="baseline_path")
    _check_writable_dirs(quest, contract_path)
    text = summary if summary is not None else published.get("summary")
    return {
        "contract": normalised,
        "contract_path": contract_path,
        "metrics": numbers,
        "primary": primary_id,
        "directions": {m: e["direction"] for m, e in normalised["metrics"].items()},
        "summary": check_text(text if isinstance(text, str) else None, "summary", required=False),
    }


def _published_metrics(published: dict[str, Any], variant_id: str | None) -> Any:
    for variant in published.get("variants") or published.get("baseline_variants") or []:
        if isinstance(variant, dict) and variant.get("variant_id") == variant_id and variant.get("metrics_summary"):
            return variant["metrics_summary"]
    return published.get("metrics_summary")


def _confirm_result(quest: Quest, event: BaselineConfirmed, seq: int) -> ConfirmBaselineResult:
    ref = {
        "baseline_id": event.baseline_id, "variant_id": event.variant_id, "baseline_path": str(quest.root / event.baseline_path),
        "baseline_root_rel_path": event.baseline_path, "metric_contract_json_rel_path": event.contract_path,
        "metric_contract_json_path": str(quest.root / event.contract_path), "primary_metric": event.primary_metric,
        "confirmed_seq": seq, "overwrite": event.overwrite,
    }  # fmt: skip
    return ConfirmBaselineResult(
        baseline_id=event.baseline_id, variant_id=event.variant_id, contract_path=event.contract_path,
        metric_ids=event.contract["metric_ids"], primary_metric=event.primary_metric,
        metric_directions=event.metric_directions, seq=seq, baseline_gate="confirmed", confirmed_baseline_ref=ref,
        metric_contract_json_path=ref["metric_contract_json_path"], metric_contract_json_rel_path=event.contract_path,
        overwrite=event.overwrite,
    )  # fmt: skip


def _check_variant(baseline: Any, variant_id: str | None) -> None:
    if variant_id is not None and variant_id not in baseline.variant_ids:
        raise NotFound(
            f"baseline {baseline.baseline_id!r} has no variant {variant_id!r}",
            code="unknown_variant",
            variant_ids=list(baseline.variant_ids),
        )


def _baseline_for_run(state: Any, baseline_id: str | None) -> Any:
    if baseline_id is None:
        attached = state.attached["baseline_id"] if state.attached else None
        if attached and state.baselines[attached].confirmed is not None:
            baseline_id = attached
        else:
            baseline_id = state.confirmed_baseline
        if baseline_id is None:
            raise Conflict("no confirmed baseline: call confirm_baseline first", code="no_confirmed_baseline")
    baseline = _known_baseline(state, baseline_id)
    if baseline.confirmed is None:
        raise Conflict(f"baseline {baseline_id!r} is not confirmed: call confirm_baseline", code="baseline_not_confirmed")
    return baseline


_PROBLEM_CODES = (
    ("missing_metric_ids", "missing_metric_ids"),
    ("direction_mismatches", "metric_direction_mismatch"),
    ("evaluation_protocol_mismatch", "evaluation_protocol_mismatch"),
)


def _problem_code(problems: dict[str, Any]) -> str:
    return next(code for key, code in _PROBLEM_CODES if key in problems)


def _problem_message(problems: dict[str, Any]) -> str:
    parts = []
    if "missing_metric_ids" in problems:
        parts.append(f"missing baseline metrics {', '.join(problems['missing_metric_ids'])}")
    if "direction_mismatches" in problems:
        parts.append(f"metric directions differ for {', '.join(m['metric_id'] for m in problems['direction_mismatches'])}")
    if "evaluation_protocol_mismatch" in problems:
        keys = problems["evaluation_protocol_mismatch"]["differing_keys"]
        parts.append(f"evaluation protocol differs from the baseline's in {', '.join(keys)}")
    return "the run does not satisfy the baseline's metric contract: " + "; ".join(parts) + ". Nothing was recorded."


def _parse_slices(slices: Any) -> list[dict[str, Any]]:
    if not isinstance(slices, list) or not slices or len(slices) > _MAX_SLICES:
        raise Invalid(f"slices must be a list of 1 to {_MAX_SLICES} slices", code="invalid_slices")
    out = []
    for i, s in enumerate(slices, start=1):
        if isinstance(s, str):
            s = {"title": s}
        if not isinstance(s, dict):
            raise Invalid("each slice is a title or an object with title (and slice_id, goal)", code="invalid_slices")
        out.append(
            {
                "slice_id": check_id(s.get("slice_id", f"s{i}"), "slice_id"),
                "title": check_text(s.get("title"), "title", max_chars=500),
                "goal": check_text(s.get("goal"), "goal", required=False),
            }
        )
    ids = [s["slice_id"] for s in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise Invalid(f"slice ids repeat: {', '.join(dupes)}", code="duplicate_slice_id", slice_ids=dupes)
    return out
