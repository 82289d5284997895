"""Analysis campaigns: slices of follow-up analysis as child branches (with worktrees) of
a result node, and each slice's recorded outcome.

A campaign's branches and worktrees are made before its event is appended, outside the
log's lock, under a campaign id reserved across processes; if the event does not reach
the log they are removed (:func:`.checkpoints.append_recording`).
"""

from __future__ import annotations

import msgspec
import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.metrics import check_metrics, merge_metrics, metric_rows
from ds_events.artifacts.validate import (
    check_evaluation_summary,
    check_id,
    check_materialised,
    check_objects,
    check_text,
    check_text_list,
    optional_id,
    report_fields,
)
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event
from ds_events.events.artifact import AnalysisCampaignCreated, AnalysisSliceRecorded, SliceSpec
from ds_events.home import Quest
from ds_events.store import StoreTransaction
from projections.artifacts import campaign_path

from .campaign_paper import paper_links
from .checkpoints import append_recording
from .commands import CreateAnalysisCampaign, RecordAnalysisSlice
from .results import CampaignResult, CampaignSlice, SliceResult

__all__ = ["create_analysis_campaign", "record_analysis_slice", "SLICE_STATUSES"]

SLICE_STATUSES = ("completed", "failed", "abandoned")
_MAX_SLICES = 32
_MAX_CAMPAIGN_PROBES = 1000


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
    links = paper_links(quest, cmd, [s.slice_id for s in wanted])
    state = quest.state("artifacts")
    if parent_run_id is not None and parent_run_id not in state.runs:
        raise NotFound(f"no main experiment {parent_run_id!r}", code="unknown_run", run_id=parent_run_id)
    parent = state.runs.get(parent_run_id or state.latest_run or "")
    repo = quest.repo()
    parent_sha, parent_branch = git_ops.resolve_start(repo, None, parent.branch if parent else state.active_branch)
    idea = (parent.idea_id or parent.run) if parent else quest.id
    campaign_id = _reserve_campaign_id(quest, repo, parent_sha)
    try:
        planned: list[SliceSpec] = []
        for s in wanted:
            name = git_ops.validate_branch_name(f"analysis/{idea}/{campaign_id}-{s.slice_id}", "analysis")
            worktree = git_ops.worktree_path(name) if create_worktrees else None
            planned.append(SliceSpec(slice_id=s.slice_id, title=s.title, goal=s.goal, branch=name, worktree=worktree))
        branches = [git_ops.BranchSpec(branch=s.branch, kind="analysis", worktree=s.worktree) for s in planned]
        check_materialised(quest.root, [campaign_path(campaign_id)])
        git_ops.check_free(quest.root, repo, branches)
        event = AnalysisCampaignCreated(
            campaign_id=campaign_id, title=title, goal=goal, parent_run=parent.run if parent else None,
            parent_branch=parent_branch, parent_sha=parent_sha, slices=msgspec.to_builtins(planned),
            **msgspec.structs.asdict(links),
        )  # fmt: skip

        def recheck(txn: StoreTransaction) -> Event:
            # The reservation keeps other campaigns off this id; a record given this
            # id explicitly (artifact_id="campaign-...") is the one thing that can take it.
            if quest.state("artifacts").id_taken(campaign_id):
                raise Conflict(
                    f"{campaign_id!r} was taken meanwhile by another artifact: create the campaign again",
                    code="artifact_exists", artifact_id=campaign_id,
                )  # fmt: skip
            return event

        with git_ops.Rollback() as undo:
            git_ops.create_branches(quest.root, repo, branches, parent_sha, undo)
            stored = append_recording(quest, undo, recheck)
    finally:
        git_ops.release(repo, campaign_id)
    parent_worktree = quest.state("research").worktrees.get(parent_branch)
    return CampaignResult(
        campaign_id=campaign_id, parent_run_id=event.parent_run, parent_branch=parent_branch, parent_sha=parent_sha,
        slices=[_campaign_slice(quest, s) for s in planned], path=campaign_path(campaign_id), seq=stored.seq,
        parent_worktree_root=str(quest.root / parent_worktree) if parent_worktree else None,
    )  # fmt: skip


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
    setup, execution, results = (check_text(getattr(cmd, f), f, required=False) for f in ("setup", "execution", "results"))
    evaluation = check_evaluation_summary(cmd.evaluation_summary)
    evidence = check_text_list(cmd.evidence_paths, "evidence_paths")
    scope = check_text(cmd.dataset_scope, "dataset_scope", max_chars=40)
    if scope == "subset" and not (cmd.subset_approval_ref or "").strip():
        raise Invalid(
            "a subset slice needs subset_approval_ref (the approval to run on a subset)",
            code="missing_fields", missing=["subset_approval_ref"],
        )  # fmt: skip
    report = report_fields(
        deviations=check_text_list(cmd.deviations, "deviations"),
        **{f: check_text(getattr(cmd, f), f, required=False) for f in (
            "claim_impact", "reviewer_resolution", "manuscript_update_hint", "next_recommendation", "subset_approval_ref")},
        dataset_scope=scope if scope != "full" else None,
        comparison_baselines=check_objects(cmd.comparison_baselines, "comparison_baselines"),
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
        check_materialised(quest.root, [campaign_path(campaign_id)])
        head = git_ops.branch_head(quest.repo(), found.branch)
        event = AnalysisSliceRecorded(
            campaign_id=campaign_id, slice_id=slice_id, status=status, metrics_summary=metrics, summary=summary_text,
            head_sha=head, details=cmd.details or {}, setup=setup, execution=execution, results=results,
            evaluation_summary=evaluation, evidence_paths=evidence, metric_rows=rows, report=report,
        )  # fmt: skip
        stored = txn.append(event)
    pending = [s for s in campaign.slices if s.status == "pending" and s.slice_id != slice_id]
    return SliceResult(
        campaign_id=campaign_id, slice_id=slice_id, status=status, branch=found.branch, head_sha=head,
        remaining_slice_ids=[s.slice_id for s in pending], campaign_complete=not pending, seq=stored.seq,
        completed=not pending, metrics_summary=metrics, evaluation_summary=evaluation, path=campaign_path(campaign_id),
        next_slice=msgspec.to_builtins(_campaign_slice(quest, pending[0])) if pending else None,
        result_json_path=str(quest.root / campaign_path(campaign_id)),
        returned_to_branch=None if pending else campaign.parent_branch,
    )  # fmt: skip


# -- private helpers ----------------------------------------------------------------------


class _Wanted(msgspec.Struct, kw_only=True, frozen=True):
    """A slice as the caller asked for it, checked."""

    slice_id: str
    title: str
    goal: str


def _campaign_slice(quest: Quest, spec: SliceSpec) -> CampaignSlice:
    """A slice as the tools answer it: as planned, with its worktree's absolute path."""
    root = str(quest.root / spec.worktree) if spec.worktree else None
    return CampaignSlice(
        slice_id=spec.slice_id, title=spec.title, goal=spec.goal, branch=spec.branch, worktree=spec.worktree,
        worktree_path=root, worktree_root=root,
    )  # fmt: skip


def _reserve_campaign_id(quest: Quest, repo: pygit2.Repository, sha: str) -> str:
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


def _parse_slices(slices: list[object]) -> list[_Wanted]:
    if not isinstance(slices, list) or not slices or len(slices) > _MAX_SLICES:
        raise Invalid(f"slices must be a list of 1 to {_MAX_SLICES} slices", code="invalid_slices")
    out = []
    for i, item in enumerate(slices, start=1):
        s = {"title": item} if isinstance(item, str) else item
        if not isinstance(s, dict):
            raise Invalid("each slice is a title or an object with title (and slice_id, goal)", code="invalid_slices")
        out.append(
            _Wanted(
                slice_id=check_id(s.get("slice_id", f"s{i}"), "slice_id"),
                title=check_text(s.get("title"), "title", max_chars=500),
                goal=check_text(s.get("goal"), "goal", required=False),
            )
        )
    ids = [s.slice_id for s in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise Invalid(f"slice ids repeat: {', '.join(dupes)}", code="duplicate_slice_id", slice_ids=dupes)
    return out
