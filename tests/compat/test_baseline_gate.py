"""The baseline gate in DeepScientist's forms, through a real stdio MCP server:
``waive_baseline`` opens it without a baseline (main runs are then recorded without a
comparison), ``confirm_baseline`` takes ``primary_metric`` as a string or an object and
``lower_better``/``higher_better`` directions, ``overwrite_baseline`` refreshes the
confirmed baseline in place and refuses what would break comparability."""

from __future__ import annotations

import json
from pathlib import Path

import mcp

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.compat.test_artifact_forms import call, server, types_after

CONTRACT = {
    "metrics": [
        {"metric_id": "acc", "description": "accuracy", "derivation": "correct/total", "source_ref": "eval.py"},
        {"metric_id": "loss", "description": "test loss", "derivation": "mean CE", "source_ref": "eval.py"},
    ],
    "evaluation_protocol": {"scope_id": "full"},
}


async def test_a_waived_gate_lets_main_runs_in_without_a_comparison(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        refused = await c.call_tool("record_main_experiment", {"run_id": "r0", "metrics_summary": {"acc": 0.8}})
        assert refused.is_error and "no_confirmed_baseline" in refused.content[0].text
        await call(c, "record", payload={"kind": "decision", "verdict": "go", "action": "continue", "reason": "to baseline",
                                         "next_anchor": "baseline"})  # fmt: skip
        seq = quest.log.last_seq
        waived = await call(c, "waive_baseline", reason="a new task: no published method exists", comment="agreed with the user")
        assert waived["baseline_gate"] == "waived" and waived["anchor"] == "idea"
        assert types_after(quest, seq) == ["artifact.baseline_waived", "quest.anchor_changed"]
        first = await call(c, "record_main_experiment", run_id="r1", metrics_summary={"acc": 0.8},
                           metric_directions={"acc": "higher_better"}, hypothesis="h")  # fmt: skip
        assert first["baseline_id"] is None and first["comparisons"] == {}
        assert first["progress_eval"]["breakthrough"] is False and first["progress_eval"]["baseline_value"] is None
        second = await call(c, "record_main_experiment", run_id="r2", metric_rows=[{"metric_id": "acc", "value": 0.85}])
        assert second["progress_eval"]["breakthrough"] is True and second["progress_eval"]["breakthrough_level"] == "major"
        assert second["progress_eval"]["improved_over_previous_best"] is True
    assert "baseline gate **waived**: a new task" in (quest.root / "SUMMARY.md").read_text()
    assert "none (gate waived)" in (quest.root / "artifacts" / "runs" / "r1.md").read_text()


async def test_confirm_takes_deepscientists_primary_metric_and_direction_forms(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        seq = quest.log.last_seq
        confirmed = await call(
            c, "confirm_baseline", baseline_path="baselines/local/b1", baseline_id="b1", metric_contract=CONTRACT,
            metrics_summary={"loss": 0.41}, primary_metric={"metric_id": "acc", "value": 0.8},
            metric_directions={"acc": "higher_better", "loss": "lower_better"}, summary="s", comment="first pass",
        )  # fmt: skip
        assert confirmed["metric_directions"] == {"acc": "higher", "loss": "lower"} and confirmed["primary_metric"] == "acc"
        (event,) = [e for e in quest.log.read(after_seq=seq) if e.type == "artifact.baseline_confirmed"]
        assert event.metrics_summary == {"loss": 0.41, "acc": 0.8}  # the primary metric's value joined the numbers
        assert event.comment == "first pass"
        # the string form names the primary metric of a second baseline
        string_form = await call(c, "confirm_baseline", baseline_path="baselines/local/b2", baseline_id="b2",
                                 metric_contract=CONTRACT, metrics_summary={"acc": 0.7, "loss": 0.5}, primary_metric="loss",
                                 metric_directions={"loss": "minimize"})  # fmt: skip
        assert string_form["primary_metric"] == "loss" and string_form["metric_directions"]["loss"] == "lower"
        worse = await call(c, "record_main_experiment", run_id="r1", baseline_id="b2", metrics_summary={"acc": 0.9, "loss": 0.6})
        assert worse["progress_eval"]["beats_baseline"] is False and worse["verdict"] == "inconclusive"
        assert worse["primary"]["better"] is False


async def test_overwrite_refreshes_the_confirmed_baseline_in_place(home: Home, quest: Quest) -> None:
    async with mcp.Client(server(home)) as c:
        await call(c, "confirm_baseline", baseline_path="baselines/local/b1", baseline_id="b1", metric_contract=CONTRACT,
                   metrics_summary={"acc": 0.8, "loss": 0.4}, primary_metric={"metric_id": "acc", "value": 0.8},
                   metric_directions={"loss": "lower_better"})  # fmt: skip
        wider = {**CONTRACT, "metrics": [*CONTRACT["metrics"], {"metric_id": "f1", "description": "f1", "derivation": "f1",
                                                                   "source_ref": "eval.py"}]}  # fmt: skip
        seq = quest.log.last_seq
        over = await call(
            c, "overwrite_baseline", baseline_id="b1", baseline_path="baselines/local/b1",
            change_summary="Add a canonical f1 metric after the second baseline pass.",
            metrics_summary={"acc": 0.82, "loss": 0.39, "f1": 0.79}, primary_metric={"metric_id": "acc", "value": 0.82},
            metric_contract=wider, metric_directions={"loss": "lower_better"},
        )  # fmt: skip
        assert over["compatibility_verdict"] == "metrics_only_safe"
        assert over["confirmed_baseline_ref"]["overwrite"]["change_summary"].startswith("Add a canonical f1")
        written = json.loads(Path(over["metric_contract_json_path"]).read_text())
        assert written["overwrite"]["compatibility_verdict"] == "metrics_only_safe" and written["metrics"]["acc"]["value"] == 0.82
        (event,) = [e for e in quest.log.read(after_seq=seq) if e.type == "artifact.baseline_confirmed"]
        assert event.overwrite["added_metric_ids"] == ["f1"] and event.overwrite["risk_level"] == "low"
        # a new number only, everything else kept from the confirmation
        same = await call(c, "overwrite_baseline", change_summary="re-ran with the fixed seed",
            metrics_summary={"acc": 0.81, "loss": 0.39, "f1": 0.8})
        assert same["compatibility_verdict"] == "same_comparator_refresh_safe" and same["metric_ids"] == ["acc", "f1", "loss"]
        breaking = await c.call_tool("overwrite_baseline", {"change_summary": "loss is now higher-better?",
                                                            "metric_directions": {"loss": "higher"}})  # fmt: skip
        assert breaking.is_error and "protocol_breaking_change" in breaking.content[0].text
        forced = await call(c, "overwrite_baseline", change_summary="drop f1 on purpose", allow_protocol_breaking_change=True,
                            metric_contract=CONTRACT, metrics_summary={"acc": 0.81, "loss": 0.39})  # fmt: skip
        assert forced["compatibility_verdict"] == "protocol_breaking_change_forced"
        assert forced["overwrite"]["removed_metric_ids"] == ["f1"]
    path = quest.root / "baselines" / "local" / "b1" / "json" / "metric_contract.json"
    before = path.read_bytes()
    path.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert path.read_bytes() == before


async def test_a_confirmed_baseline_published_for_reuse_is_confirmed_by_another_quest_from_the_registry(home: Home, quest: Quest) -> None:
    # DeepScientist's baseline skill: confirm the quest-local baseline, then publish it
    other = home.create_quest("Second", quest_id="q2")
    try:
        async with mcp.Client(server(home, "q1")) as c:
            await call(c, "confirm_baseline", baseline_path="baselines/local/b1", baseline_id="b1", metric_contract=CONTRACT,
                       metrics_summary={"acc": 0.8, "loss": 0.4}, primary_metric="acc", metric_directions={"loss": "lower_better"},
                       summary="reproduced")  # fmt: skip
            published = await call(c, "publish_baseline", payload={"baseline_id": "b1", "name": "Reproduced B1"})
            entry = published["baseline_registry_entry"]
            assert entry["payload"]["primary_metric"] == "acc" and entry["payload"]["metrics_summary"] == {"acc": 0.8, "loss": 0.4}
            again = await c.call_tool("publish_baseline", {"payload": {"baseline_id": "b1", "name": "twice"}})
            assert again.is_error and "baseline_exists" in again.content[0].text
        async with mcp.Client(server(home, "q2")) as c:
            confirmed = await call(c, "confirm_baseline", baseline_path="baselines/imported/b1", baseline_id="b1")
            assert confirmed["metric_directions"] == {"acc": "higher", "loss": "lower"} and confirmed["primary_metric"] == "acc"
        (event,) = [e for e in other.log.read() if e.type == "artifact.baseline_confirmed"]
        assert event.summary == "reproduced" and event.metrics_summary == {"acc": 0.8, "loss": 0.4}
    finally:
        other.close()
