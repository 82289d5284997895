"""Main experiments: a run recorded on its run branch with its metrics, narrative and a
progress verdict, compared with the confirmed baseline's metric contract.

The baseline gate decides whether a run may be recorded: against a confirmed baseline
its metrics must cover every metric of the contract (extras allowed), with the same
directions and protocol; with the gate waived (``waive_baseline``) it is recorded
without a comparison; otherwise it is refused (``no_confirmed_baseline``). A run
without a prepared branch gets ``run/<run_id>``, made before the append and undone if
the event does not reach the log.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.metrics import (
    check_metrics,
    compare_to_contract,
    merge_directions,
    merge_metrics,
    metric_rows,
    normalise_directions,
    normalise_protocol,
)
from ds_events.artifacts.validate import (
    check_evaluation_summary,
    check_id,
    check_materialised,
    check_text,
    check_text_list,
    optional_id,
    report_fields,
)
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event
from ds_events.events.artifact import BranchPrepared, MainExperimentRecorded
from ds_events.home import Quest
from projections import results as results_view
from projections.artifacts import Baseline, State, record_path, run_page_path

from .baselines import known_baseline
from .commands import RecordMainExperiment
from .results import MainExperimentResult
from .vocabulary import metric_stage

__all__ = ["record_main_experiment"]


@metric_stage("main_experiment")
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
    directions = merge_directions(normalise_directions(cmd.metric_directions), row_directions)
    idea_id = optional_id(cmd.idea_id, "idea_id")
    summary_text = check_text(cmd.summary, "summary", required=False)
    baseline_id = optional_id(cmd.baseline_id, "baseline_id")
    variant_id = optional_id(cmd.baseline_variant_id, "baseline_variant_id")
    protocol = normalise_protocol(cmd.evaluation_protocol)
    narrative = {f: check_text(getattr(cmd, f), f, required=False) for f in _NARRATIVE}
    evaluation = check_evaluation_summary(cmd.evaluation_summary)
    evidence = check_text_list(cmd.evidence_paths, "evidence_paths")
    report = report_fields(
        status=check_text(cmd.status, "status", max_chars=40), dataset_scope=check_text(cmd.dataset_scope, "dataset_scope", max_chars=40),
        changed_files=check_text_list(cmd.changed_files, "changed_files"), config_paths=check_text_list(cmd.config_paths, "config_paths"),
        notes=check_text_list(cmd.notes, "notes"), baseline_variant_id=variant_id, metric_contract=cmd.metric_contract,
        comment=cmd.comment,
    )  # fmt: skip
    verdict_given = check_text(cmd.verdict, "verdict", required=False, max_chars=100)
    request = _Request(
        run_id=run_id, baseline_id=baseline_id, variant_id=variant_id, metrics=metrics, directions=directions,
        protocol=protocol, branch=cmd.branch,
    )  # fmt: skip
    # The event's fields that the comparison does not decide.
    facts: dict[str, Any] = {
        "title": title, "summary": summary_text, "details": cmd.details or {}, "evaluation_summary": evaluation,
        "evidence_paths": evidence, "metric_rows": rows, "report": report, **narrative,
    }  # fmt: skip
    check_materialised(quest.root, [record_path("run", run_id), run_page_path(run_id)])
    repo = quest.repo()

    state = quest.state("artifacts")
    _judge(state, request)  # refuse before a branch is made
    if state.id_taken(run_id):
        raise Conflict(f"run {run_id!r} is already recorded", code="run_exists", run_id=run_id)
    run_branch, spec = _run_branch(state, request)
    with git_ops.Rollback() as undo:
        made: BranchPrepared | None = None
        if spec is not None:
            start_sha, start_label = git_ops.resolve_start(repo, None, state.active_branch)
            git_ops.check_free(quest.root, repo, [spec])
            git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
            active = state.branches.get(state.active_branch)
            made = BranchPrepared(
                branch=spec.branch, branch_kind="run", start_sha=start_sha, start_point=start_label, worktree=None,
                run=run_id, idea_id=idea_id or (active.idea_id if active is not None else None), activate=False,
            )  # fmt: skip
        with quest.transaction() as txn:
            state = quest.state("artifacts")
            judged = _judge(state, request)
            if _run_branch(state, request)[0] != run_branch and spec is None:
                raise Conflict("the run's branch changed meanwhile: record it again", code="branch_moved", branch=run_branch)
            if state.id_taken(run_id):
                raise Conflict(f"run {run_id!r} is already recorded", code="run_exists", run_id=run_id)
            head = git_ops.branch_head(repo, run_branch)
            if head is None:
                raise NotFound(f"branch {run_branch!r} does not exist in the quest repository", code="unknown_branch", branch=run_branch)
            progress = results_view.progress_eval(
                state, primary_metric=judged.primary_metric, direction=judged.direction,
                value=metrics[judged.primary_metric], baseline_value=judged.baseline_value,
            )  # fmt: skip
            verdict = verdict_given or (
                "supported" if progress["breakthrough"] else "inconclusive" if progress["beats_baseline"] is False else "recorded"
            )
            info = state.branches.get(run_branch)
            event = MainExperimentRecorded(
                run=run_id, baseline_id=judged.baseline.baseline_id if judged.baseline is not None else "",
                metrics_summary=metrics, comparisons=judged.comparisons, primary_metric=judged.primary_metric,
                branch=run_branch, head_sha=head,
                idea_id=idea_id or (info.idea_id if info else None) or (made.idea_id if made else None),
                evaluation_protocol=judged.protocol, progress=dict(progress), verdict=verdict, **facts,
            )  # fmt: skip
            batch: list[Event] = [made, event] if made is not None else [event]
            stored = txn.append(batch)[-1]
            undo.keep()
    return _result(quest, event, stored.seq, judged)


# -- private helpers ----------------------------------------------------------------------

_NARRATIVE = ("hypothesis", "setup", "execution", "results", "conclusion")


class _Request(msgspec.Struct, kw_only=True, frozen=True):
    """What a call asks for, checked: the parts the gate and the branch choice read."""

    run_id: str
    baseline_id: str | None
    variant_id: str | None
    metrics: dict[str, float]
    directions: dict[str, str]
    protocol: dict[str, Any] | None
    branch: str | None


class _Judgement(msgspec.Struct, kw_only=True, frozen=True):
    """The baseline a run is compared with (None: the gate was waived) and what the
    comparison says."""

    baseline: Baseline | None
    comparisons: dict[str, dict[str, Any]]
    primary_metric: str
    direction: str
    baseline_value: float | None
    extra_metric_ids: list[str]
    protocol: dict[str, Any] | None  # the protocol the run is recorded with


def _judge(state: State, request: _Request) -> _Judgement:
    """The comparison of ``request`` with the gate's baseline; refusals first."""
    baseline = _gate(state, request.baseline_id, request.run_id)
    metrics, directions = request.metrics, request.directions
    if baseline is None:  # the gate was waived: nothing to compare with
        primary = next(iter(metrics))
        return _Judgement(
            baseline=None, comparisons={}, primary_metric=primary, direction=directions.get(primary, "higher"),
            baseline_value=None, extra_metric_ids=sorted(metrics), protocol=request.protocol,
        )  # fmt: skip
    confirmed = baseline.confirmed
    assert confirmed is not None  # the gate answers only confirmed baselines
    if request.variant_id is not None and request.variant_id != confirmed.variant_id:
        raise Conflict(
            f"baseline_variant_id {request.variant_id!r} is not the confirmed variant {confirmed.variant_id!r}",
            code="variant_mismatch", variant_id=confirmed.variant_id,
        )  # fmt: skip
    problems, comparisons = compare_to_contract(confirmed.contract, metrics, directions, request.protocol)
    if problems:
        extra = sorted(m for m in metrics if m not in confirmed.contract["metrics"])
        raise _contract_refusal({**problems, "extra_metric_ids": extra}, baseline.baseline_id)
    primary = confirmed.primary_metric
    return _Judgement(
        baseline=baseline, comparisons=comparisons, primary_metric=primary, direction=comparisons[primary]["direction"],
        baseline_value=comparisons[primary]["baseline"],
        extra_metric_ids=sorted(m for m in metrics if m not in confirmed.contract["metrics"]),
        protocol=request.protocol or confirmed.contract.get("evaluation_protocol"),
    )  # fmt: skip


def _run_branch(state: State, request: _Request) -> tuple[str, git_ops.BranchSpec | None]:
    """The run's branch: the one named, the one prepared for this run, the active run
    branch, else ``run/<run_id>`` to be made (DeepScientist records a main run on its own
    run branch), with the spec to make it."""
    if request.branch is not None:
        return request.branch, None
    prepared = next((b.branch for b in state.branches.values() if b.run == request.run_id), None)
    if prepared is not None:
        return prepared, None
    active = state.branches.get(state.active_branch)
    if active is not None and active.kind == "run":
        return active.branch, None
    name = git_ops.validate_branch_name(f"run/{request.run_id}", "run")
    return name, git_ops.BranchSpec(branch=name, kind="run", worktree=None)


def _gate(state: State, baseline_id: str | None, run_id: str) -> Baseline | None:
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


def _baseline_for_run(state: State, baseline_id: str | None) -> Baseline:
    if baseline_id is None:
        attached = state.attached["baseline_id"] if state.attached else None
        if attached and state.baselines[attached].confirmed is not None:
            baseline_id = attached
        else:
            baseline_id = state.confirmed_baseline
        if baseline_id is None:
            raise Conflict("no confirmed baseline: call confirm_baseline first", code="no_confirmed_baseline")
    baseline = known_baseline(state, baseline_id)
    if baseline.confirmed is None:
        raise Conflict(f"baseline {baseline_id!r} is not confirmed: call confirm_baseline", code="baseline_not_confirmed")
    return baseline


def _contract_refusal(problems: dict[str, Any], baseline_id: str) -> Invalid:
    """The refusal of a run whose metrics do not satisfy the baseline's contract, coded
    by its first problem (missing metrics, then directions, then the protocol)."""
    message = _problem_message(problems)
    if "missing_metric_ids" in problems:
        return Invalid(message, code="missing_metric_ids", baseline_id=baseline_id, **problems)
    if "direction_mismatches" in problems:
        return Invalid(message, code="metric_direction_mismatch", baseline_id=baseline_id, **problems)
    return Invalid(message, code="evaluation_protocol_mismatch", baseline_id=baseline_id, **problems)


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


def _result(quest: Quest, event: MainExperimentRecorded, seq: int, judged: _Judgement) -> MainExperimentResult:
    """The answer to a recorded run, from the event that records it."""
    primary = event.comparisons.get(event.primary_metric) or {
        "baseline": None, "value": event.metrics_summary[event.primary_metric], "delta": None, "direction": judged.direction,
        "better": None,
    }  # fmt: skip
    return MainExperimentResult(
        run_id=event.run, baseline_id=event.baseline_id or None, branch=event.branch, head_sha=event.head_sha or "",
        primary_metric=event.primary_metric, primary=primary, comparisons=event.comparisons,
        extra_metric_ids=judged.extra_metric_ids, path=record_path("run", event.run), seq=seq,
        run_md_path=str(quest.root / run_page_path(event.run)), result_json_path=str(quest.root / record_path("run", event.run)),
        metrics_summary=event.metrics_summary, progress_eval=event.progress, evaluation_summary=event.evaluation_summary,
        verdict=event.verdict,
    )  # fmt: skip
