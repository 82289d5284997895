"""The Canvas branch view: the quest repository's branches (pygit2) joined with what the
log says about them (the `artifacts` view: prepared branches, runs, campaigns, records).

Git is read here, in the core layer, because projections do no I/O. Only local branches
are read; nothing is written. Everything the result holds comes from git objects and
the log, so two calls on the same repository and log give the same bytes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pygit2

from ds_events.events.artifact import MainExperimentRecorded
from projections.artifacts import BranchInfo, Slice, State as ArtifactsState
from projections.canvas import graph

__all__ = ["branch_view"]

_RECENT_ARTIFACTS = 5
_MAX_COUNT = 10_000  # commit_count stops counting here (a bound on the walk)


def branch_view(repo: pygit2.Repository, state: ArtifactsState, quest_id: str) -> dict[str, Any]:
    """The ``branch`` canvas: one node per local branch, parent→child ``branch`` edges,
    plus ``views.ideas`` and ``views.analysis``."""
    names = sorted(repo.branches.local, key=lambda n: (n != "main", n))
    heads = {n: repo.branches.local[n].peel(pygit2.Commit) for n in names}
    parents = {n: _parent_of(n, state, heads) for n in names}
    nodes = [_node(repo, n, state, heads, parents) for n in names]
    edges = [
        {"source": parents[n], "target": n, "relation": "branch"} for n in names if parents[n] is not None
    ]
    views = {"ideas": _ideas(state), "analysis": _analysis(state)}
    return graph("branch", quest_id, state.last_seq, nodes, edges, views)


# -- private helpers ----------------------------------------------------------------------


def _parent_of(name: str, state: ArtifactsState, heads: dict[str, pygit2.Commit]) -> str | None:
    if name == "main":
        return None
    info = state.branches.get(name)
    if info is not None and info.start_point in heads and info.start_point != name:
        return info.start_point
    if info is not None:  # started from a sha: the branch whose head it was, else main
        for other, commit in heads.items():
            if other != name and str(commit.id) == info.start_sha:
                return other
    return "main" if "main" in heads else None


def _tier(name: str, parents: dict[str, str | None]) -> int:
    tier, seen = 0, {name}
    parent = parents.get(name)
    while parent is not None and parent not in seen:
        seen.add(parent)
        tier += 1
        parent = parents.get(parent)
    return tier


def _node(
    repo: pygit2.Repository, name: str, state: ArtifactsState, heads: dict[str, pygit2.Commit], parents: dict[str, str | None]
) -> dict[str, Any]:
    head = heads[name]
    info = state.branches.get(name)
    parent = parents[name]
    base = ahead = behind = None
    if parent is not None:
        found = repo.merge_base(head.id, heads[parent].id)
        base = str(found) if found is not None else None
        ahead, behind = repo.ahead_behind(head.id, heads[parent].id)
    run = state.runs.get(info.run) if info is not None and info.run else None
    latest = _latest_run_on(state, name)
    slice_ = _slice_of(state, info.campaign_id, info.slice_id) if info is not None and info.slice_id else None
    metric: dict[str, Any] | None = None
    summary = ""
    if latest is not None:
        value = latest.metrics_summary.get(latest.primary_metric)
        metric = {"name": latest.primary_metric, "value": value, "run": latest.run}
        summary = latest.summary
    elif slice_ is not None and slice_.metrics_summary:
        key = sorted(slice_.metrics_summary)[0]
        metric = {"name": key, "value": slice_.metrics_summary[key], "slice": slice_.slice_id}
        summary = slice_.summary
    recent = [
        rid for ids in state.recent.values() for rid in ids
        if (rec := state.records.get(rid)) is not None and rec.branch == name
    ]  # fmt: skip
    recent.sort(key=lambda rid: state.records[rid].seq)
    return {
        "ref": name,
        "id": name,
        "label": (run.title if run is not None else name),
        "branch_kind": info.kind if info is not None else ("main" if name == "main" else "other"),
        "tier": _tier(name, parents),
        "mode": "worktree" if info is not None and info.worktree else "ref",
        "parent_ref": parent,
        "compare_base": base,
        "current": name == state.active_branch,
        "head": str(head.id),
        "updated_at": datetime.fromtimestamp(head.commit_time, UTC).isoformat(),
        "subject": head.message.splitlines()[0] if head.message else "",
        "commit_count": _count(repo, head.id, base if name != "main" else None),
        "ahead": ahead,
        "behind": behind,
        "run_id": info.run if info is not None else None,
        "run_kind": _run_kind(info),
        "idea_id": info.idea_id if info is not None else None,
        "worktree_root": info.worktree if info is not None else None,
        "latest_metric": metric,
        "latest_summary": summary,
        "recent_artifacts": recent[-_RECENT_ARTIFACTS:],
    }


def _run_kind(info: BranchInfo | None) -> str | None:
    if info is None:
        return None
    if info.slice_id:
        return "analysis_slice"
    if info.run:
        return "main_experiment"
    return None


def _count(repo: pygit2.Repository, head: pygit2.Oid, stop: str | None) -> int:
    walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
    if stop is not None:
        walker.hide(pygit2.Oid(hex=stop))
    count = 0
    for _commit in walker:
        count += 1
        if count >= _MAX_COUNT:
            break
    return count


def _latest_run_on(state: ArtifactsState, branch: str) -> MainExperimentRecorded | None:
    runs = [r for r in state.runs.values() if r.branch == branch]
    return max(runs, key=lambda r: r.seq) if runs else None


def _slice_of(state: ArtifactsState, campaign_id: str | None, slice_id: str) -> Slice | None:
    campaign = state.campaigns.get(campaign_id or "")
    if campaign is None:
        return None
    return next((s for s in campaign.slices if s.slice_id == slice_id), None)


def _ideas(state: ArtifactsState) -> list[dict[str, Any]]:
    ideas = []
    for rid in state.recent.get("idea", []):
        rec = state.records.get(rid)
        if rec is None:
            continue
        branches = sorted(b.branch for b in state.branches.values() if b.idea_id == rid)
        title = rec.payload.get("title") or rec.payload.get("summary") or rid
        ideas.append({"idea_id": rid, "title": str(title), "branch": rec.branch, "branches": branches, "seq": rec.seq})
    return ideas


def _analysis(state: ArtifactsState) -> list[dict[str, Any]]:
    return [
        {
            "campaign_id": c.campaign_id,
            "title": c.title,
            "parent_run": c.parent_run,
            "parent_branch": c.parent_branch,
            "slices": [
                {"slice_id": s.slice_id, "title": s.title, "branch": s.branch, "status": s.status, "summary": s.summary}
                for s in c.slices
            ],
            "seq": c.seq,
        }
        for c in sorted(state.campaigns.values(), key=lambda c: c.seq)
    ]
