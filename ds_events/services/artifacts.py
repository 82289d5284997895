"""Quest state commands of the `artifact` namespace: records, baselines and metric
contracts, main experiments, analysis campaigns, summary refreshes.

Each function takes its command (:mod:`ds_events.services.artifact_commands`, decoded at
the edge, so argument names and JSON types are already right) and returns its result
struct. Every command validates against the `artifacts` projection inside
``quest.transaction()`` (so ids are allocated and duplicates refused across processes),
checks that the files its event will materialise stay inside the quest, then appends one
event. An analysis campaign creates its branches and worktrees before that, outside the
lock, and undoes them if its event does not reach the log
(:func:`ds_events.services.git.append_recording`). Error codes, besides those of
:mod:`ds_events.artifacts.validate` and :mod:`ds_events.services.git`:
``artifact_exists``, ``baseline_exists``, ``unknown_baseline``, ``unknown_variant``,
``baseline_not_confirmed``, ``no_confirmed_baseline``, ``run_exists``, ``unknown_run``,
``missing_metric_ids``, ``metric_direction_mismatch``, ``evaluation_protocol_mismatch``,
``invalid_slices``, ``duplicate_slice_id``, ``unknown_campaign``, ``unknown_slice``,
``slice_already_recorded``, ``invalid_slice_status``.
"""

from __future__ import annotations

from typing import Any

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.validate import (
    check_id,
    check_materialised,
    check_metrics,
    check_record,
    check_text,
    compare_to_contract,
    confine_path,
    normalise_contract,
    normalise_directions,
    normalise_protocol,
    optional_id,
)
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    MainExperimentRecorded,
    SummaryRefreshed,
)
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.home import Quest
from ds_events.log import Transaction
from projections.artifacts import record_path

from .quests import ANCHORS

from . import git
from .artifact_commands import (
    AttachBaseline,
    AttachBaselineResult,
    CampaignResult,
    CampaignSlice,
    ConfirmBaseline,
    ConfirmBaselineResult,
    CreateAnalysisCampaign,
    MainExperimentResult,
    PublishBaseline,
    PublishBaselineResult,
    Record,
    RecordAnalysisSlice,
    RecordMainExperiment,
    RecordResult,
    RefreshSummary,
    SliceResult,
    SummaryResult,
)

__all__ = [
    "record",
    "publish_baseline",
    "attach_baseline",
    "confirm_baseline",
    "record_main_experiment",
    "create_analysis_campaign",
    "record_analysis_slice",
    "refresh_summary",
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
    """Register a baseline (``baseline_id``, ``title``, optional ``variants``,
    ``baseline_path``, ``metrics_summary``) so it can be attached and confirmed."""
    payload = cmd.payload
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
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if state.id_taken(baseline_id):
            raise Conflict(f"baseline {baseline_id!r} already exists", code="baseline_exists", baseline_id=baseline_id)
        check_materialised(quest.root, [record_path("baseline", baseline_id)])
        stored = txn.append(BaselinePublished(baseline_id=baseline_id, payload=clean, variant_ids=variants))[0]
    return PublishBaselineResult(
        baseline_id=baseline_id, variant_ids=variants, path=record_path("baseline", baseline_id), seq=stored.seq
    )


def attach_baseline(quest: Quest, cmd: AttachBaseline) -> AttachBaselineResult:
    """Choose a published baseline (and variant) as the quest's reference."""
    baseline_id = check_id(cmd.baseline_id, "baseline_id")
    variant_id = optional_id(cmd.variant_id, "variant_id")
    with quest.transaction() as txn:
        baseline = _known_baseline(quest.state("artifacts"), baseline_id)
        _check_variant(baseline, variant_id)
        stored = txn.append(BaselineAttached(baseline_id=baseline_id, variant_id=variant_id))[0]
    return AttachBaselineResult(
        baseline_id=baseline_id, variant_id=variant_id, confirmed=baseline.confirmed is not None, seq=stored.seq
    )


def confirm_baseline(quest: Quest, cmd: ConfirmBaseline) -> ConfirmBaselineResult:
    """Confirm a baseline's numbers and its canonical metric contract, which is
    materialised to ``<baseline_path>/json/metric_contract.json``."""
    baseline_id = check_id(cmd.baseline_id, "baseline_id")
    variant_id = optional_id(cmd.variant_id, "variant_id")
    rel = confine_path(quest.root, cmd.baseline_path, "baseline_path")
    metrics = check_metrics(cmd.metrics_summary)
    directions = normalise_directions(cmd.metric_directions)
    summary_text = check_text(cmd.summary, "summary", required=False)
    primary_metric = cmd.primary_metric
    contract = normalise_contract(
        cmd.metric_contract, metrics, primary_metric, directions, baseline_id=baseline_id, variant_id=variant_id
    )
    contract_path = "json/metric_contract.json" if rel == "." else f"{rel}/json/metric_contract.json"
    check_materialised(quest.root, [contract_path], field="baseline_path")
    _check_writable_dirs(quest, contract_path)
    directions = {m: e["direction"] for m, e in contract["metrics"].items()}
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        baseline = state.baselines.get(baseline_id)
        if baseline is None and state.id_taken(baseline_id):
            raise Conflict(f"{baseline_id!r} names another artifact, not a baseline", code="artifact_exists", artifact_id=baseline_id)
        if baseline is not None and baseline.published_seq is not None:
            _check_variant(baseline, variant_id)
        check_materialised(quest.root, [record_path("baseline", baseline_id)])
        check_materialised(quest.root, [contract_path], field="baseline_path")  # a link planted meanwhile
        event = BaselineConfirmed(
            baseline_id=baseline_id,
            baseline_path=rel,
            contract_path=contract_path,
            contract=contract,
            metrics_summary=metrics,
            primary_metric=primary_metric,
            metric_directions=directions,
            summary=summary_text,
            variant_id=variant_id,
        )
        stored = txn.append(event)[0]
    return ConfirmBaselineResult(
        baseline_id=baseline_id,
        variant_id=variant_id,
        contract_path=contract_path,
        metric_ids=contract["metric_ids"],
        primary_metric=primary_metric,
        metric_directions=directions,
        seq=stored.seq,
    )


def record_main_experiment(quest: Quest, cmd: RecordMainExperiment) -> MainExperimentResult:
    """Record a main experiment; its metrics must cover every metric of the confirmed
    baseline's contract (extras allowed), with the same directions and protocol."""
    run_id = check_id(cmd.run_id, "run_id")
    title = check_text(cmd.title, "title", max_chars=500)
    metrics = check_metrics(cmd.metrics_summary)
    directions = normalise_directions(cmd.metric_directions)
    idea_id = optional_id(cmd.idea_id, "idea_id")
    summary_text = check_text(cmd.summary, "summary", required=False)
    baseline_id = optional_id(cmd.baseline_id, "baseline_id")
    protocol = normalise_protocol(cmd.evaluation_protocol)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        baseline = _baseline_for_run(state, baseline_id)
        confirmed = baseline.confirmed
        assert confirmed is not None
        if state.id_taken(run_id):
            raise Conflict(f"run {run_id!r} is already recorded", code="run_exists", run_id=run_id)
        problems, comparisons = compare_to_contract(confirmed.contract, metrics, directions, protocol)
        if problems:
            raise Invalid(_problem_message(problems), code=_problem_code(problems), baseline_id=baseline.baseline_id, **problems)
        run_branch = cmd.branch or next((b.branch for b in state.branches.values() if b.run == run_id), state.active_branch)
        head = git_ops.branch_head(quest.repo(), run_branch)
        if head is None:
            raise NotFound(f"branch {run_branch!r} does not exist in the quest repository", code="unknown_branch", branch=run_branch)
        info = state.branches.get(run_branch)
        check_materialised(quest.root, [record_path("run", run_id)])
        event = MainExperimentRecorded(
            run=run_id,
            title=title,
            baseline_id=baseline.baseline_id,
            metrics_summary=metrics,
            comparisons=comparisons,
            primary_metric=confirmed.primary_metric,
            branch=run_branch,
            head_sha=head,
            idea_id=idea_id or (info.idea_id if info else None),
            summary=summary_text,
            evaluation_protocol=protocol or confirmed.contract.get("evaluation_protocol"),
            details=cmd.details or {},
        )
        stored = txn.append(event)[0]
    primary = comparisons[confirmed.primary_metric]
    return MainExperimentResult(
        run_id=run_id,
        baseline_id=baseline.baseline_id,
        branch=run_branch,
        head_sha=head,
        primary_metric=confirmed.primary_metric,
        primary=primary,
        comparisons=comparisons,
        extra_metric_ids=sorted(m for m in metrics if m not in confirmed.contract["metrics"]),
        path=record_path("run", run_id),
        seq=stored.seq,
    )


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

        def recheck(txn: Transaction) -> Event:
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
    """Record one slice's outcome (status, metrics, summary) and its branch head."""
    campaign_id = check_id(cmd.campaign_id, "campaign_id")
    slice_id = check_id(cmd.slice_id, "slice_id")
    status = cmd.status
    if status not in SLICE_STATUSES:
        raise Invalid(f"status {status!r}: use {', '.join(SLICE_STATUSES)}", code="invalid_slice_status", allowed=list(SLICE_STATUSES))
    metrics = check_metrics(cmd.metrics_summary, allow_empty=True)
    summary_text = check_text(cmd.summary, "summary", required=False)
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
            campaign_id=campaign_id,
            slice_id=slice_id,
            status=status,
            metrics_summary=metrics,
            summary=summary_text,
            head_sha=head,
            details=cmd.details or {},
        )
        stored = txn.append(event)[0]
    remaining = [s.slice_id for s in campaign.slices if s.status == "pending" and s.slice_id != slice_id]
    return SliceResult(
        campaign_id=campaign_id,
        slice_id=slice_id,
        status=status,
        branch=found.branch,
        head_sha=head,
        remaining_slice_ids=remaining,
        campaign_complete=not remaining,
        seq=stored.seq,
    )


def refresh_summary(quest: Quest, cmd: RefreshSummary) -> SummaryResult:
    """Record a refresh and return ``SUMMARY.md`` as rendered from the log."""
    reason_text = check_text(cmd.reason, "reason", required=False, max_chars=2000)
    check_materialised(quest.root, ["SUMMARY.md"])
    stored = quest.emit(SummaryRefreshed(reason=reason_text))[0]
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
        raise NotFound(
            f"no baseline {baseline_id!r}: publish or confirm it first",
            code="unknown_baseline",
            known_baseline_ids=sorted(state.baselines),
        )
    return baseline


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
