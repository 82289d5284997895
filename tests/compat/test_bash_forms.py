"""DeepScientist's `bash_exec` call forms, through a real stdio MCP server.

The calls are the forms DeepScientist's system prompt, skills and tests send (argv
commands, ``mode="create"``, ``timeout_seconds`` bounding a wait, reads of the latest
session, ``start``/``tail`` line windows, ``after_seq``/``tail_limit``/``order`` seq
windows, kill with ``wait`` and ``timeout_seconds``); each asserts the fields its callers
read (``bash_id``, ``status``, ``exit_code``, ``stop_reason``, ``log``, ``log_line_count``,
``log_truncated``, ``tail`` entries, ``count``/``items``; the read windows ``line_start``/
``line_end``, ``has_more_*``, ``seq_window_*``, ``log_is_partial``, the notice and hint,
the 500/1500-line preview; ``cwd``, ``kind``, ``log_path``, ``still_running``,
``wait_timed_out``, ``watchdog_after_seconds``; ``summary.running_count``) and the
events in the log.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp
import msgspec
import pytest

from ds_events.events import decode_line
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


async def test_detach_and_await_carry_cwd_kind_log_path_and_whether_the_wait_timed_out(home: Home, quest: Quest):
    async with stdio(home) as c:
        started = await call(c, command="echo up; sleep 60", mode="detach", kind="exec")
        waited = await call(c, mode="await", id=started["bash_id"], wait_timeout_seconds=1)
        done = await call(c, command="pwd", mode="await", timeout_seconds=20)
    root = str(quest.root.resolve())
    for answer in (started, waited, done):
        assert (answer["cwd"], answer["kind"], answer["watchdog_after_seconds"]) == (root, "exec", 1800)
        assert answer["log_path"] == f".ds/bash_exec/{answer['bash_id']}/output.log" and answer["watchdog_overdue"] is False
    assert (started["still_running"], started["wait_timed_out"]) == (True, False)
    assert (waited["still_running"], waited["wait_timed_out"], waited["status"]) == (True, True, "running")
    assert (done["still_running"], done["wait_timed_out"], done["log"]) == (False, False, root)
    assert [e.kind for e in bash_events(quest, started["bash_id"])[:1]] == ["exec"]


async def test_a_read_says_its_window_and_a_long_log_is_previewed_500_and_1500_lines(home: Home, quest: Quest):
    async with stdio(home) as c:
        small = await call(c, command="seq -f 'line-%g' 1 2000", mode="await", wait_timeout_seconds=30)
        big = await call(c, command="seq 1 2600", mode="await", wait_timeout_seconds=30)
        whole = await call(c, mode="read", id=small["bash_id"])
        preview = await call(c, mode="read", id=big["bash_id"])
        window = await call(c, mode="read", id=big["bash_id"], start=1000, tail=10)
        by_seq = await call(c, mode="read", id=big["bash_id"], after_seq=2590, tail_limit=5)
    # Up to 2000 lines: the whole log, said to be whole.
    assert (whole["log_line_count"], whole["log_truncated"], whole["log_is_partial"]) == (2000, False, False)
    assert (whole["line_start"], whole["line_end"], whole["has_more_before"], whole["has_more_after"]) == (1, 2000, False, False)
    assert len(whole["log"].splitlines()) == 2000 and "log_truncation_notice" not in whole
    # Longer: the first 500 and the last 1500 lines, the 600 between counted.
    assert (preview["log_truncated"], preview["log_is_partial"], preview["omitted"]) == (True, True, [501, 1100])
    assert (preview["log_preview_head_lines"], preview["log_preview_tail_lines"], preview["log_preview_omitted_lines"]) \
        == (500, 1500, 600)
    lines = preview["log"].splitlines()
    assert lines[499:502] == ["500", "... 600 lines omitted (seq 501..1100) ...", "1101"] and lines[-1] == "2600"
    assert "1-500 and 1101-2600 of 2600" in preview["log_truncation_notice"] and preview["log_read_hint"]
    assert (window["line_start"], window["line_end"], window["seq_window_start"], window["seq_window_end"]) \
        == (1000, 1009, 1000, 1009)
    assert (window["has_more_before"], window["has_more_after"], window["log_is_partial"]) == (True, True, True)
    assert "Lines 1000-1009 of 2600" in window["log_truncation_notice"] and "start=S, tail=N" in window["log_read_hint"]
    assert [e["seq"] for e in by_seq["tail"]] == [2596, 2597, 2598, 2599, 2600]
    assert (by_seq["seq_window_start"], by_seq["seq_window_end"]) == (2596, 2600)
    assert (by_seq["seq_has_more_before"], by_seq["seq_has_more_after"], by_seq["log_is_partial"]) == (True, False, True)


async def test_list_and_history_take_kind_and_carry_the_running_count(home: Home, quest: Quest):
    async with stdio(home) as c:
        term = await call(c, command="sleep 60", mode="detach", kind="Terminal")
        running = await call(c, command="sleep 60", mode="detach")
        ended = await call(c, command="true", mode="await", wait_timeout_seconds=20)
        terminals = await call(c, mode="list", kind="TERMINAL")
        execs = await call(c, mode="history", kind="exec")
        everything = await call(c, mode="history")
    assert term["kind"] == "terminal" and bash_events(quest, term["bash_id"])[0].kind == "terminal"
    assert [(i["bash_id"], i["kind"]) for i in terminals["items"]] == [(term["bash_id"], "terminal")]
    assert [i["bash_id"] for i in execs["items"]] == [ended["bash_id"], running["bash_id"]] and execs["count"] == 2
    assert everything["count"] == 3
    for listed in (terminals, execs, everything):
        assert listed["summary"] == {"session_count": 3, "running_count": 2}


async def test_a_start_logged_before_kind_existed_reads_as_exec(home: Home, quest: Quest):
    # A real start of the recorded demo quest (no kind field) and its end, appended to this
    # quest's log: ended, so no reconciliation looks at the recorded pids of another machine.
    recorded = Path(__file__).resolve().parents[2] / "fixtures" / "logs" / "demo_quest.jsonl"
    lines = recorded.read_text(encoding="utf-8").splitlines()
    line = next(raw for raw in lines if '"bash.session_started"' in raw)
    assert "kind" not in json.loads(line)
    old = decode_line(line.encode())
    assert old.kind == "exec"  # type: ignore[attr-defined]
    end = next(decode_line(raw.encode()) for raw in lines if '"bash.session_exited"' in raw
               and json.loads(raw)["session_id"] == old.session_id)  # type: ignore[attr-defined]
    with quest.transaction() as txn:
        txn.append([msgspec.structs.replace(e, seq=0, id="", ts="", prev="", quest_id="") for e in (old, end)])
    async with stdio(home) as c:
        history = await call(c, mode="history", kind="exec")
    assert [(i["bash_id"], i["kind"], i["status"]) for i in history["items"]] == [(old.session_id, "exec", "completed")]  # type: ignore[attr-defined]


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
    ({"command": "true", "mode": "detach", "kind": "daemon"}, "invalid_kind"),
    ({"mode": "list", "kind": "shell"}, "invalid_kind"),
    ({"mode": "history", "kind": ["exec"]}, "invalid_argument"),
    ({"mode": "read", "kind": "exec"}, "unexpected_argument"),
    ({"mode": "await", "id": "bx-00000000", "kind": "terminal"}, "unexpected_argument"),
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
        await call(c, command="true", mode="await", kind="terminal", timeout_seconds=20)
    path = quest.root / ".ds" / "bash_exec" / "sessions.json"
    before = path.read_bytes()
    kinds = [s["kind"] for s in json.loads(before)["sessions"]]
    assert kinds == ["exec", "exec", "terminal"]  # the kind is rebuilt from the start events
    path.unlink()
    assert Path(path).exists() is False
    replay_quest(quest.root, quest_id=quest.id)
    assert path.read_bytes() == before
