"""Baselines and metric contracts through an MCP client: publish, attach, confirm,
record main experiments (missing metric, protocol and direction mismatches)."""

from __future__ import annotations

import copy
import json

import pytest

from ds_events.home import Home, Quest
from tests.helpers import domain_events

from .support import CONTRACT, client_for, confirm_args, fails, git_ok, ok


async def test_confirm_baseline_writes_the_canonical_contract_under_the_baseline_root(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        r = await ok(c, "confirm_baseline", **confirm_args())
    assert r["contract_path"] == "baselines/resnet20/json/metric_contract.json"
    assert r["metric_ids"] == ["nll", "top1"] and r["metric_directions"] == {"nll": "lower", "top1": "higher"}
    contract = json.loads((quest.root / r["contract_path"]).read_text())
    assert contract["baseline_id"] == "resnet20" and contract["primary_metric"] == "top1"
    assert contract["evaluation_protocol"] == {"split": "test", "seeds": 3}
    assert contract["metrics"]["top1"] == {
        "description": "top-1 accuracy on the CIFAR-10 test set",
        "derivation": "correct / 10000",
        "source_ref": "He et al. 2016, Table 6",
        "direction": "higher",
        "value": 0.916,
    }
    assert contract["metrics"]["nll"]["origin_path"] == "baselines/resnet20/eval.json"
    record = json.loads((quest.root / "artifacts/baselines/resnet20.json").read_text())
    assert record["confirmed"]["primary_metric"] == "top1" and record["confirmed"]["metrics_summary"]["nll"] == 0.31
    summary = (quest.root / "SUMMARY.md").read_text()
    assert "`resnet20` confirmed" in summary and "top1" in summary


async def test_a_contract_given_as_a_list_of_entries_is_accepted(home: Home, quest: Quest) -> None:
    listed = {"metrics": [{"metric_id": k, **v} for k, v in CONTRACT["metrics"].items()]}
    async with client_for(home) as c:
        r = await ok(c, "confirm_baseline", **confirm_args(metric_contract=listed, baseline_path="."))
    assert r["contract_path"] == "json/metric_contract.json"
    assert set(json.loads((quest.root / "json/metric_contract.json").read_text())["metrics"]) == {"top1", "nll"}


async def test_a_main_experiment_with_every_baseline_metric_is_recorded_with_comparisons(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "confirm_baseline", **confirm_args())
        await ok(c, "prepare_branch", run_id="ls-0.1", idea_id="idea-0001")
        (quest.root / ".ds/worktrees/run__ls-0.1/train.py").write_text("ls = 0.1\n")
        cp = await ok(c, "checkpoint", message="label smoothing")
        r = await ok(
            c, "record_main_experiment", run_id="ls-0.1", title="Label smoothing 0.1",
            metrics_summary={"top1": 0.921, "nll": 0.29, "ece": 0.02}, evaluation_protocol={"split": "test", "seeds": 3},
        )
    assert r["branch"] == "run/ls-0.1" and r["head_sha"] == cp["sha"]
    assert r["extra_metric_ids"] == ["ece"]
    assert r["primary"]["better"] and r["primary"]["delta"] == pytest.approx(0.005)
    assert r["comparisons"]["nll"]["better"]  # lower is better for nll
    saved = json.loads((quest.root / "artifacts/runs/ls-0.1.json").read_text())
    assert saved["run_kind"] == "main_experiment" and saved["idea_id"] == "idea-0001" and saved["head_sha"] == cp["sha"]
    assert "| `ls-0.1` | Label smoothing 0.1 |" in (quest.root / "SUMMARY.md").read_text()


async def test_a_main_experiment_missing_a_baseline_metric_is_refused_with_details(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "confirm_baseline", **confirm_args())
        seq = domain_events(quest)
        err = await fails(c, "record_main_experiment", "missing_metric_ids", run_id="r1", title="t",
            metrics_summary={"top1": 0.93, "ece": 1})
    assert err["missing_metric_ids"] == ["nll"]
    assert err["baseline_metric_ids"] == ["nll", "top1"]
    assert err["baseline_metric_details"]["nll"] == {
        "description": "mean test negative log-likelihood", "direction": "lower", "value": 0.31, "source_ref": "reproduced run",
    }
    assert domain_events(quest) == seq and not (quest.root / "artifacts/runs/r1.json").exists()


async def test_a_main_experiment_under_another_evaluation_protocol_is_refused(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "confirm_baseline", **confirm_args())
        seq = domain_events(quest)
        err = await fails(
            c, "record_main_experiment", "evaluation_protocol_mismatch", run_id="r1", title="t",
            metrics_summary={"top1": 0.95, "nll": 0.2}, evaluation_protocol={"split": "val", "seeds": 3},
        )
        assert err["evaluation_protocol_mismatch"] == {
            "baseline": {"split": "test", "seeds": 3}, "given": {"split": "val", "seeds": 3}, "differing_keys": ["split"],
        }
        assert err["baseline_metric_ids"] == ["nll", "top1"]
        assert domain_events(quest) == seq
        # the same run under the baseline's protocol is fine
        await ok(c, "record_main_experiment", run_id="r1", title="t", metrics_summary={"top1": 0.95, "nll": 0.2},
                 evaluation_protocol={"seeds": 3, "split": "test"})


async def test_direction_mismatches_and_several_problems_are_reported_together(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "confirm_baseline", **confirm_args())
        err = await fails(c, "record_main_experiment", "metric_direction_mismatch", run_id="r1", title="t",
                          metrics_summary={"top1": 0.9, "nll": 0.3}, metric_directions={"nll": "higher"})
        assert err["direction_mismatches"] == [{"metric_id": "nll", "baseline": "lower", "given": "higher"}]
        err = await fails(c, "record_main_experiment", "missing_metric_ids", run_id="r1", title="t",
                          metrics_summary={"top1": 0.9}, metric_directions={"top1": "minimize"}, evaluation_protocol="other")
    assert err["missing_metric_ids"] == ["nll"] and err["direction_mismatches"][0]["metric_id"] == "top1"
    assert err["evaluation_protocol_mismatch"]["given"] == {"description": "other"}
    assert quest.log.read(types=["artifact.main_experiment_recorded"]) == []


def _incomplete_contract() -> dict:
    bad = copy.deepcopy(CONTRACT)
    del bad["metrics"]["top1"]["source_ref"]
    del bad["metrics"]["nll"]["origin_path"]
    return bad


@pytest.mark.parametrize(
    "over, code",
    [
        ({"metric_contract": "top1 is accuracy"}, "invalid_argument"),  # not an object
        ({"metric_contract": {"metrics": {}}}, "invalid_metric_contract"),
        ({"metric_contract": _incomplete_contract()}, "invalid_metric_contract"),
        ({"metrics_summary": {"top1": 0.9, "nll": 0.3, "f1": 0.5}}, "invalid_metric_contract"),  # f1 has no entry
        ({"metrics_summary": {"top1": {"mean": 0.9}, "nll": 0.3}}, "invalid_metrics_summary"),
        ({"metrics_summary": {"top1": "0.9", "nll": 0.3}}, "invalid_metrics_summary"),
        ({"metrics_summary": {}}, "invalid_metrics_summary"),
        ({"primary_metric": "f1"}, "unknown_primary_metric"),
        ({"metric_directions": {"top1": "up"}}, "invalid_metric_direction"),
        ({"metric_directions": {"f1": "higher"}}, "invalid_metric_contract"),  # the contract has no f1
        ({"primary_metric": {"metric_id": "nll", "direction": "higher"}}, "invalid_metric_contract"),  # the entry says lower
        ({"baseline_path": "../outside"}, "path_outside_quest"),
        ({"baseline_path": "/etc"}, "path_outside_quest"),
        ({"baseline_path": ".ds/baselines"}, "path_not_allowed"),
        ({"baseline_id": "bad id!"}, "invalid_id"),
    ],
)
async def test_bad_confirm_baseline_input_is_refused_and_writes_nothing(home: Home, quest: Quest, over: dict, code: str) -> None:
    seq = domain_events(quest)
    async with client_for(home) as c:
        err = await fails(c, "confirm_baseline", code, **confirm_args(**over))
    if code == "invalid_metric_contract" and "problems" in err:
        assert all("metric_id" in p for p in err["problems"])
    assert domain_events(quest) == seq
    assert not (quest.root / "baselines").exists()


async def test_explicit_metric_directions_override_the_contract_entry_and_the_answer_says_so(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        r = await ok(c, "confirm_baseline", **confirm_args(metric_directions={"nll": "higher"}))  # the entry says lower
    assert r["metric_directions"]["nll"] == "higher"
    assert r["direction_overrides"] == {"nll": {"contract": "lower", "used": "higher"}}
    assert "nll" in r["message"] and "overrode" in r["message"]
    contract = json.loads((quest.root / r["contract_path"]).read_text())
    assert contract["metrics"]["nll"]["direction"] == "higher" and contract["metrics"]["nll"]["contract_direction"] == "lower"
    assert "contract_direction" not in contract["metrics"]["top1"]


async def test_a_primary_metric_direction_that_disagrees_with_its_entry_says_they_disagree(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        err = await fails(c, "confirm_baseline", "invalid_metric_contract",
                          **confirm_args(primary_metric={"metric_id": "nll", "direction": "higher"}))  # fmt: skip
    assert "disagree" in err["message"] and "incomplete" not in err["message"]
    assert err["problems"] == [{"metric_id": "nll", "problem": "the primary metric's direction and the contract entry disagree"}]
    assert quest.log.read(types=["artifact.baseline_confirmed"]) == []


async def test_a_baseline_path_that_is_a_file_is_refused_so_materialising_can_never_break(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        err = await fails(c, "confirm_baseline", "invalid_field", **confirm_args(baseline_path="SUMMARY.md"))
        assert err["field"] == "baseline_path"
        (quest.root / "b/json").mkdir(parents=True)
        (quest.root / "b/json/metric_contract.json").mkdir()
        await fails(c, "confirm_baseline", "invalid_field", **confirm_args(baseline_path="b"))
    assert quest.log.read(types=["artifact.baseline_confirmed"]) == []


async def test_incomplete_contract_entries_are_listed_per_metric(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        err = await fails(c, "confirm_baseline", "invalid_metric_contract", **confirm_args(metric_contract=_incomplete_contract()))
    assert {"metric_id": "top1", "missing": ["source_ref"]} in err["problems"]
    assert {"metric_id": "nll", "missing": ["derivation|origin_path"]} in err["problems"]


async def test_a_symlink_that_escapes_the_quest_is_not_a_baseline_path(home: Home, quest: Quest, tmp_path) -> None:
    (quest.root / "escape").symlink_to(tmp_path)
    async with client_for(home) as c:
        await fails(c, "confirm_baseline", "path_outside_quest", **confirm_args(baseline_path="escape/b"))
    assert not (tmp_path / "b").exists()


async def test_publish_attach_and_confirm_a_baseline_variant(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        p = await ok(c, "publish_baseline", payload={"baseline_id": "resnet20", "title": "ResNet-20",
                                                   "variants": ["cifar10", {"variant_id": "cifar100"}]})
        assert p["variant_ids"] == ["cifar10", "cifar100"]
        await fails(c, "publish_baseline", "baseline_exists", payload={"baseline_id": "resnet20", "title": "again"})
        await fails(c, "attach_baseline", "unknown_baseline", baseline_id="vgg")
        await fails(c, "attach_baseline", "unknown_variant", baseline_id="resnet20", variant_id="imagenet")
        a = await ok(c, "attach_baseline", baseline_id="resnet20", variant_id="cifar10")
        assert a["confirmed"] is False
        await fails(c, "record_main_experiment", "no_confirmed_baseline", run_id="r1", title="t", metrics_summary={"top1": 1})
        await fails(c, "confirm_baseline", "unknown_variant", **confirm_args(variant_id="imagenet"))
        await ok(c, "confirm_baseline", **confirm_args(variant_id="cifar10"))
        r = await ok(c, "record_main_experiment", run_id="r1", title="t", metrics_summary={"top1": 0.92, "nll": 0.3})
        assert r["baseline_id"] == "resnet20"
        await fails(c, "record_main_experiment", "run_exists", run_id="r1", title="t", metrics_summary={"top1": 0.92, "nll": 0.3})
    saved = json.loads((quest.root / "artifacts/baselines/resnet20.json").read_text())
    assert saved["published"] and saved["confirmed"]["variant_id"] == "cifar10" and saved["title"] == "ResNet-20"
    assert "attached" not in (quest.root / "SUMMARY.md").read_text()  # confirmed now


async def test_record_main_experiment_errors_for_unknown_and_unconfirmed_baselines(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "publish_baseline", payload={"baseline_id": "b1", "title": "B1"})
        await fails(c, "record_main_experiment", "unknown_baseline", run_id="r", title="t", metrics_summary={"a": 1}, baseline_id="zz")
        await fails(c, "record_main_experiment", "baseline_not_confirmed", run_id="r", title="t", metrics_summary={"a": 1},
            baseline_id="b1")
        await fails(c, "publish_baseline", "missing_fields", payload={"baseline_id": "b2"})
        await fails(c, "publish_baseline", "invalid_field", payload={"baseline_id": "b2", "title": "t", "variants": "v1"})
        await ok(c, "confirm_baseline", **confirm_args())
        await fails(c, "record_main_experiment", "invalid_metrics_summary", run_id="r", title="t", metrics_summary={"top1": [1]})
        await fails(c, "record_main_experiment", "missing_fields", run_id="r", title=" ", metrics_summary={"top1": 1})
        await fails(c, "record_main_experiment", "invalid_id", run_id="r/1", title="t", metrics_summary={"top1": 1})
        await fails(c, "record_main_experiment", "unknown_branch", run_id="r", title="t",
                    metrics_summary={"top1": 1, "nll": 1}, branch="run/none")
    assert quest.log.read(types=["artifact.main_experiment_recorded"]) == []
    assert "main" in git_ok(quest.root, "branch")
