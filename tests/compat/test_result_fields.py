"""The result fields and refusals DeepScientist's callers read (issue 26, part 2), through a
real stdio `artifact` server: its names beside ours on a checkpoint, a summary, a graph, a
campaign slice, an idea and a branch activation; ``ok: false`` with ``error_code`` and
``validation_stage`` on a refused metric-contract call, which writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import mcp
import pytest

from ds_events.home import Home, Quest
from tests.compat.research_support import CONTRACT, LogWatch, artifact_client, confirm_baseline, ok
from tests.compat.test_artifact_forms import types_after


async def _refused(c: mcp.Client, tool: str, args: dict) -> dict:
    result = await c.call_tool(tool, args)
    assert result.is_error, result.structured_content
    payload = json.loads(result.content[0].text)
    assert payload["ok"] is False and payload["error"] and payload["message"], payload
    return payload


async def test_checkpoint_summary_and_graph_answer_with_deepscientists_names(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await ok(c, "prepare_branch", {"run_id": "r1"})
        (quest.root / ".ds/worktrees/run__r1/a.txt").write_text("a\n")
        cp = await ok(c, "checkpoint", {"message": "work on r1"})
        summary = await ok(c, "refresh_summary", {"reason": "test"})
        graph = await ok(c, "render_git_graph")
    assert cp["head"] == cp["sha"] and len(cp["head"]) == 40 and cp["committed"] is True
    assert Path(summary["summary_path"]) == quest.root / "SUMMARY.md"
    assert Path(summary["summary_path"]).read_text() == summary["markdown"]
    assert Path(graph["graph"]["json_path"]) == quest.root / graph["json_path"]
    assert Path(graph["graph"]["svg_path"]).read_text() == graph["svg"]


async def test_a_slice_answers_with_its_worktree_root_result_file_and_the_branch_it_returns_to(
    home: Home, quest: Quest
) -> None:
    async with artifact_client(home) as c:
        await confirm_baseline(c)
        await ok(c, "prepare_branch", {"run_id": "r1"})
        await ok(c, "record_main_experiment", {"run_id": "r1", "metrics_summary": {"top1": 0.92}})
        campaign = await ok(c, "create_analysis_campaign", {
            "campaign_title": "Why", "campaign_goal": "ablate", "parent_run_id": "r1",
            "slices": [{"slice_id": "a", "title": "no aug"}, {"slice_id": "b", "title": "half data"}],
        })  # fmt: skip
        planned = {s["slice_id"]: s for s in campaign["slices"]}
        assert planned["a"]["worktree_root"] == planned["a"]["worktree_path"] and Path(planned["a"]["worktree_root"]).is_dir()
        first = await ok(c, "record_analysis_slice", {"campaign_id": campaign["campaign_id"], "slice_id": "a",
                                                      "metrics_summary": {"top1": 0.90}})  # fmt: skip
        last = await ok(c, "record_analysis_slice", {"campaign_id": campaign["campaign_id"], "slice_id": "b",
                                                     "metrics_summary": {"top1": 0.88}})  # fmt: skip
    assert first["returned_to_branch"] is None  # the campaign still has a slice to run
    assert last["returned_to_branch"] == "run/r1"
    assert Path(campaign["parent_worktree_root"]) == quest.root / ".ds/worktrees/run__r1"
    body = json.loads(Path(last["result_json_path"]).read_text())
    assert [s["slice_id"] for s in body["slices"]] == ["a", "b"]


@pytest.mark.parametrize(
    ("tool", "args", "code", "stage", "ds_code"),
    [
        ("confirm_baseline", {"metric_contract": {"metrics": {"top1": {"description": "top-1"}}}},
         "invalid_metric_contract", "baseline", "baseline_metric_explanations_missing"),
        ("confirm_baseline", {"metrics_summary": {"top1": 0.9, "f1": 0.5}},
         "invalid_metric_contract", "baseline", "baseline_metric_contract_missing_entries"),
        ("confirm_baseline", {"primary_metric": "f1"}, "unknown_primary_metric", "baseline", "baseline_metric_values_missing"),
    ],
)  # fmt: skip
async def test_a_refused_baseline_contract_says_ok_false_error_code_and_stage_and_writes_nothing(
    home: Home, quest: Quest, tool: str, args: dict, code: str, stage: str, ds_code: str
) -> None:
    base = {"baseline_path": "baselines/resnet20", "baseline_id": "resnet20", "metric_contract": CONTRACT,
            "metrics_summary": {"top1": 0.9}, "primary_metric": "top1"}  # fmt: skip
    async with artifact_client(home) as c:
        await ok(c, "publish_baseline", {"payload": {"baseline_id": "resnet20", "title": "ResNet-20"}})
        seq = quest.log.last_seq
        err = await _refused(c, tool, {**base, **args})
    assert (err["error"], err["validation_stage"], err["error_code"]) == (code, stage, ds_code)
    assert types_after(quest, seq) == []
    assert not (quest.root / "baselines/resnet20/json/metric_contract.json").exists()


async def test_a_refused_main_experiment_names_its_stage_and_writes_nothing(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await confirm_baseline(c)
        seq = quest.log.last_seq
        err = await _refused(c, "record_main_experiment", {"run_id": "r1", "metrics_summary": {"loss": 0.3}})
        other = await _refused(c, "record", {"payload": {"kind": "nonsense"}})  # not a metric call: no stage
    assert err["error"] == "missing_metric_ids" and err["validation_stage"] == "main_experiment"
    assert err["error_code"] == "main_experiment_metric_validation_failed"
    assert "validation_stage" not in other and "error_code" not in other
    assert types_after(quest, seq) == []


async def test_a_candidate_idea_has_no_branch_keys_a_candidate_root_and_its_brief_echoed(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await confirm_baseline(c)
        log = LogWatch(quest)
        cand = await ok(c, "submit_idea", {
            "submission_mode": "candidate", "title": "Mixup", "problem": "p", "hypothesis": "h", "mechanism": "m",
            "method_brief": "mix pairs of images", "selection_scores": {"utility": 0.7}, "mechanism_family": "augmentation",
            "change_layer": "data", "source_lens": "literature",
        })  # fmt: skip
    assert not {"branch", "branch_no", "worktree", "worktree_root"} & set(cand)
    assert Path(cand["candidate_root"]).is_dir() and Path(cand["candidate_root"]).is_relative_to(quest.root / "ideas")
    assert (cand["method_brief"], cand["selection_scores"]) == ("mix pairs of images", {"utility": 0.7})
    assert (cand["mechanism_family"], cand["change_layer"], cand["source_lens"]) == ("augmentation", "data", "literature")
    assert log.types() == ["research.idea_submitted"]  # no branch was prepared


async def test_a_report_without_a_title_takes_its_summarys_first_line(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        made = await ok(c, "record", {"payload": {"kind": "report", "summary": "Seeds agree within 0.1.\nMore detail."}})
        typed = await ok(c, "record", {"payload": {"kind": "report", "report_type": "ablation_digest"}})
        err = await _refused(c, "record", {"payload": {"kind": "idea"}})  # an idea still needs its title
    (first, second) = quest.log.read(types=["artifact.recorded"])
    assert first.artifact_id == made["artifact_id"] and first.payload["title"] == "Seeds agree within 0.1."
    assert second.artifact_id == typed["artifact_id"] and second.payload["title"] == "Ablation digest"  # its report_type, said as words
    assert err["error"] == "missing_fields"


async def test_activating_a_branch_reports_the_next_anchor(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await confirm_baseline(c)
        idea = await ok(c, "submit_idea", {"title": "Adapter", "problem": "p", "hypothesis": "h", "mechanism": "m"})
        fresh = await ok(c, "activate_branch", {"branch": idea["branch"]})
        await ok(c, "prepare_branch", {"run_id": "r1", "idea_id": idea["idea_id"]})
        await ok(c, "record_main_experiment", {"run_id": "r1", "idea_id": idea["idea_id"], "metrics_summary": {"top1": 0.93}})
        after = await ok(c, "activate_branch", {"branch": idea["branch"]})
    assert fresh["next_anchor"] == "experiment" and fresh.get("latest_main_run_id") is None
    assert after["next_anchor"] == "decision" and after["latest_main_run_id"] == "r1"
