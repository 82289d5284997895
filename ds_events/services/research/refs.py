"""What several research queries show the same way: the runtime refs (the ids and
branches an agent would otherwise guess), a main run in short, a branch's worktree, and
the ``detail`` argument they take.

Reads only, from the projections caught up with the log.
"""

from __future__ import annotations

from typing import Any, TypedDict

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.services.research.commands import RuntimeRefsResult
from ds_events.services.research.lineage import workspace_branch
from projections.artifacts import MainRun, State as ArtifactsState, record_path
from projections.research import State as ResearchState

__all__ = ["RunSummary", "runtime_refs", "run_summary", "latest_run", "workspace_root", "parse_detail"]


class RunSummary(TypedDict):
    """A main run in short, as the status and branch queries list it."""

    run_id: str
    title: str
    summary: str
    branch: str
    idea_id: str | None
    baseline_id: str
    primary_metric: str | None
    primary_value: float | None
    delta_vs_baseline: Any  # the comparison's delta, as record_main_experiment kept it
    better_than_baseline: Any
    head_sha: str | None
    seq: int


def runtime_refs(quest: Quest) -> RuntimeRefsResult:
    """Active idea, head, workspace, campaign and its next slice, latest main result, the
    request awaiting a reply: ``resolve_runtime_refs``'s answer."""
    research, artifacts, interactions = quest.state("research"), quest.state("artifacts"), quest.state("interactions")
    current = workspace_branch(research, artifacts)
    campaign = artifacts.campaigns.get(research.active_campaign_id) if research.active_campaign_id else None
    analysis_parent = campaign.parent_branch if campaign else None
    canonical = analysis_parent or current or research.research_head_branch
    latest = latest_run(artifacts, canonical) or latest_run(artifacts, None)
    pending = [s.slice_id for s in campaign.slices if s.status == "pending"] if campaign else []
    waiting = interactions.open_requests[-1] if interactions.open_requests else None
    attached = (artifacts.attached or {}).get("baseline_id")
    return RuntimeRefsResult(
        ok=True,
        quest_id=quest.id,
        active_idea_id=research.active_idea_id,
        research_head_branch=research.research_head_branch,
        research_head_worktree_root=workspace_root(quest, research, artifacts, research.research_head_branch),
        current_workspace_branch=current,
        current_workspace_root=workspace_root(quest, research, artifacts, current),
        analysis_parent_branch=analysis_parent,
        analysis_parent_worktree_root=workspace_root(quest, research, artifacts, analysis_parent),
        current_canonical_branch=canonical,
        active_analysis_campaign_id=research.active_campaign_id,
        active_campaign_title=campaign.title if campaign else None,
        next_pending_slice_id=pending[0] if pending else None,
        latest_main_run_id=latest.run if latest else None,
        latest_main_run_branch=latest.branch if latest else None,
        latest_main_result_json=str(quest.root / record_path("run", latest.run)) if latest else None,
        active_baseline_id=attached or artifacts.confirmed_baseline,
        selected_outline_ref=quest.state("manuscript").selected_outline_id,
        default_reply_interaction_id=waiting,
        seq=max(research.last_seq, artifacts.last_seq),
    )


def run_summary(run: MainRun) -> RunSummary:
    primary = run.comparisons.get(run.primary_metric, {}) if run.primary_metric else {}
    return {
        "run_id": run.run, "title": run.title, "summary": run.summary, "branch": run.branch, "idea_id": run.idea_id,
        "baseline_id": run.baseline_id, "primary_metric": run.primary_metric or None,
        "primary_value": run.metrics_summary.get(run.primary_metric) if run.primary_metric else None,
        "delta_vs_baseline": primary.get("delta"), "better_than_baseline": primary.get("better"),
        "head_sha": run.head_sha, "seq": run.seq,
    }  # fmt: skip


def latest_run(artifacts: ArtifactsState, branch: str | None) -> MainRun | None:
    """The newest main run on ``branch`` (None: on any branch)."""
    runs = [r for r in artifacts.runs.values() if branch is None or r.branch == branch]
    return max(runs, key=lambda r: r.seq) if runs else None


def workspace_root(quest: Quest, research: ResearchState, artifacts: ArtifactsState, branch: str | None) -> str | None:
    """The directory checked out for ``branch`` (main: the quest root), absolute."""
    if branch is None:
        return None
    if branch == "main":
        return str(quest.root)
    rel = research.worktrees.get(branch)
    if rel is None and branch in artifacts.branches:
        rel = artifacts.branches[branch].worktree
    return str(quest.root / rel) if rel else None


def parse_detail(value: str, allowed: tuple[str, ...]) -> str:
    detail = value.strip().lower()
    if detail not in allowed:
        raise Invalid(f"detail must be {' or '.join(allowed)}, got {value!r}", code="invalid_detail", allowed=list(allowed))
    return detail
