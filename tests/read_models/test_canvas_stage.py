"""The stage view connects every stage (issue 24 part 8: "a stage-view node drawn
unconnected"): an analysis slice's branch is made by its campaign, never prepared on its
own, so its branch node knows no parent and its stage floated alone. Folded here over the
recorded log of a whole ``ds demo`` run (pure: no home, no git)."""

from __future__ import annotations

from pathlib import Path

from ds_events.events import decode_line
from projections import node_traces
from projections.canvas import stage_view

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "demo_quest.jsonl"


def _folded() -> node_traces.State:
    state = node_traces.initial()
    for line in LOG.read_bytes().splitlines():
        state = node_traces.apply(state, decode_line(line))
    return state


def test_the_stage_of_an_analysis_slice_hangs_off_the_stage_its_campaign_was_opened_in() -> None:
    state = _folded()
    doc = stage_view(state, "demo")
    nodes = {n["id"] for n in doc["nodes"]}
    touched = {e["source"] for e in doc["edges"]} | {e["target"] for e in doc["edges"]}
    assert nodes - touched == set(), "stages drawn without an edge"
    (slice_stage,) = [n for n in nodes if n.startswith("stage:analysis/")]
    (edge,) = [e for e in doc["edges"] if e["target"] == slice_stage]
    campaign = next(n for n in state.event_nodes.values() if n.event_kind == "campaign")
    assert edge["relation"] == "branch" and edge["source"] == f"stage:{campaign.branch}:analysis-campaign"
    assert state.branch_nodes[slice_stage.split(":")[1]].parent is None  # the node itself still knows none
