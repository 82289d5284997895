"""The results side in DeepScientist's forms, through a real stdio MCP server:
``get_method_scoreboard`` and ``get_optimization_frontier`` (queries of the artifacts
view: they append nothing), and ``record_analysis_slice`` with metric rows, evidence,
evaluation and narrative, reporting the campaign's completion and the next slice."""

from __future__ import annotations

import json

import mcp

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.compat.test_artifact_forms import call, server, types_after

CONTRACT = {"metrics": {"loss": {"description": "test loss", "derivation": "mean CE", "source_ref": "eval.py", "direction": "lower"}}}


async def test_scoreboard_and_frontier_rank_lines_by_the_primary_metrics_direction(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        await call(c, "confirm_baseline", baseline_path="baselines/local/b", baseline_id="b", metric_contract=CONTRACT,
                   metrics_summary={"loss": 0.5}, primary_metric="loss")  # fmt: skip
        for n, title in ((1, "Adapter"), (2, "Wider head"), (3, "Distillation")):
            await call(c, "record", payload={"kind": "idea", "title": title, "method_brief": f"brief {n}"})
        await call(c, "prepare_branch", idea_id="idea-0001", branch_kind="idea", create_worktree_flag=False)
        await call(c, "prepare_branch", idea_id="idea-0002", branch_kind="idea", create_worktree_flag=False)
        await call(c, "record_main_experiment", run_id="r1", idea_id="idea-0001", metrics_summary={"loss": 0.40}, summary="adapter run")
        await call(c, "record_main_experiment", run_id="r2", idea_id="idea-0002", metrics_summary={"loss": 0.45})
        await call(c, "record", payload={"kind": "report", "title": "candidate", "report_type": "optimization_candidate",
                                         "candidate_id": "cand-1", "status": "proposed", "idea_id": "idea-0001"})  # fmt: skip
        seq = quest.log.last_seq
        board = (await call(c, "get_method_scoreboard", comment="turn start"))["scoreboard"]
        frontier = (await call(c, "get_optimization_frontier"))["optimization_frontier"]
        assert types_after(quest, seq) == []  # queries append no domain events
    assert board["primary_metric"] == "loss" and board["direction"] == "lower" and board["entry_count"] == 3
    # the incumbent is the best line by the metric's direction (lower loss), not the newest
    assert board["incumbent_line_key"] == "idea-0001" and board["incumbent_title"] == "Adapter"
    lines = {e["line_key"]: e for e in board["entries"]}
    assert lines["idea-0001"]["best_run_id"] == "r1" and lines["idea-0001"]["delta_vs_baseline"] == 0.40 - 0.5
    assert lines["idea-0001"]["breakthrough"] is True and lines["idea-0001"]["latest_run_summary"] == "adapter run"
    assert lines["idea-0002"]["status"] == "main_verified" and lines["idea-0003"]["run_count"] == 0
    assert frontier["mode"] == "exploit" and frontier["best_run"]["run_id"] == "r1"
    assert [b["line_key"] for b in frontier["top_branches"]] == ["idea-0001", "idea-0002"]
    assert [b["idea_id"] for b in frontier["candidate_briefs"]] == ["idea-0003"]
    assert frontier["candidate_briefs"][0]["method_brief"] == "brief 3"
    assert frontier["implementation_candidates"][0]["candidate_id"] == "cand-1"
    assert frontier["candidate_backlog"]["active_implementation_candidate_count"] == 1


async def test_analysis_slices_keep_metrics_evidence_and_evaluation(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        await call(c, "waive_baseline", reason="exploratory quest")
        await call(c, "record_main_experiment", run_id="r1", metrics_summary={"acc": 0.8})
        campaign = await call(c, "create_analysis_campaign", campaign_title="Why", campaign_goal="ablate", parent_run_id="r1",
                              slices=[{"slice_id": "no-aug", "title": "no augmentation"},
                                      {"slice_id": "half", "title": "half data"}])  # fmt: skip
        seq = quest.log.last_seq
        first = await call(
            c, "record_analysis_slice", campaign_id=campaign["campaign_id"], slice_id="no-aug", setup="drop aug",
            execution="ran 3 seeds", results="acc fell", evidence_paths=["experiments/analysis/no-aug/eval.json"],
            metric_rows=[{"metric_id": "acc", "value": 0.84, "direction": "higher_better"}],
            deviations=["2 seeds instead of 3"], claim_impact="augmentation matters", next_recommendation="try half data",
            evaluation_summary={"takeaway": "aug helps", "next_action": "continue"},
        )  # fmt: skip
        assert first["completed"] is False and first["campaign_complete"] is False
        assert first["next_slice"]["slice_id"] == "half" and first["remaining_slice_ids"] == ["half"]
        assert first["metrics_summary"] == {"acc": 0.84} and first["evaluation_summary"]["takeaway"] == "aug helps"
        (event,) = [e for e in quest.log.read(after_seq=seq) if e.type == "artifact.analysis_slice_recorded"]
        assert event.metric_rows[0]["metric_id"] == "acc" and event.evidence_paths == ["experiments/analysis/no-aug/eval.json"]
        assert event.report["deviations"] == ["2 seeds instead of 3"] and event.report["claim_impact"] == "augmentation matters"
        assert event.setup == "drop aug" and event.evaluation_summary == {"takeaway": "aug helps", "next_action": "continue"}
        last = await call(c, "record_analysis_slice", campaign_id=campaign["campaign_id"], slice_id="half", status="failed")
        assert last["completed"] is True and last["next_slice"] is None
    path = quest.root / campaign["path"]
    body = json.loads(path.read_text())
    assert body["slices"][0]["evidence_paths"] == ["experiments/analysis/no-aug/eval.json"]
    before = path.read_bytes()
    path.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert path.read_bytes() == before


async def test_the_frontier_lists_candidate_ideas_until_they_are_promoted(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        await call(c, "waive_baseline", reason="exploratory quest")
        cand = await call(c, "submit_idea", mode="create", submission_mode="candidate", title="Frontier candidate",
                          problem="p", hypothesis="h", mechanism="m", method_brief="keep it branchless first",
                          selection_scores={"utility": 0.71})  # fmt: skip
        frontier = (await call(c, "get_optimization_frontier"))["optimization_frontier"]
        assert [b["idea_id"] for b in frontier["candidate_briefs"]] == [cand["idea_id"]]
        assert frontier["candidate_briefs"][0]["method_brief"] == "keep it branchless first"
        assert frontier["candidate_briefs"][0]["selection_scores"] == {"utility": 0.71} and frontier["mode"] == "explore"
        line = await call(c, "submit_idea", mode="create", submission_mode="line", source_candidate_id=cand["idea_id"],
                          title="Promoted", problem="p", hypothesis="h", mechanism="m")  # fmt: skip
        await call(c, "record_main_experiment", run_id="r1", metrics_summary={"acc": 0.7})
        frontier = (await call(c, "get_optimization_frontier"))["optimization_frontier"]
        assert frontier["candidate_briefs"] == [] and frontier["best_run"]["idea_id"] == line["idea_id"]
        board = (await call(c, "get_method_scoreboard"))["scoreboard"]
        assert board["incumbent_line_key"] == line["idea_id"] and board["entries"][0]["branch"] == line["branch"]
