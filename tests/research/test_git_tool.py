"""DeepScientist's ``git`` tool on our `artifact` server: status, commit, branch,
checkout, log, show, diff on the agent's workspace, inside the quest repository only.
Reads append nothing; a commit is a checkpoint (``git.checkpointed``), a branch a
prepared branch (``git.branch_prepared``), a checkout an activation
(``research.branch_activated``); refusals write nothing."""

from __future__ import annotations

from pathlib import Path

import mcp
import pygit2
import pytest

from ds_events.home import Home, Quest
from tests.compat.research_support import LogWatch, artifact_client, confirm_baseline, ok, refused, stdio_artifact


@pytest.mark.slow
async def test_status_commit_log_show_and_diff_through_a_stdio_client(home: Home, quest: Quest) -> None:
    log = LogWatch(quest)
    async with mcp.Client(stdio_artifact(home)) as c:
        status = await ok(c, "git", {"action": "status"})
        assert status["action"] == "status" and status["result"]["repo"] == str(quest.root) == status["repo"]
        assert status["current_ref"] == "main" and status["head"] == str(quest.repo().head.target)
        assert status["seq"] is None

        committed = await ok(c, "git", {"action": "commit", "message": "mcp git checkpoint", "allow_empty": True})
        assert committed["result"]["committed"] is True and committed["result"]["subject"] == "mcp git checkpoint"
        assert committed["head"] == committed["result"]["sha"] != committed["result"]["before_head"]
        events = log.since()
        assert [e["type"] for e in events] == ["git.checkpointed"] and events[0]["sha"] == committed["result"]["sha"]

        (quest.root / "notes.txt").write_text("first line\n")
        dirty = await ok(c, "git", {"action": "status"})
        assert dirty["result"]["clean"] is False
        assert {"path": "notes.txt", "status": "untracked"} in dirty["result"]["changes"]
        second = await ok(c, "git", {"action": "commit", "message": "notes"})
        sha = second["result"]["sha"]

        history = await ok(c, "git", {"action": "log", "limit": 2})
        assert [x["subject"] for x in history["result"]["commits"]] == ["notes", "mcp git checkpoint"]
        assert history["result"]["truncated"] is True
        shown = await ok(c, "git", {"action": "show", "sha": sha})
        assert shown["result"]["subject"] == "notes" and "notes.txt" in [f["path"] for f in shown["result"]["files"]]
        assert "+first line" in shown["result"]["patch"]
        diff = await ok(c, "git", {"action": "diff", "base": committed["result"]["sha"], "head": sha, "path": "notes.txt"})
        assert [f["path"] for f in diff["result"]["files"]] == ["notes.txt"] and diff["result"]["files"][0]["additions"] == 1
        assert log.types() == ["git.checkpointed"]  # the commit; the reads appended nothing


async def test_branch_and_checkout_move_the_workspace_never_a_checkout_in_place(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await confirm_baseline(c)
        log = LogWatch(quest)
        made = await ok(c, "git", {"action": "branch", "branch": "run/probe", "checkout_new_branch": True})
        assert made["result"]["created"] is True and made["result"]["after_branch"] == "run/probe"
        assert made["current_ref"] == "run/probe" and made["repo"] == made["result"]["worktree_root"]
        assert [e["type"] for e in log.since()] == ["git.branch_prepared"]
        (Path(made["repo"]) / "probe.py").write_text("print('probe')\n")
        committed = await ok(c, "git", {"action": "commit", "message": "probe script"})
        assert committed["result"]["branch"] == "run/probe"
        assert quest.repo().branches.local["run/probe"].peel(pygit2.Commit).message.startswith("probe script")
        log.since()
        same = await ok(c, "git", {"action": "commit", "message": "nothing new"})
        assert same["result"]["committed"] is False and same["seq"] is None
        assert log.types() == []  # an empty commit appends nothing

        plain = await ok(c, "git", {"action": "branch", "branch": "idea/side", "create_from": "main"})
        assert plain["result"]["worktree"] is None and plain["current_ref"] == "run/probe"  # no checkout asked
        log.since()
        moved = await ok(c, "git", {"action": "checkout", "branch": "idea/side"})
        assert moved["result"]["worktree_created"] is True and moved["current_ref"] == "idea/side"
        assert Path(moved["repo"]).name == "idea__side" and (Path(moved["repo"]) / ".git").is_file()
        events = log.since()
        assert [e["type"] for e in events] == ["research.branch_activated"] and events[0]["activated_by"] == "checkout"
        back = await ok(c, "git", {"action": "checkout", "ref": "run/probe"})
        assert back["result"]["worktree_created"] is False and back["repo"] == made["repo"]
        assert (Path(back["repo"]) / "probe.py").exists()  # the worktree was never switched in place
        assert quest.repo().head.shorthand == "main"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"action": "rebase"}, "invalid_git_action"),
        ({"action": "show"}, "missing_fields"),
        ({"action": "diff"}, "missing_fields"),
        ({"action": "diff", "base": "main"}, "missing_fields"),
        ({"action": "show", "sha": "deadbeef"}, "unknown_ref"),
        ({"action": "log", "ref": "--all"}, "unknown_ref"),
        ({"action": "log", "ref": "../../etc/passwd"}, "unknown_ref"),
        ({"action": "log", "limit": 0}, "invalid_limit"),
        ({"action": "branch"}, "missing_fields"),
        ({"action": "branch", "branch": "feature/x"}, "invalid_branch_name"),
        ({"action": "branch", "branch": "run/../../x"}, "invalid_branch_name"),
        ({"action": "branch", "branch": "run/x", "create_from": "nowhere"}, "unknown_start_point"),
        ({"action": "checkout"}, "missing_fields"),
        ({"action": "checkout", "sha": "HEAD"}, "checkout_needs_branch"),
        ({"action": "checkout", "branch": "run/none"}, "unknown_branch"),
        ({"action": "status", "force": True}, "unknown_argument"),
    ],
)
async def test_a_bad_git_call_is_refused_with_its_code_and_writes_nothing(
    home: Home, quest: Quest, args: dict, code: str
) -> None:
    async with artifact_client(home) as c:
        log = LogWatch(quest)
        branches = sorted(quest.repo().branches.local)
        assert (await refused(c, "git", args))["error"] == code
        assert log.types() == []
        assert sorted(quest.repo().branches.local) == branches
        assert not (quest.root / ".ds" / "worktrees").exists()


async def test_the_graph_action_records_and_draws_the_branch_graph(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        drawn = await ok(c, "git", {"action": "graph", "limit": 50})
    assert drawn["action"] == "graph" and drawn["result"]["graph"]["branches"][0]["name"] == "main"
    assert drawn["result"]["svg_path"] == "artifacts/graphs/git_graph.svg"
    assert (quest.root / drawn["result"]["svg_path"]).read_text().lstrip().startswith("<svg")
    rendered = [e for e in quest.log.read() if e.type == "git.graph_rendered"]
    assert len(rendered) == 1 and rendered[0].seq == drawn["seq"]
