"""Canvas graphs: the event view and the stage view, pure functions of the `node_traces`
state (so ``ds replay`` rebuilds them with it), and the shape every canvas view shares.

- event view: the durable-event nodes in time order, with a ``sequence`` edge between
  consecutive nodes of the same branch;
- stage view: the stage nodes, with a ``stage`` edge between consecutive stages of a
  branch ordered by canonical stage rank, then time.

The branch view needs git (refs, ahead/behind), so it is built in
``ds_events.artifacts.branches`` and only its final shape is shared: :func:`graph`.
"""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from .node_traces import State

__all__ = ["VIEWS", "event_view", "stage_view", "graph"]

VIEWS: tuple[str, ...] = ("branch", "event", "stage")


def graph(view: str, quest_id: str, seq: int, nodes: list[dict[str, Any]], edges: list[dict[str, Any]],
          views: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """The canvas document every view returns."""
    return {"view": view, "quest_id": quest_id, "seq": seq, "nodes": nodes, "edges": edges, "views": views or {}}


def event_view(state: State, quest_id: str) -> dict[str, Any]:
    ordered = sorted(state.event_nodes.values(), key=lambda n: n.seq)
    nodes = [{**msgspec.to_builtins(n), "id": n.ref, "label": n.title} for n in ordered]
    edges: list[dict[str, Any]] = []
    last_on: dict[str, str] = {}
    for n in ordered:
        previous = last_on.get(n.branch)
        if previous is not None and previous != n.ref:
            edges.append({"source": previous, "target": n.ref, "relation": "sequence", "branch": n.branch})
        last_on[n.branch] = n.ref
    return graph("event", quest_id, state.last_seq, nodes, edges)


def stage_view(state: State, quest_id: str) -> dict[str, Any]:
    ordered = sorted(state.stage_nodes.values(), key=lambda n: (n.branch != "main", n.branch, n.rank, n.first_seq))
    nodes = [{**msgspec.to_builtins(n), "id": n.ref, "label": f"{n.stage} ({n.branch})"} for n in ordered]
    edges: list[dict[str, Any]] = []
    for a, b in itertools.pairwise(ordered):
        if a.branch == b.branch:
            edges.append({"source": a.ref, "target": b.ref, "relation": "stage", "branch": a.branch})
    # A branch's first stage hangs off the stage of its parent branch active when it began.
    first: dict[str, Any] = {}
    for n in ordered:
        first.setdefault(n.branch, n)
    sliced = _slice_parents(state)
    for name, n in first.items():
        bnode = state.branch_nodes.get(name)
        parent = (bnode.parent if bnode else None) or sliced.get(name)
        candidates = [p for p in ordered if p.branch == parent and p.first_seq <= n.first_seq]
        if candidates:
            src = max(candidates, key=lambda p: (p.first_seq, p.rank))
            edges.append({"source": src.ref, "target": n.ref, "relation": "branch", "branch": name})
    return graph("stage", quest_id, state.last_seq, nodes, edges)


def _slice_parents(state: State) -> dict[str, str]:
    """An analysis slice's branch -> the branch its campaign was opened on.

    A slice's branch is made by the campaign, not prepared on its own, so its branch
    node knows no parent; without this its stage would float unconnected."""
    out: dict[str, str] = {}
    for node in state.event_nodes.values():
        if node.event_kind != "slice":
            continue
        campaign_id = node.ref.removeprefix("slice:").split("/", 1)[0]
        campaign = state.event_nodes.get(f"campaign:{campaign_id}")
        if campaign is not None and campaign.branch != node.branch:
            out.setdefault(node.branch, campaign.branch)
    return out
