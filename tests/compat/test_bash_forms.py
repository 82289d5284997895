"""DeepScientist's `bash_exec` call forms, through a real stdio MCP server.

The calls are the forms DeepScientist's system prompt, skills and tests send (argv
commands, ``mode="create"``, ``timeout_seconds`` bounding a wait, reads of the latest
session, ``start``/``tail`` line windows, ``after_seq``/``tail_limit``/``order`` seq
windows, kill with ``wait`` and ``timeout_seconds``); each asserts the fields its callers
read (``bash_id``, ``status``, ``exit_code``, ``stop_reason``, ``log``, ``log_line_count``,
``log_truncated``, ``tail`` entries, ``count``/``items``) and the events in the log.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import pytest

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import bash as service
from ds_events.services.bash.commands import KillSession
from tests.helpers import domain_events, stdio_server, tool_error


@pytest.fixture(autouse=True)
def _no_session_outlives_its_test(quest: Quest) -> Iterator[None]:
    yield
    for session in quest.state("bash_sessions").sessions.values():
        if session.status == "running":
            service.kill(quest, KillSession(id=session.id, force=True, reason="test_cleanup"))


def stdio(home: Home) -> mcp.Client:
    """A real `ds mcp --namespace bash_exec` process bound to quest q1."""
    return mcp.Client(stdio_server(home, "bash_exec"))


async def call(client: mcp.Client, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("bash_exec", args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    return result.structured_content  # type: ignore[return-value]


def bash_events(quest: Quest, session_id: str) -> list[Any]:
    return [e for e in quest.log.read() if e.type.startswith("bash.") and e.session_id == session_id]


async def test_argv_and_one_item_list_commands_run_and_are_recorded_as_shell_commands(home: Home, quest: Quest):
    async with stdio(home) as c:
        argv = await call(c, command=["printf", "%s\n", "argv ok", "it's"], mode="await", timeout_seconds=20)
        wrapped = await call(c, command=["printf 'one item\\n'"], mode="await", timeout_seconds=20)
    assert (argv["status"], argv["exit_code"], argv["stop_reason"]) == ("completed", 0, None)
    assert argv["bash_id"] == argv["id"] and argv["log"].splitlines() == ["argv ok", "it's"]
    assert bash_events(quest, argv["bash_id"])[0].command == shlex.join(["printf", "%s\n", "argv ok", "it's"])
    assert wrapped["status"] == "completed" and wrapped["log"] == "one item"
    assert bash_events(quest, wrapped["bash_id"])[0].command == "printf 'one item\\n'"


async def test_create_waits_for_a_new_command_until_its_timeout_seconds_end_it(home: Home, quest: Quest):
    async with stdio(home) as c:
        quick = await call(c, command="sleep 0.2; echo done", mode="create", timeout_seconds=30)
        cut = await call(c, command="echo start; sleep 30", mode="create", timeout_seconds=1)
    assert (quick["mode"], quick["status"], quick["exit_code"], quick["log"]) == ("await", "completed", 0, "done")
    assert (cut["status"], cut["stop_reason"], cut["exit_code"], cut["done"]) == ("terminated", "timeout", None, True)
    types = [e.type for e in bash_events(quest, cut["bash_id"])]
    assert types == ["bash.session_started", "bash.session_exited"]
    assert bash_events(quest, cut["bash_id"])[-1].reason == "timeout"


async def test_timeout_seconds_bounds_an_await_of_an_existing_session_and_a_kill_with_wait(home: Home, quest: Quest):
    async with stdio(home) as c:
        started = await call(c, command="echo up; sleep 60", mode="detach")
        early = await call(c, mode="await", id=started["bash_id"], timeout_seconds=0.3)
        latest = await call(c, mode="await", timeout_seconds=0.3)  # no id, no command: the latest session
        stopped = await call(c, mode="kill", id=started["bash_id"], reason="superseded", force=True,
                             wait=True, timeout_seconds=20)
    assert (early["status"], early["done"], early["exit_code"]) == ("running", False, None)
    assert "mode='await'" in early["next"] and latest["bash_id"] == started["bash_id"]
    assert (stopped["status"], stopped["stop_reason"]) == ("terminated", "superseded")
    types = [e.type for e in bash_events(quest, started["bash_id"])]
    assert types == ["bash.session_started", "bash.kill_requested", "bash.session_exited"]
    assert bash_events(quest, started["bash_id"])[1].reason == "superseded"


async def test_reads_by_line_window_and_by_seq_window_and_of_the_latest_session(home: Home, quest: Quest):
    async with stdio(home) as c:
        done = await call(c, command="seq -f 'line-%g' 1 40", mode="await", wait_timeout_seconds=30)
        whole = await call(c, mode="read")  # no id: the latest session
        window = await call(c, mode="read", id=done["bash_id"], start=11, tail=5)
        last = await call(c, mode="read", id=done["bash_id"], tail=3)
        newest = await call(c, mode="read", id=done["bash_id"], tail_limit=5, order="desc")
        after = await call(c, mode="read", id=done["bash_id"], after_seq=10, tail_limit=5)
        page = await call(c, mode="read", id=done["bash_id"], after_seq=10, limit=3, order="asc")
    assert whole["bash_id"] == done["bash_id"] and (whole["log_line_count"], whole["log_truncated"]) == (40, False)
    assert whole["log"].splitlines() == [f"line-{n}" for n in range(1, 41)]
    assert window["log"] == "\n".join(f"line-{n}" for n in range(11, 16))
    assert (window["first_seq"], window["last_seq"], window["log_line_count"], window["log_truncated"]) == (11, 15, 40, True)
    assert last["log"] == "line-38\nline-39\nline-40" and last["first_seq"] == 38
    assert [e["seq"] for e in newest["tail"]] == [40, 39, 38, 37, 36] and newest["order"] == "desc"
    assert newest["tail"][0] == {"seq": 40, "line": "line-40"} and "log" not in newest
    assert [e["seq"] for e in after["tail"]] == [36, 37, 38, 39, 40] and after["log_truncated"] is True
    assert [e["line"] for e in page["tail"]] == ["line-11", "line-12", "line-13"]


async def test_list_and_history_answer_count_and_items_with_bash_id(home: Home, quest: Quest):
    async with stdio(home) as c:
        failed = await call(c, command="exit 4", mode="await", wait_timeout_seconds=30)
        running = await call(c, command="sleep 60", mode="detach")
        listed = await call(c, mode="list")
        history = await call(c, mode="history")
    assert listed["count"] == 1 and [i["bash_id"] for i in listed["items"]] == [running["bash_id"]]
    assert history["count"] == 2 and [i["bash_id"] for i in history["items"]] == [running["bash_id"], failed["bash_id"]]
    assert (history["items"][1]["status"], history["items"][1]["exit_code"]) == ("failed", 4)
    assert history["counts"]["running"] == 1 and history["counts"]["failed"] == 1


REFUSED = [
    ({"mode": "read", "id": "bx-00000000", "force": True}, "unexpected_argument"),
    ({"mode": "kill", "id": "bx-00000000", "timeout_seconds": 5}, "unexpected_argument"),  # a wait bound without wait
    ({"mode": "detach", "command": "true", "tail_limit": 5}, "unexpected_argument"),
    ({"mode": "read", "order": "sideways"}, "invalid_order"),
    ({"mode": "read", "start": 3, "after_seq": 1}, "conflicting_window"),
    ({"mode": "read", "tail": 3, "tail_limit": 3}, "conflicting_window"),
    ({"mode": "read", "start": 0}, "invalid_window"),
    ({"mode": "create", "command": []}, "empty_command"),
    ({"mode": "detach", "command": ["echo", 3]}, "invalid_argument"),
    ({"mode": "read"}, "no_sessions"),
    ({"mode": "kill"}, "missing_id"),
    ({"mode": "await", "id": "bx-00000000", "command": "ls"}, "unexpected_command"),
    ({"command": "true", "comment": 3}, "invalid_argument"),  # a comment is text or an object
]


async def test_each_refused_form_gets_its_code_and_changes_nothing(home: Home, quest: Quest):
    before = domain_events(quest)
    async with stdio(home) as c:
        for args, code in REFUSED:
            err = tool_error(await c.call_tool("bash_exec", args))
            assert err["error"] == code and err["message"], (args, err)
    assert domain_events(quest) == before and not (quest.root / ".ds" / "bash_exec").exists()


async def test_replay_rebuilds_the_sessions_file_byte_for_byte(home: Home, quest: Quest):
    async with stdio(home) as c:
        await call(c, command=["echo", "a b"], mode="create", timeout_seconds=20)
        started = await call(c, command="sleep 60", mode="detach")
        await call(c, mode="kill", id=started["bash_id"], wait=True, timeout_seconds=20)
    path = quest.root / ".ds" / "bash_exec" / "sessions.json"
    before = path.read_bytes()
    path.unlink()
    assert Path(path).exists() is False
    replay_quest(quest.root, quest_id=quest.id)
    assert path.read_bytes() == before
