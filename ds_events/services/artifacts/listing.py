"""The artifacts domain's listings for the edges: a quest's newest artifact records (of
one kind, or all) with the count per kind, and its git branches with their commits.

Queries: they read the ``artifacts`` view (and git) and append nothing. ``GET
/api/quests/{id}/artifacts`` and ``GET /api/quests/{id}/git/branches`` answer with
these, encoded as they are.

Error codes: ``invalid_filter`` (a kind the quest has no artifact of)."""

from __future__ import annotations

from typing import TypedDict

import msgspec

from ds_events.errors import Invalid
from ds_events.home import Quest
from projections.artifacts import Record, State, newest_records, record_document

from .checkpoints import git_graph

__all__ = ["ArtifactList", "BranchGraph", "GraphBranch", "GraphCommit", "list_artifacts", "branch_graph"]


class ArtifactList(msgspec.Struct, kw_only=True):
    quest_id: str
    seq: int  # the last event the view has seen
    counts: dict[str, int]  # records per kind, over the whole quest
    records: list[Record]  # the newest ``limit`` (of the kind asked for), oldest first


class GraphBranch(TypedDict):
    name: str
    head: str
    kind: str  # the kind the quest gave it (idea, main, ...), "main" or "other"
    worktree: str | None
    start_sha: str | None
    merge_base_with_main: str | None


class GraphCommit(TypedDict):
    sha: str
    parents: list[str]
    message: str  # the first line
    lane: str  # the first branch that reaches it along first parents
    time: int


class BranchGraph(TypedDict):
    quest_id: str
    active_branch: str
    branches: list[GraphBranch]  # main first
    commits: list[GraphCommit]  # oldest first
    truncated: bool  # more commits are reachable than were listed


def list_artifacts(quest: Quest, *, limit: int, kind: str | None = None) -> ArtifactList:
    """The newest ``limit`` records (of ``kind``, when given), oldest first, and the
    counts per kind. A kind the quest has no record of is ``invalid_filter``, naming
    the kinds it has."""
    quest.views.catch_up(keep=False)
    state: State
    with quest.views.lend("artifacts") as state:  # read in place: no copy of every record per request
        if kind is not None and kind not in state.counters:
            kinds = ", ".join(sorted(state.counters)) or "none"
            raise Invalid(f"no artifacts of kind {kind!r}; kinds here: {kinds}", code="invalid_filter", argument="kind")
        records = [record_document(r) for r in newest_records(state, limit, kind=kind)[::-1]]
        return ArtifactList(quest_id=quest.id, seq=state.last_seq, counts=dict(state.counters), records=records)


def branch_graph(quest: Quest, *, max_commits: int = 200) -> BranchGraph:
    """The quest's local branches and the newest ``max_commits`` commits they reach
    (:func:`~ds_events.services.artifacts.checkpoints.git_graph`)."""
    graph = git_graph(quest.repo(), quest.state("artifacts"), max_commits=max_commits)
    return BranchGraph(
        quest_id=quest.id,
        active_branch=graph["active_branch"],
        branches=graph["branches"],
        commits=graph["commits"],
        truncated=graph["truncated"],
    )
