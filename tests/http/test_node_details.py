"""``GET /api/quests/{id}/nodes/{ref}``: what the page shows for a Canvas node, on a quest
built through the real services (a confirmed baseline, a run branch with a checkpoint,
a main experiment, a decision)."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from ds_events.home import Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts.commands import Checkpoint, ConfirmBaseline, PrepareBranch, Record, RecordMainExperiment

from ..artifact.support import confirm_args


@pytest.fixture
def built(quest: Quest) -> dict[str, Any]:
    artifacts.confirm_baseline(quest, ConfirmBaseline(**confirm_args()))
    decision = artifacts.record(quest, Record(payload={"kind": "decision", "verdict": "go", "action": "launch_experiment", "reason": "the gate is open"}))
    branch = git.prepare_branch(quest, PrepareBranch(run_id="ls-0.1"))
    (quest.root / branch.worktree / "train.py").write_text("label_smoothing = 0.1\n")
    cp = git.checkpoint(quest, Checkpoint(message="label smoothing"))
    run = artifacts.record_main_experiment(quest, RecordMainExperiment(run_id="ls-0.1", title="Label smoothing 0.1", metrics_summary={"top1": 0.921, "nll": 0.29}))
    return {"decision": decision.artifact_id, "branch": branch.branch, "sha": cp.sha, "run": run}


async def _get(client: Any, ref: str, quest_id: str = "q1") -> tuple[int, dict[str, Any]]:
    resp = await client.get(f"/api/quests/{quest_id}/nodes/{urllib.parse.quote(ref, safe='')}")
    return resp.status, await resp.json()


@pytest.mark.parametrize("ref", ["branch:run/ls-0.1", "run:ls-0.1"])
async def test_a_run_node_has_its_metrics_against_the_baseline_its_files_and_its_branch_state(client: Any, built: dict[str, Any], ref: str) -> None:
    status, body = await _get(client, ref)
    assert status == 200, body
    assert body["ref"] == ref and body["quest_id"] == "q1"
    metrics = body["metrics"]
    assert metrics["baseline_id"] == "resnet20" and metrics["primary_metric"] == "top1"
    assert metrics["comparisons"] == built["run"].comparisons  # the names and numbers record_main_experiment gave
    assert metrics["comparisons"]["top1"]["better"] and metrics["comparisons"]["top1"]["baseline"] == 0.916
    assert metrics["progress"]["beats_baseline"] is True
    assert body["artifact"]["kind"] == "run" and body["artifact"]["payload"]["title"] == "Label smoothing 0.1"
    git_state = body["git"]
    assert git_state["branch"] == built["branch"] and git_state["head_commit"] == built["sha"]
    assert (git_state["ahead"], git_state["behind"], git_state["parent_ref"]) == (1, 0, "main")
    files = body["changed_files"]
    assert [f["path"] for f in files["files"]] == ["train.py"] and files["files"][0]["status"] == "added"
    assert files["head"] == built["sha"] and files["base"] == git_state["compare_base"]
    assert files["scope"] == "since_parent"


async def test_a_decision_node_has_its_payload_and_actions_but_no_metrics_or_files(client: Any, built: dict[str, Any]) -> None:
    status, body = await _get(client, f"decision:{built['decision']}")
    assert status == 200, body
    assert body["node_kind"] == "event_node"
    assert body["artifact"]["payload"]["payload"]["reason"] == "the gate is open"
    assert [a["type"] for a in body["node"]["actions"]] == ["artifact.recorded"]
    assert body["metrics"] is None and body["changed_files"] is None
    assert body["git"]["branch"] == "main"


async def test_a_checkpoint_node_lists_the_files_of_its_commit(client: Any, built: dict[str, Any]) -> None:
    status, body = await _get(client, f"checkpoint:{built['sha']}")
    assert status == 200, body
    assert body["changed_files"]["head"] == built["sha"]
    assert [f["path"] for f in body["changed_files"]["files"]] == ["train.py"]
    assert body["changed_files"]["scope"] == "head_commit"


async def test_a_stage_node_relates_its_event_nodes(client: Any, built: dict[str, Any]) -> None:
    canvas = await (await client.get("/api/quests/q1/canvas?view=stage")).json()
    stage = canvas["nodes"][0]
    status, body = await _get(client, stage["id"])
    assert status == 200, body
    assert body["node_kind"] == "stage_node" and body["artifact"] is None
    assert [r["ref"] for r in body["node"]["related"]] == stage["event_refs"]


@pytest.mark.parametrize("ref", ["nope", "branch:no-such-branch", "run:missing", "checkpoint:0123abc", "branch:"])
async def test_an_unknown_node_is_a_structured_404_that_changes_nothing(client: Any, quest: Quest, built: dict[str, Any], ref: str) -> None:
    before = quest.log.last_seq
    status, body = await _get(client, ref)
    assert status == 404
    assert body["error"] == "unknown_node" and body["ref"] == ref
    assert quest.log.last_seq == before


async def test_an_unknown_quest_is_a_404(client: Any) -> None:
    status, body = await _get(client, "branch:main", quest_id="nope")
    assert status == 404 and body["error"] == "unknown_quest"



async def test_a_run_recorded_at_its_ideas_head_lists_the_files_of_that_commit(client: Any, quest: Quest) -> None:
    """``record_main_experiment`` on an idea's workspace makes ``run/<id>`` at the idea's
    head: the run adds no commit to its parent, so its details list what that head
    commit changed (``scope`` ``head_commit``), not an empty diff."""
    artifacts.confirm_baseline(quest, ConfirmBaseline(**confirm_args()))
    idea = git.prepare_branch(quest, PrepareBranch(idea_id="idea-0001", branch_kind="idea"))
    (quest.root / idea.worktree / "train.py").write_text("label_smoothing = 0.1\n")
    cp = git.checkpoint(quest, Checkpoint(message="label smoothing"))
    artifacts.record_main_experiment(quest, RecordMainExperiment(run_id="ls-0.1", title="Label smoothing 0.1", metrics_summary={"top1": 0.921, "nll": 0.29}))
    status, body = await _get(client, "branch:run/ls-0.1")
    assert status == 200, body
    assert (body["git"]["ahead"], body["git"]["parent_ref"]) == (0, idea.branch), body["git"]
    files = body["changed_files"]
    assert files["scope"] == "head_commit" and files["head"] == cp.sha
    assert [f["path"] for f in files["files"]] == ["train.py"]
