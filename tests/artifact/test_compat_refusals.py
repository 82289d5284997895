"""Refusals of the DeepScientist argument forms and the baseline-gate tools: each bad
call gets its stable code and leaves the quest's domain events, its files and the
home's baseline registry as they were."""

from __future__ import annotations

from typing import Any

import mcp

from ds_events.home import Home, Quest
from tests.artifact.support import CONTRACT, client_for, confirm_args, fails, ok
from tests.helpers import domain_events
from tests.mcp_support import changed, snapshot


async def refused(c: mcp.Client, home: Home, quest: Quest, tool: str, code: str, **args: Any) -> dict[str, Any]:
    before, files = domain_events(quest), snapshot(home.root,
        skip=lambda p: p.name in ("events.jsonl", "snapshots", "materialise.lock") or p.suffix == ".anchor")
    err = await fails(c, tool, code, **args)
    assert domain_events(quest) == before, tool
    after = snapshot(home.root, skip=lambda p: p.name in ("events.jsonl", "snapshots", "materialise.lock") or p.suffix == ".anchor")
    # The refused call's own record moves the log's head, and with it the home's witness of it (.ds/heads/).
    assert [d for d in changed(files, after) if "/.ds/" not in d and not d.endswith("/.ds") and ".ds/heads/" not in d] == [], tool
    return err


async def test_record_main_experiment_refuses_bad_metric_rows_and_a_closed_gate(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        err = await refused(c, home, quest, "record_main_experiment", "no_confirmed_baseline", run_id="r1", metrics_summary={"top1": 0.9})
        assert "waive_baseline" in err["message"]
        await ok(c, "confirm_baseline", **confirm_args())
        await refused(c, home, quest, "record_main_experiment", "invalid_metric_rows", run_id="r1", metric_rows=[{"value": 0.9}])
        await refused(c, home, quest, "record_main_experiment", "invalid_metric_rows", run_id="r1",
            metric_rows=[{"metric_id": "top1", "value": "high"}])
        await refused(c, home, quest, "record_main_experiment", "metric_value_mismatch", run_id="r1",
                      metrics_summary={"top1": 0.9, "nll": 0.3}, metric_rows=[{"metric_id": "top1", "value": 0.8}])  # fmt: skip
        err = await refused(c, home, quest, "record_main_experiment", "duplicate_metric_rows", run_id="r1",
                            metric_rows=[{"metric_id": "top1", "value": 0.9, "split": "val"},
                                         {"metric_id": "top1", "value": 0.91, "split": "test"},
                                         {"metric_id": "nll", "value": 0.3}])  # fmt: skip
        assert err["metric_ids"] == ["top1"]
        await refused(c, home, quest, "record_main_experiment", "missing_fields", run_id="r1")
        await refused(c, home, quest, "record_main_experiment", "invalid_metric_rows", run_id="r1",
                      metric_rows=[{"metric_id": "top1", "value": 0.9, "direction": "sideways"},
                                   {"metric_id": "nll", "value": 0.3}])  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "invalid_metric_direction", run_id="r1", metric_directions={"nll": "lower"},
                      metric_rows=[{"metric_id": "top1", "value": 0.9},
                                   {"metric_id": "nll", "value": 0.3, "direction": "higher_better"}])  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "metric_direction_mismatch", run_id="r1",
                      metric_rows=[{"metric_id": "top1", "value": 0.9},
                                   {"metric_id": "nll", "value": 0.3, "direction": "higher_better"}])  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "variant_mismatch", run_id="r1",
                      metrics_summary={"top1": 0.9, "nll": 0.3}, baseline_variant_id="other")  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "invalid_field", run_id="r1",
                      metrics_summary={"top1": 0.9, "nll": 0.3}, evidence_paths=["ok.json", ""])  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "invalid_field", run_id="r1",
                      metrics_summary={"top1": 0.9, "nll": 0.3}, evaluation_summary={"takeaway": ["a", "list"]})  # fmt: skip
        await refused(c, home, quest, "record_main_experiment", "unknown_argument", run_id="r1",
                      metrics_summary={"top1": 0.9, "nll": 0.3}, hypotesis="typo")  # fmt: skip
        assert not (quest.root / "artifacts" / "runs").exists()
        assert "run/r1" not in quest.repo().branches.local


async def test_confirm_baseline_refuses_conflicting_primary_metric_forms(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await refused(c, home, quest, "confirm_baseline", "invalid_primary_metric", **confirm_args(primary_metric={"value": 0.9}))
        await refused(c, home, quest, "confirm_baseline", "invalid_primary_metric",
            **confirm_args(primary_metric={"metric_id": "top1", "value": "x"}))
        await refused(c, home, quest, "confirm_baseline", "metric_value_mismatch",
            **confirm_args(primary_metric={"metric_id": "top1", "value": 0.5}))
        await refused(c, home, quest, "confirm_baseline", "invalid_metric_direction",
            **confirm_args(primary_metric={"metric_id": "nll", "direction": "higher_better"}, metric_directions={"nll": "lower_better"}))
        await refused(c, home, quest, "confirm_baseline", "primary_metric_mismatch",
            **confirm_args(metric_contract={**CONTRACT, "primary_metric_id": "nll"}))
        args = confirm_args()
        del args["metric_contract"]
        await refused(c, home, quest, "confirm_baseline", "missing_fields", **args)
        args = confirm_args(primary_metric=None)
        await refused(c, home, quest, "confirm_baseline", "missing_fields", **args)


async def test_waive_and_overwrite_refuse_what_would_break_the_gate(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await refused(c, home, quest, "overwrite_baseline", "no_confirmed_baseline", change_summary="x")
        await refused(c, home, quest, "waive_baseline", "missing_fields", reason="  ")
        await ok(c, "confirm_baseline", **confirm_args())
        await refused(c, home, quest, "waive_baseline", "baseline_already_confirmed", reason="no longer needed")
        await refused(c, home, quest, "overwrite_baseline", "baseline_mismatch", change_summary="x", baseline_id="other")
        await refused(c, home, quest, "overwrite_baseline", "baseline_path_changed", change_summary="x",
            baseline_path="baselines/elsewhere")
        only_top1 = {"metrics": {"top1": CONTRACT["metrics"]["top1"]}, "evaluation_protocol": CONTRACT["evaluation_protocol"]}
        err = await refused(c, home, quest, "overwrite_baseline", "protocol_breaking_change", change_summary="drop nll",
                            metric_contract=only_top1, metrics_summary={"top1": 0.92})  # fmt: skip
        assert err["removed_metric_ids"] == ["nll"]
        err = await refused(c, home, quest, "overwrite_baseline", "protocol_breaking_change", change_summary="swap",
                            primary_metric="nll")  # fmt: skip
        assert err["reasons"] == ["primary metric changed"]


async def test_publish_attach_and_prepare_branch_refuse_bad_forms(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await refused(c, home, quest, "publish_baseline", "unknown_variant",
                      payload={"baseline_id": "b", "name": "B", "baseline_variants": [{"variant_id": "main"}],
                               "default_variant_id": "x"})  # fmt: skip
        await refused(c, home, quest, "publish_baseline", "invalid_primary_metric",
            payload={"baseline_id": "b", "name": "B", "primary_metric": 3})
        await refused(c, home, quest, "publish_baseline", "invalid_metric_contract",
            payload={"baseline_id": "b", "name": "B", "metric_contract": "acc"})
        await refused(c, home, quest, "attach_baseline", "unknown_baseline", baseline_id="nowhere")
        await refused(c, home, quest, "prepare_branch", "conflicting_arguments", run_id="r9", create_worktree=False,
            create_worktree_flag=True)
        await refused(c, home, quest, "record_analysis_slice", "missing_fields", campaign_id="campaign-001", slice_id="s1",
            dataset_scope="subset")
        assert not (home.root / "baselines").exists()
