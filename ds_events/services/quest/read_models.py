"""Read models of a quest for the daemon (and anyone else): workflow,
node traces, Canvas graphs (branch, event, stage) and the Canvas as SVG.

Every query catches the quest's views up with the log (events any process appended
since the last call) and answers from the in-memory projection states: nothing here
rereads the log, so a query costs the same on a 10k- and a 1M-event log. The branch
view also reads the quest's git refs (``ds_events.artifacts.branches``).

Errors: an unknown node ref raises ``NotFound`` (``unknown_node``), a view other than
branch|event|stage raises ``Invalid`` (``invalid_view``), a limit out of range raises
``Invalid`` (``invalid_limit``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, TypedDict, TypeVar

import msgspec

from ds_events.artifacts.branches import branch_view
from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest
from projections import artifacts as artifacts_projection, node_traces as traces_projection, workflow as workflow_projection
from projections.base import Projection
from projections.canvas import VIEWS, event_view, stage_view
from projections.canvas_svg import render_svg

__all__ = [
    "workflow", "node_traces", "node_trace", "canvas", "canvas_svg", "VIEWS",
    "WorkflowPage", "NodeTracesPage",
]  # fmt: skip

S = TypeVar("S")
_MAX_LIMIT = workflow_projection.WINDOW


class WorkflowPage(TypedDict):
    quest_id: str
    seq: int
    entries: list[dict[str, Any]]  # workflow entries as JSON (summary always, ref and status when set)
    changed_files: list[str]
    counts: dict[str, int]


class NodeTracesPage(TypedDict):
    quest_id: str
    seq: int
    nodes: list[dict[str, Any]]  # branch, stage and event nodes as JSON, without their action lists
    counts: dict[str, int]


def workflow(quest: Quest, *, limit: int = 200) -> WorkflowPage:
    """The newest ``limit`` workflow entries (newest first), the changed files (newest
    first) and the count of entries per kind over the whole log."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
        raise Invalid(f"limit must be an integer from 1 to {_MAX_LIMIT}, got {limit!r}", code="invalid_limit")
    with _lent(quest, workflow_projection.PROJECTION) as state:
        return {
            "quest_id": quest.id,
            "seq": state.last_seq,
            "entries": [_entry(e) for e in reversed(state.entries[-limit:])],
            "changed_files": list(reversed(state.changed_files)),
            "counts": dict(sorted(state.counts.items())),
        }


def node_traces(quest: Quest) -> NodeTracesPage:
    """Every node in the window: branch nodes, stage nodes, then event nodes (newest last)."""
    with _lent(quest, traces_projection.PROJECTION) as state:
        nodes = [_summary(n) for n in _ordered_branches(state)]
        nodes += [_summary(n) for n in sorted(state.stage_nodes.values(), key=lambda n: (n.branch, n.rank, n.first_seq))]
        nodes += [_summary(n) for n in state.event_nodes.values()]
        return {"quest_id": quest.id, "seq": state.last_seq, "nodes": nodes, "counts": dict(sorted(state.counts.items()))}


def node_trace(quest: Quest, ref: str) -> dict[str, Any]:
    """One node with its related actions: an event node's own actions; a stage node's
    event nodes; a branch node's stages and newest event nodes."""
    with _lent(quest, traces_projection.PROJECTION) as state:
        node = _node(state, ref)
        if node is None:
            raise NotFound(f"no node {ref!r} in quest {quest.id} (or it left the window)", code="unknown_node", ref=ref)
        out: dict[str, Any] = {"quest_id": quest.id, "seq": state.last_seq, **msgspec.to_builtins(node)}
        if isinstance(node, traces_projection.EventNode):
            out["related"] = []
        elif isinstance(node, traces_projection.StageNode):
            out["related"] = [_summary(state.event_nodes[r]) for r in node.event_refs if r in state.event_nodes]
        else:
            stages = [s for s in state.stage_nodes.values() if s.branch == node.branch]
            events = [e for e in state.event_nodes.values() if e.branch == node.branch][-traces_projection.ACTIONS :]
            out["related"] = [_summary(s) for s in sorted(stages, key=lambda s: (s.rank, s.first_seq))]
            out["related"] += [_summary(e) for e in events]
        return out


def canvas(quest: Quest, view: str) -> dict[str, Any]:
    """The Canvas graph ``view`` (branch | event | stage)."""
    if view not in VIEWS:
        raise Invalid(f"view must be one of {', '.join(VIEWS)}, got {view!r}", code="invalid_view", view=view)
    if view == "branch":
        with _lent(quest, artifacts_projection.PROJECTION) as state:
            return branch_view(quest.repo(), state, quest.id)
    with _lent(quest, traces_projection.PROJECTION) as traces:
        return event_view(traces, quest.id) if view == "event" else stage_view(traces, quest.id)


def canvas_svg(quest: Quest, view: str) -> str:
    """The Canvas graph ``view`` rendered as an SVG document."""
    return render_svg(canvas(quest, view))


# -- private helpers ----------------------------------------------------------------------


@contextlib.contextmanager
def _lent(quest: Quest, projection: Projection[S]) -> Iterator[S]:
    """The caught-up state of ``projection``, lent for the block (no copy of it is made
    unless an event arrives meanwhile: see ``Views.lend``). Everything returned is built
    from it inside the block."""
    quest.views.catch_up(keep=False)
    with _lent_state(quest, projection) as state:
        yield state


@contextlib.contextmanager
def _lent_state(quest: Quest, projection: Projection[S]) -> Iterator[S]:
    """``projection``'s state as it is (no catch-up), lent for the block, with its type."""
    with quest.views.lend(projection.name) as state:
        yield state


def _node(
    state: traces_projection.State, ref: str
) -> traces_projection.EventNode | traces_projection.StageNode | traces_projection.BranchNode | None:
    found = state.event_nodes.get(ref) or state.stage_nodes.get(ref)
    if found is None and ref.startswith("branch:"):
        return state.branch_nodes.get(ref.removeprefix("branch:"))
    return found


def _entry(entry: workflow_projection.Entry) -> dict[str, Any]:
    """An entry as JSON: ``summary`` always present, ``ref`` and ``status`` only when set."""
    return {"summary": "", **msgspec.to_builtins(entry)}


def _ordered_branches(state: traces_projection.State) -> list[traces_projection.BranchNode]:
    return sorted(state.branch_nodes.values(), key=lambda n: (n.branch != "main", n.seq, n.branch))


def _summary(node: msgspec.Struct) -> dict[str, Any]:
    """A node without its action list (the list view stays small)."""
    data: dict[str, Any] = msgspec.to_builtins(node)
    data.pop("actions", None)
    data.pop("event_refs", None)
    return data
