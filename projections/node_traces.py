"""The `node_traces` view: the quest as nodes a person can open, each with what happened to it.

- an ``event_node`` per durable artifact (artifact records, baselines, main runs, analysis
  campaigns and slices, checkpoints) with its related actions (the events that created
  and later touched it);
- a ``stage_node`` per (branch, canonical stage): scout, baseline, idea, experiment,
  analysis-campaign, write, finalize. ``decision`` is not a stage of its own: a decision
  is folded into the effective stage, the last anchor other than ``decision``;
- a ``branch_node`` per git branch the events mention.

Memory is bounded: the newest ``WINDOW`` event nodes (older ones are evicted, oldest
first), at most ``ACTIONS`` actions per node and ``ACTIONS`` event refs per stage node,
plus counts per event kind over the whole log.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from ds_events.events import Event, QuestAnchorChanged, QuestCreated
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    BranchPrepared,
    GitCheckpointed,
    MainExperimentRecorded,
)

from .base import Projection
from .workflow import record_title

__all__ = [
    "PROJECTION",
    "State",
    "EventNode",
    "StageNode",
    "BranchNode",
    "Action",
    "STAGES",
    "STAGE_RANK",
    "WINDOW",
    "ACTIONS",
]

STAGES: tuple[str, ...] = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize")
STAGE_RANK: dict[str, int] = {s: i for i, s in enumerate(STAGES)}
WINDOW = 500
ACTIONS = 20

# The stage an artifact record of each kind belongs to; kinds not listed (decision,
# progress, milestone, answer, approval, graph) go to the effective stage.
_RECORD_STAGE = {"baseline": "baseline", "idea": "idea", "run": "experiment", "report": "write"}


class Action(msgspec.Struct, kw_only=True):
    seq: int
    ts: str
    type: str  # the event's tag
    title: str


class EventNode(msgspec.Struct, kw_only=True):
    ref: str  # "<event_kind>:<id>", unique in the quest
    node_kind: str = "event_node"
    event_kind: str  # record kind (idea, decision, ...), baseline, run, campaign, slice, checkpoint
    title: str
    branch: str
    stage: str
    seq: int
    ts: str
    status: str | None = None
    actions: list[Action] = []


class StageNode(msgspec.Struct, kw_only=True):
    ref: str  # "stage:<branch>:<stage>"
    node_kind: str = "stage_node"
    branch: str
    stage: str
    rank: int
    first_seq: int
    last_seq: int
    first_ts: str
    last_ts: str
    event_count: int = 0
    event_refs: list[str] = []  # the newest ACTIONS event nodes of this stage


class BranchNode(msgspec.Struct, kw_only=True):
    ref: str  # "branch:<name>"
    node_kind: str = "branch_node"
    branch: str
    branch_kind: str
    parent: str | None
    seq: int
    ts: str
    head_sha: str | None = None
    checkpoint_count: int = 0
    event_count: int = 0


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    anchor: str = "scout"
    effective_stage: str = "scout"
    active_branch: str = "main"
    event_nodes: dict[str, EventNode] = {}  # insertion (= creation) order, oldest first
    stage_nodes: dict[str, StageNode] = {}
    branch_nodes: dict[str, BranchNode] = {}
    counts: dict[str, int] = {}  # event_kind -> event nodes ever made


def initial() -> State:
    return State()


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    if type(event) not in _FOLDED:  # most events (tool calls, shell output, memory) touch no node
        return state
    match event:
        case QuestCreated():
            _branch(state, "main", event)
        case QuestAnchorChanged(anchor=anchor):
            state.anchor = anchor
            if anchor != "decision":
                state.effective_stage = anchor
        case BranchPrepared(branch=name):
            node = state.branch_nodes.get(name)
            state.branch_nodes[name] = BranchNode(
                ref=f"branch:{name}", branch=name, branch_kind=event.branch_kind, parent=event.start_point or None,
                seq=event.seq, ts=event.ts, head_sha=event.start_sha,
                checkpoint_count=node.checkpoint_count if node else 0, event_count=node.event_count if node else 0,
            )  # fmt: skip
            if event.activate:
                state.active_branch = name
        case ArtifactRecorded(kind=kind, artifact_id=artifact_id):
            title = record_title(event.payload or {}, artifact_id)
            stage = _RECORD_STAGE.get(kind, state.effective_stage)
            _new_node(state, event, f"{kind}:{artifact_id}", kind, title, event.branch, stage)
        case BaselinePublished(baseline_id=baseline_id):
            _new_node(state, event, f"baseline:{baseline_id}", "baseline", f"Baseline {baseline_id}",
                      state.active_branch, "baseline", status="published")  # fmt: skip
        case BaselineAttached() | BaselineConfirmed():
            verb = event.TAG.rsplit("_", 1)[1]
            _touch(state, f"baseline:{event.baseline_id}", event, f"Baseline {verb}", status=verb)
        case MainExperimentRecorded(run=run):
            _new_node(state, event, f"run:{run}", "run", str(event.title or run), event.branch, "experiment", status="recorded")
        case AnalysisCampaignCreated(campaign_id=cid, parent_branch=parent):
            _new_node(state, event, f"campaign:{cid}", "campaign", str(event.title or cid), parent, "analysis-campaign",
                      status="open")  # fmt: skip
            for s in event.slices:
                _new_node(state, event, f"slice:{cid}/{s.get('slice_id')}", "slice", str(s.get("title") or s.get("slice_id")),
                          str(s.get("branch") or parent), "analysis-campaign", status="pending")  # fmt: skip
        case AnalysisSliceRecorded(campaign_id=cid, slice_id=sid, status=status):
            _touch(state, f"slice:{cid}/{sid}", event, f"Slice {status}", status=status)
            _touch(state, f"campaign:{cid}", event, f"Slice {sid} {status}")
        case GitCheckpointed(branch=branch, sha=sha):
            message = (event.message or "").splitlines()
            _new_node(state, event, f"checkpoint:{sha}", "checkpoint", message[0] if message else sha, branch,
                      state.effective_stage)  # fmt: skip
            node = _branch(state, branch, event)
            state.branch_nodes[branch] = replace(node, head_sha=sha, checkpoint_count=node.checkpoint_count + 1)
    return state


# -- private helpers ----------------------------------------------------------------------

# The types apply matches: one set lookup lets every other event pass.
_FOLDED: frozenset[type[Event]] = frozenset({
    QuestCreated, QuestAnchorChanged, BranchPrepared, ArtifactRecorded, BaselinePublished, BaselineAttached,
    BaselineConfirmed, MainExperimentRecorded, AnalysisCampaignCreated, AnalysisSliceRecorded, GitCheckpointed,
})  # fmt: skip


def _branch(state: State, name: str, event: Event) -> BranchNode:
    """The branch node ``name``, made when an event first mentions a branch we never saw prepared."""
    node = state.branch_nodes.get(name)
    if node is None:
        node = BranchNode(ref=f"branch:{name}", branch=name, branch_kind="main" if name == "main" else "other",
                          parent=None, seq=event.seq, ts=event.ts)  # fmt: skip
        state.branch_nodes[name] = node
    return node


def _new_node(
    state: State, event: Event, ref: str, kind: str, title: str, branch: str, stage: str, *, status: str | None = None
) -> None:
    action = Action(seq=event.seq, ts=event.ts, type=event.TAG, title=title)
    old = state.event_nodes.pop(ref, None)  # a re-recorded id moves to the newest end
    actions = [*old.actions, action][-ACTIONS:] if old else [action]
    state.event_nodes[ref] = EventNode(ref=ref, event_kind=kind, title=title, branch=branch, stage=stage,
                                       seq=event.seq, ts=event.ts, status=status, actions=actions)  # fmt: skip
    state.counts[kind] = state.counts.get(kind, 0) + 1
    if len(state.event_nodes) > WINDOW:
        del state.event_nodes[next(iter(state.event_nodes))]
    bnode = _branch(state, branch, event)
    state.branch_nodes[branch] = replace(bnode, event_count=bnode.event_count + 1)
    key = f"stage:{branch}:{stage}"
    snode = state.stage_nodes.get(key)
    if snode is None:
        snode = StageNode(ref=key, branch=branch, stage=stage, rank=STAGE_RANK.get(stage, len(STAGES)),
                          first_seq=event.seq, last_seq=event.seq, first_ts=event.ts, last_ts=event.ts)  # fmt: skip
    refs = [r for r in snode.event_refs if r != ref] + [ref]
    state.stage_nodes[key] = replace(snode, last_seq=event.seq, last_ts=event.ts, event_count=snode.event_count + 1,
                                     event_refs=refs[-ACTIONS:])  # fmt: skip


def _touch(state: State, ref: str, event: Event, title: str, *, status: str | None = None) -> None:
    """Add an action to a node still in the window (an evicted node stays evicted)."""
    node = state.event_nodes.get(ref)
    if node is None:
        return
    action = Action(seq=event.seq, ts=event.ts, type=event.TAG, title=title)
    changes: dict[str, Any] = {"actions": [*node.actions, action][-ACTIONS:]}
    if status is not None:
        changes["status"] = status
    state.event_nodes[ref] = replace(node, **changes)


PROJECTION: Projection[State] = Projection(name="node_traces", state_type=State, initial=initial, apply=apply)
