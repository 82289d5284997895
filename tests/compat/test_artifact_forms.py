"""DeepScientist's artifact call forms, sent through a real stdio MCP server
(``python -m ds_events mcp --namespace artifact``): a baseline published with ``name``,
``primary_metric`` as an object and ``baseline_variants``; attached; confirmed with only
its path, id, variant and summary; a branch prepared with ``create_worktree_flag``; a
main experiment recorded with ``metric_rows`` and its narrative. Each step checks the
fields DeepScientist's callers read and the events that land in the log; replay then
rebuilds every file the calls produced, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.helpers import stdio_server


def server(home: Home, quest_id: str = "q1") -> mcp.StdioServerParameters:
    return stdio_server(home, "artifact", quest_id)


async def call(c: mcp.Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await c.call_tool(tool, args)
    assert not result.is_error, result.content
    data = result.structured_content
    assert data is not None and data["ok"] is True
    return data


def contract(metric_ids: list[str], **extra: Any) -> dict[str, Any]:
    """A contract in DeepScientist's list form."""
    return {
        "primary_metric_id": metric_ids[0],
        "metrics": [
            {"metric_id": m, "label": m, "direction": "maximize", "description": f"canonical {m}",
             "derivation": f"read {m} from eval.py output", "source_ref": "paper table 2 + eval.py", "required": True}
            for m in metric_ids
        ],
        **extra,
    }  # fmt: skip


def types_after(quest: Quest, seq: int) -> list[str]:
    return [e.type for e in quest.log.read(after_seq=seq) if not e.type.startswith("tool.")]


async def test_the_baseline_to_main_experiment_loop_in_deepscientists_forms(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        seq = quest.log.last_seq
        published = await call(
            c, "publish_baseline",
            payload={
                "baseline_id": "mcp-baseline", "name": "MCP Baseline", "summary": "published from the compat test",
                "primary_metric": {"name": "accuracy", "value": 0.9}, "metrics_summary": {"accuracy": 0.9},
                "metric_contract": contract(["accuracy"], evaluation_protocol={"scope_id": "full", "code_paths": ["eval.py"]}),
                "baseline_variants": [{"variant_id": "main", "label": "Main"}], "default_variant_id": "main",
            },
        )  # fmt: skip
        assert published["baseline_registry_entry"]["baseline_id"] == "mcp-baseline"
        assert published["baseline_registry_entry"]["source_quest"] == "q1"
        assert published["variant_ids"] == ["main"]
        assert types_after(quest, seq) == ["artifact.baseline_published"]
        registry = json.loads((home.root / "baselines" / "mcp-baseline.json").read_text())
        assert registry["title"] == "MCP Baseline" and registry["source_quest"] == "q1"

        attached = await call(c, "attach_baseline", baseline_id="mcp-baseline", variant_id="main")
        assert attached["attachment"]["source_variant_id"] == "main"

        seq = quest.log.last_seq
        confirmed = await call(
            c, "confirm_baseline", baseline_path="baselines/imported/mcp-baseline", baseline_id="mcp-baseline",
            variant_id="main", summary="MCP baseline confirmed",
        )  # fmt: skip
        assert confirmed["baseline_gate"] == "confirmed"
        assert confirmed["confirmed_baseline_ref"]["baseline_id"] == "mcp-baseline"
        assert confirmed["primary_metric"] == "accuracy" and confirmed["metric_directions"] == {"accuracy": "higher"}
        written = json.loads(Path(confirmed["metric_contract_json_path"]).read_text())
        assert written["metrics"]["accuracy"]["value"] == 0.9
        assert written["evaluation_protocol"] == {"scope_id": "full", "code_paths": ["eval.py"]}
        (event,) = [e for e in quest.log.read(after_seq=seq) if e.type == "artifact.baseline_confirmed"]
        assert event.summary == "MCP baseline confirmed" and event.variant_id == "main" and event.primary_metric == "accuracy"

        branch = await call(c, "prepare_branch", run_id="run-branch-001", branch_kind="run", create_worktree_flag=False)
        assert branch["branch"].startswith("run/") and branch["worktree"] is None

        seq = quest.log.last_seq
        main = await call(
            c, "record_main_experiment", run_id="main-mcp-001", title="Main MCP run",
            hypothesis="Adapter improves accuracy.", setup="Use baseline recipe.", execution="Ran full validation.",
            results="Accuracy improved.", conclusion="Ready for follow-up.",
            metric_rows=[{"metric_id": "accuracy", "value": 0.93, "split": "test"}],
            evidence_paths=["experiments/main/main-mcp-001/eval.json"],
            evaluation_summary={"takeaway": "The run clears the accepted baseline.", "claim_update": "strengthens",
                                "baseline_relation": "better", "comparability": "high", "failure_mode": "none",
                                "next_action": "analysis_campaign"},
        )  # fmt: skip
        assert Path(main["result_json_path"]).exists() and Path(main["run_md_path"]).exists()
        assert main["progress_eval"]["breakthrough"] is True and main["progress_eval"]["breakthrough_level"] == "minor"
        assert main["progress_eval"]["delta_vs_baseline"] == 0.93 - 0.9
        assert main["evaluation_summary"]["next_action"] == "analysis_campaign"
        assert main["branch"] == "run/main-mcp-001" and main["verdict"] == "supported"
        assert main["metrics_summary"] == {"accuracy": 0.93}
        assert types_after(quest, seq) == ["git.branch_prepared", "artifact.main_experiment_recorded"]
        recorded = next(e for e in quest.log.read(after_seq=seq) if e.type == "artifact.main_experiment_recorded")
        assert recorded.hypothesis == "Adapter improves accuracy." and recorded.conclusion == "Ready for follow-up."
        assert recorded.metric_rows == [{"metric_id": "accuracy", "value": 0.93, "split": "test"}]
        assert recorded.evidence_paths == ["experiments/main/main-mcp-001/eval.json"]
        assert recorded.progress["beats_baseline"] is True
        assert str(quest.repo().branches.local["run/main-mcp-001"].target) == main["head_sha"]
        result_json = json.loads(Path(main["result_json_path"]).read_text())
        assert result_json["progress_eval"]["breakthrough"] is True and result_json["hypothesis"] == "Adapter improves accuracy."
        page = Path(main["run_md_path"]).read_text()
        for text in ("# Main MCP run", "## Hypothesis", "Adapter improves accuracy.", "## Conclusion", "breakthrough (minor)",
                     "experiments/main/main-mcp-001/eval.json", "next action: analysis_campaign"):  # fmt: skip
            assert text in page, text

        # a second run that does not beat the first is no breakthrough, by the contract's direction
        second = await call(c, "record_main_experiment", run_id="main-mcp-002", metric_rows=[{"metric_id": "accuracy", "value": 0.92}])
        assert second["progress_eval"]["breakthrough"] is False and second["progress_eval"]["beats_baseline"] is True
        assert second["progress_eval"]["previous_best_value"] == 0.93 and second["verdict"] == "recorded"

    produced = [quest.root / "artifacts" / "runs" / f"main-mcp-00{i}.{x}" for i in (1, 2) for x in ("json", "md")]
    produced += [quest.root / "baselines" / "imported" / "mcp-baseline" / "json" / "metric_contract.json",
                 quest.root / "artifacts" / "baselines" / "mcp-baseline.json", quest.root / "SUMMARY.md"]  # fmt: skip
    before = {p: p.read_bytes() for p in produced}
    for p in produced:
        p.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert {p: p.read_bytes() for p in produced} == before


async def test_a_baseline_published_by_one_quest_is_attached_and_confirmed_by_another(home: Home, quest: Quest) -> None:
    other = home.create_quest("Second quest", quest_id="q2")
    try:
        async with mcp.Client(server(home, "q1")) as c:
            await call(c, "publish_baseline", payload={
                "baseline_id": "shared-sigma", "name": "Shared", "summary": "lower is better",
                "metrics_summary": {"sigma_max": 0.6921, "raw_false": 0.2149},
                "primary_metric": {"metric_id": "sigma_max", "value": 0.6921, "direction": "lower_better"},
                "metric_contract": {"metrics": [
                    {"metric_id": m, "description": m, "derivation": "eval.py", "source_ref": "paper", "direction": "lower_better"}
                    for m in ("sigma_max", "raw_false")]},
            })  # fmt: skip
        async with mcp.Client(server(home, "q2")) as c:
            attached = await call(c, "attach_baseline", baseline_id="shared-sigma")
            assert attached["attachment"]["source_quest"] == "q1"
            confirmed = await call(c, "confirm_baseline", baseline_path="baselines/imported/shared-sigma")
            assert confirmed["baseline_id"] == "shared-sigma" and confirmed["primary_metric"] == "sigma_max"
            assert confirmed["metric_directions"] == {"raw_false": "lower", "sigma_max": "lower"}
            main = await call(c, "record_main_experiment", run_id="r1", metric_rows=[
                {"metric_id": "sigma_max", "value": 0.2477, "direction": "lower_better"},
                {"metric_id": "raw_false", "value": 0.2063, "direction": "lower_better"}])  # fmt: skip
            assert main["progress_eval"]["breakthrough"] is True and main["primary"]["better"] is True
        (event,) = [e for e in other.log.read() if e.type == "artifact.baseline_attached"]
        assert event.source_quest == "q1" and event.entry["payload"]["summary"] == "lower is better"
        # q2's files replay from q2's log alone (the registry entry travelled in the event)
        path = other.root / "baselines" / "imported" / "shared-sigma" / "json" / "metric_contract.json"
        before = path.read_bytes()
        path.unlink()
        replay_quest(other.root, quest_id="q2")
        assert path.read_bytes() == before
    finally:
        other.close()
