"""Analysis campaigns through an MCP client: slices are child branches of the result node,
checked with `git merge-base --is-ancestor` and `git worktree list`."""

from __future__ import annotations

import json

import mcp
import pytest

from ds_events.home import Home, Quest
from tests.helpers import domain_events

from .support import client_for, confirm_args, fails, git, git_ok, ok


async def _main_experiment(c: mcp.Client, quest: Quest, run_id: str = "ls-0.1") -> str:
    await ok(c, "confirm_baseline", **confirm_args())
    await ok(c, "prepare_branch", run_id=run_id, idea_id="idea-0001")
    (quest.root / f".ds/worktrees/run__{run_id}/train.py").write_text(f"run = {run_id!r}\n")
    sha = (await ok(c, "checkpoint", message=f"{run_id} code"))["sha"]
    await ok(c, "record_main_experiment", run_id=run_id, title=run_id, metrics_summary={"top1": 0.92, "nll": 0.3})
    return sha


async def test_campaign_slices_are_child_branches_of_the_main_experiment(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        run_head = await _main_experiment(c, quest)
        r = await ok(c, "create_analysis_campaign", campaign_title="Why does label smoothing help?",
                     campaign_goal="isolate calibration from regularisation",
                     slices=["no augmentation", {"slice_id": "temp", "title": "temperature scaling", "goal": "calibrate"}])
    assert r["campaign_id"] == "campaign-001" and r["parent_run_id"] == "ls-0.1"
    assert r["parent_branch"] == "run/ls-0.1" and r["parent_sha"] == run_head
    branches = [s["branch"] for s in r["slices"]]
    assert branches == ["analysis/idea-0001/campaign-001-s1", "analysis/idea-0001/campaign-001-temp"]
    listed = git_ok(quest.root, "worktree", "list", "--porcelain")
    for s in r["slices"]:
        assert git(quest.root, "merge-base", "--is-ancestor", run_head, s["branch"]).returncode == 0
        assert git(quest.root, "merge-base", "--is-ancestor", "run/ls-0.1", s["branch"]).returncode == 0
        assert f"branch refs/heads/{s['branch']}" in listed and f"worktree {s['worktree_path']}" in listed
        assert (quest.root / s["worktree"] / "train.py").read_text() == "run = 'ls-0.1'\n"
    # and not descendants of an unrelated line of work
    assert git(quest.root, "merge-base", "--is-ancestor", run_head, "main").returncode == 1
    saved = json.loads((quest.root / "artifacts/campaigns/campaign-001.json").read_text())
    assert [s["status"] for s in saved["slices"]] == ["pending", "pending"] and saved["goal"].startswith("isolate")
    assert git(quest.root, "fsck", "--strict").returncode == 0


async def test_a_one_slice_campaign_branches_from_the_active_branch_without_a_main_experiment(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", idea_id="idea-0003", branch_kind="idea")
        (quest.root / ".ds/worktrees/idea__q1-idea-0003/probe.py").write_text("p = 1\n")
        head = (await ok(c, "checkpoint", message="probe"))["sha"]
        r = await ok(c, "create_analysis_campaign", campaign_title="Probe", campaign_goal="one check", slices=["only"])
    assert r["parent_run_id"] is None and r["parent_branch"] == "idea/q1-idea-0003" and r["parent_sha"] == head
    [slice_] = r["slices"]
    assert slice_["branch"] == "analysis/q1/campaign-001-s1"
    assert git(quest.root, "merge-base", "--is-ancestor", head, slice_["branch"]).returncode == 0


async def test_slices_are_recorded_once_each_with_their_branch_head(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await _main_experiment(c, quest)
        camp = await ok(c, "create_analysis_campaign", campaign_title="A", campaign_goal="g", slices=["x", "y"])
        s1 = camp["slices"][0]
        (quest.root / s1["worktree"] / "result.txt").write_text("0.90\n")
        cp = await ok(c, "checkpoint", message="slice s1", branch=s1["branch"])
        assert cp["worktree"] == s1["worktree"]
        r = await ok(c, "record_analysis_slice", campaign_id="campaign-001", slice_id="s1",
                     metrics_summary={"top1": 0.90}, summary="still helps without augmentation")
        assert r["head_sha"] == cp["sha"] and r["remaining_slice_ids"] == ["s2"] and not r["campaign_complete"]
        await fails(c, "record_analysis_slice", "slice_already_recorded", campaign_id="campaign-001", slice_id="s1")
        r2 = await ok(c, "record_analysis_slice", campaign_id="campaign-001", slice_id="s2", status="failed")
        assert r2["campaign_complete"]
    saved = json.loads((quest.root / "artifacts/campaigns/campaign-001.json").read_text())
    assert [s["status"] for s in saved["slices"]] == ["completed", "failed"] and saved["slices_done"] == 2
    assert saved["slices"][0]["metrics_summary"] == {"top1": 0.9}
    assert "2/2 slices recorded" in (quest.root / "SUMMARY.md").read_text()


@pytest.mark.parametrize(
    "args, code",
    [
        ({"slices": []}, "invalid_slices"),
        ({"slices": "one slice"}, "invalid_argument"),  # not an array: refused at the edge
        ({"slices": [42]}, "invalid_slices"),
        ({"slices": [{"slice_id": "a", "title": "A"}, {"slice_id": "a", "title": "B"}]}, "duplicate_slice_id"),
        ({"slices": [{"slice_id": "../x", "title": "A"}]}, "invalid_id"),
        ({"slices": [{"goal": "no title"}]}, "missing_fields"),
        ({"slices": ["a"], "parent_run_id": "nope"}, "unknown_run"),
        ({"slices": ["a"], "campaign_goal": ""}, "missing_fields"),
    ],
)
async def test_bad_campaigns_are_refused_and_create_no_branch(home: Home, quest: Quest, args: dict, code: str) -> None:
    refs = git_ok(quest.root, "for-each-ref")
    seq = domain_events(quest)
    async with client_for(home) as c:
        await fails(c, "create_analysis_campaign", code, **{"campaign_title": "T", "campaign_goal": "G", **args})
    assert git_ok(quest.root, "for-each-ref") == refs and domain_events(quest) == seq


async def test_a_campaign_whose_branch_would_clash_creates_none_of_its_branches(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        # occupy the name the second slice would get
        await ok(c, "prepare_branch", branch="analysis/q1/campaign-001-s2", branch_kind="analysis", create_worktree=False)
        refs = git_ok(quest.root, "for-each-ref")
        await fails(c, "create_analysis_campaign", "branch_exists", campaign_title="T", campaign_goal="G", slices=["a", "b"])
    assert git_ok(quest.root, "for-each-ref") == refs
    assert "campaign-001-s1" not in git_ok(quest.root, "worktree", "list")


async def test_record_analysis_slice_rejects_unknown_ids_and_statuses(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "create_analysis_campaign", campaign_title="T", campaign_goal="G", slices=["a"])
        await fails(c, "record_analysis_slice", "unknown_campaign", campaign_id="campaign-009", slice_id="s1")
        err = await fails(c, "record_analysis_slice", "unknown_slice", campaign_id="campaign-001", slice_id="s9")
        assert err["slice_ids"] == ["s1"]
        await fails(c, "record_analysis_slice", "invalid_slice_status", campaign_id="campaign-001", slice_id="s1", status="done")
        await fails(c, "record_analysis_slice", "invalid_metrics_summary", campaign_id="campaign-001", slice_id="s1",
                    metrics_summary={"a": "high"})
    assert quest.log.read(types=["artifact.analysis_slice_recorded"]) == []
