"""`ds mcp --namespace artifact` as a real subprocess over stdio, driven by an MCP client."""

from __future__ import annotations

import json
import sys

import mcp
import pytest

from ds_events.home import Home, Quest
from tests.helpers import ds_env, tool_error

from .support import confirm_args, git, git_ok


@pytest.mark.slow
async def test_a_stdio_artifact_server_branches_checkpoints_and_records_against_the_contract(home: Home, quest: Quest) -> None:
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "ds_events", "mcp", "--namespace", "artifact"],
        env=ds_env(home, DS_QUEST_ID="q1"),
    )
    async with mcp.Client(params) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"record", "checkpoint", "prepare_branch", "confirm_baseline", "record_main_experiment",
                "create_analysis_campaign", "record_analysis_slice", "refresh_summary", "render_git_graph",
                "arxiv", "publish_baseline", "attach_baseline"} <= names
        branch = (await c.call_tool("prepare_branch", {"run_id": "r1"})).structured_content
        (quest.root / branch["worktree"] / "train.py").write_text("print('hi')\n")
        cp = (await c.call_tool("checkpoint", {"message": "from a subprocess"})).structured_content
        assert not (await c.call_tool("confirm_baseline", confirm_args())).is_error
        err = tool_error(await c.call_tool("record_main_experiment", {"run_id": "r1", "title": "t", "metrics_summary": {"top1": 1.0}}))
        assert err["error"] == "missing_metric_ids" and err["missing_metric_ids"] == ["nll"]
        bad = tool_error(await c.call_tool("prepare_branch", {"branch": "run/bad..name"}))
        assert bad["error"] == "invalid_branch_name"
    assert git_ok(quest.root, "rev-parse", "run/r1").strip() == cp["sha"]
    assert "bad..name" not in git_ok(quest.root, "for-each-ref")
    assert git(quest.root, "fsck", "--strict").returncode == 0
    assert str(quest.root / branch["worktree"]) in git_ok(quest.root, "worktree", "list")
    # the events the subprocess appended are visible here, with its actor
    [cp_event] = quest.log.read(types=["git.checkpointed"])
    assert cp_event.actor == "mcp:artifact" and cp_event.sha == cp["sha"]
    contract = json.loads((quest.root / "baselines/resnet20/json/metric_contract.json").read_text())
    assert contract["metric_ids"] == ["nll", "top1"]
