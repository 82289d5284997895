"""The node_traces projection: event nodes with their actions, stage nodes per branch
and canonical stage (decision folded into the effective stage), branch nodes, a
bounded window; and the event and stage Canvas views built from it."""

from __future__ import annotations

import msgspec

from ds_events.events import Event
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BranchPrepared,
    GitCheckpointed,
    MainExperimentRecorded,
)
from ds_events.events.core import QuestAnchorChanged, QuestCreated
from projections import fold, node_traces as nt
from projections.canvas import event_view, stage_view


def _numbered(events: list[Event]) -> list[Event]:
    return [msgspec.structs.replace(e, seq=i, ts=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z") for i, e in enumerate(events, 1)]


def _quest() -> list[Event]:
    return _numbered([
        QuestCreated(title="q"),
        QuestAnchorChanged(anchor="idea"),
        ArtifactRecorded(artifact_id="idea-0001", kind="idea", payload={"title": "Warmup"}),
        QuestAnchorChanged(anchor="decision"),
        ArtifactRecorded(artifact_id="decision-0001", kind="decision", payload={"verdict": "go", "action": "prepare_branch"}),
        BranchPrepared(branch="run/w1", branch_kind="run", start_sha="s0", start_point="main", run="w1", idea_id="idea-0001"),
        QuestAnchorChanged(anchor="experiment"),
        GitCheckpointed(sha="s1", message="train", branch="run/w1"),
        MainExperimentRecorded(run="w1", title="Warmup run", baseline_id="b", metrics_summary={"acc": 0.9}, branch="run/w1"),
        AnalysisCampaignCreated(campaign_id="c1", title="Ablate", goal="why", parent_run="w1", parent_branch="run/w1",
                                parent_sha="s1", slices=[{"slice_id": "s-a", "title": "no warmup", "branch": "analysis/c1-a"}]),
        AnalysisSliceRecorded(campaign_id="c1", slice_id="s-a", status="completed", summary="worse"),
    ])  # fmt: skip


def test_event_nodes_carry_their_related_actions_and_status() -> None:
    state = fold(nt.PROJECTION, _quest())
    assert list(state.event_nodes) == ["idea:idea-0001", "decision:decision-0001", "checkpoint:s1", "run:w1", "campaign:c1", "slice:c1/s-a"]
    sl = state.event_nodes["slice:c1/s-a"]
    assert sl.status == "completed" and sl.branch == "analysis/c1-a"
    assert [a.type for a in sl.actions] == ["artifact.analysis_campaign_created", "artifact.analysis_slice_recorded"]
    assert [a.title for a in state.event_nodes["campaign:c1"].actions] == ["Ablate", "Slice s-a completed"]
    assert state.event_nodes["decision:decision-0001"].title == "go → prepare_branch"


def test_decision_is_folded_into_the_effective_stage() -> None:
    state = fold(nt.PROJECTION, _quest())
    assert state.anchor == "experiment"
    assert state.event_nodes["decision:decision-0001"].stage == "idea"  # anchor was decision, after idea
    assert set(state.stage_nodes) == {
        "stage:main:idea", "stage:run/w1:experiment", "stage:run/w1:analysis-campaign", "stage:analysis/c1-a:analysis-campaign",
    }  # fmt: skip
    assert state.stage_nodes["stage:main:idea"].event_refs == ["idea:idea-0001", "decision:decision-0001"]
    assert all(s.stage in nt.STAGES for s in state.stage_nodes.values())


def test_branch_nodes_record_kind_parent_head_and_checkpoints() -> None:
    state = fold(nt.PROJECTION, _quest())
    run = state.branch_nodes["run/w1"]
    assert (run.branch_kind, run.parent, run.head_sha, run.checkpoint_count) == ("run", "main", "s1", 1)
    assert state.branch_nodes["main"].branch_kind == "main"
    assert state.branch_nodes["analysis/c1-a"].branch_kind == "other"  # seen only through its campaign


def test_event_view_links_nodes_of_a_branch_in_time_order() -> None:
    graph = event_view(fold(nt.PROJECTION, _quest()), "q1")
    assert graph["view"] == "event" and graph["seq"] == 11
    assert [(e["source"], e["target"], e["relation"]) for e in graph["edges"]] == [
        ("idea:idea-0001", "decision:decision-0001", "sequence"),
        ("checkpoint:s1", "run:w1", "sequence"),
        ("run:w1", "campaign:c1", "sequence"),
    ]


def test_stage_view_orders_stages_by_canonical_rank_then_time() -> None:
    events = _numbered([
        QuestAnchorChanged(anchor="write"),
        ArtifactRecorded(artifact_id="report-0001", kind="report", payload={"title": "draft"}),
        ArtifactRecorded(artifact_id="idea-0001", kind="idea", payload={"title": "late idea"}),
        ArtifactRecorded(artifact_id="baseline-0001", kind="baseline", payload={"title": "b"}),
    ])  # fmt: skip
    graph = stage_view(fold(nt.PROJECTION, events), "q1")
    assert [n["stage"] for n in graph["nodes"]] == ["baseline", "idea", "write"]
    assert [(e["source"], e["target"]) for e in graph["edges"]] == [
        ("stage:main:baseline", "stage:main:idea"),
        ("stage:main:idea", "stage:main:write"),
    ]


def test_the_window_keeps_the_newest_nodes_and_counts_them_all() -> None:
    events = [ArtifactRecorded(artifact_id=f"progress-{i}", kind="progress", payload={"message": "m"}) for i in range(5000)]
    events += [GitCheckpointed(sha=f"s{i}", message="c", branch="main") for i in range(10)]
    state = fold(nt.PROJECTION, _numbered(events))
    assert len(state.event_nodes) == nt.WINDOW
    assert next(iter(state.event_nodes)) == f"progress:progress-{5000 - nt.WINDOW + 10}"
    assert state.counts == {"progress": 5000, "checkpoint": 10}
    stage = state.stage_nodes["stage:main:scout"]
    assert stage.event_count == 5010 and len(stage.event_refs) == nt.ACTIONS
    assert state.branch_nodes["main"].checkpoint_count == 10
