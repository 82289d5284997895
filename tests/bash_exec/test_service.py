"""The bash_exec service on its own: the one-tool form's rules and answers without an MCP
server (what an HTTP route reuses), the per-operation commands decoded from JSON, and
session records that do not change under whoever holds them."""

from __future__ import annotations

import asyncio
import os
import time

import msgspec
import pytest

from ds_events.errors import Invalid, NotFound, ServiceError
from ds_events.events import decode_line
from ds_events.services import bash as service
from ds_events.services.bash import tool as bash_tool
from ds_events.services.bash.commands import (
    BashExec,
    GetSession,
    KillSession,
    ListSessions,
    OutputPage,
    ReadOutput,
    SessionList,
)
from ds_events.services.bash.sessions import watchdog_overdue
from ds_events.services.commands import decode_command
from projections import bash_sessions

from .support import call, client_for, session_of, start, wait_until

# The fields the tool answers with, per mode (DeepScientist's names where it has the concept).
_SESSION = {"mode", "id", "bash_id", "status", "exit_code", "stop_reason", "session",
            "cwd", "kind", "log_path", "still_running", "watchdog_after_seconds", "watchdog_overdue"}
_LOG = {"log", "log_line_count", "log_truncated", "first_seq", "last_seq", "omitted"}
# Which lines an answer holds (a partial one adds log_truncation_notice and log_read_hint).
_WINDOW = {"line_start", "line_end", "has_more_before", "has_more_after", "seq_window_start", "seq_window_end",
           "seq_has_more_before", "seq_has_more_after", "log_is_partial"}
FIELDS = {
    "detach": _SESSION | {"message", "next", "wait_timed_out"},
    "await": _SESSION | _LOG | _WINDOW | {"done", "message", "wait_timed_out"},
    "read": _SESSION | _LOG | _WINDOW,
    "kill": _SESSION | {"message"},
    "list": {"mode", "count", "items", "counts", "summary"},
    "history": {"mode", "count", "items", "counts", "summary"},
}
_PARTIAL = {"log_truncation_notice", "log_read_hint"}


async def _run(quest, **args) -> dict:
    """One request as an HTTP route would make it: decode the JSON body, call the service."""
    return msgspec.to_builtins(await bash_tool.bash_exec(quest, decode_command(BashExec, args)))


async def test_every_mode_runs_through_the_service_alone_with_the_fields_the_tool_answers(quest):
    done = await _run(quest, command="seq 3", mode="await", wait_timeout_seconds=20)
    assert set(done) == FIELDS["await"] and done["done"] is True and done["log"] == "1\n2\n3"
    assert done["omitted"] is None and done["session"] == msgspec.to_builtins(session_of(quest, done["id"]))
    running = await _run(quest, command="echo up; sleep 300")
    assert set(running) == FIELDS["detach"] and running["status"] == "running"
    waited = await _run(quest, mode="await", id=running["id"], wait_timeout_seconds=0)
    assert set(waited) == FIELDS["await"] | {"next"} and waited["done"] is False
    read = await _run(quest, mode="read", id=done["id"], tail=2)
    assert set(read) == FIELDS["read"] | _PARTIAL and (read["log"], read["first_seq"], read["last_seq"]) == ("2\n3", 2, 3)
    for mode in ("list", "history"):
        listed = await _run(quest, mode=mode)
        assert set(listed) == FIELDS[mode]
    assert [s["id"] for s in (await _run(quest, mode="history"))["items"]] == [running["id"], done["id"]]
    killed = await _run(quest, mode="kill", id=running["id"], force=True, wait=True)
    assert set(killed) == FIELDS["kill"] | {"wait_timed_out"} and killed["status"] == "terminated"
    assert killed["wait_timed_out"] is False and killed["still_running"] is False


async def test_the_tool_answers_exactly_what_the_service_answers(quest):
    async with client_for(quest) as c:
        done = await call(c, command="seq 500", mode="await", wait_timeout_seconds=20)
        for args in ({"mode": "read", "id": done["id"]}, {"mode": "read", "id": done["id"], "after_seq": 10, "limit": 3},
                     {"mode": "history"}, {"mode": "list"}):
            assert await call(c, **args) == await _run(quest, **args), args


async def test_answers_say_where_a_session_runs_what_it_is_and_whether_a_wait_ran_out(quest):
    (quest.root / "sub").mkdir()
    started = await _run(quest, command="echo up; sleep 300", workdir="sub")
    sid = started["id"]
    assert started["cwd"] == str((quest.root / "sub").resolve()) and started["kind"] == "exec"
    assert started["log_path"] == f".ds/bash_exec/{sid}/output.log" == started["session"]["log_path"]
    assert (quest.root / started["log_path"]).is_file()
    assert (started["still_running"], started["wait_timed_out"]) == (True, False)
    assert (started["watchdog_after_seconds"], started["watchdog_overdue"]) == (1800, False)
    waited = await _run(quest, mode="await", id=sid, wait_timeout_seconds=0.2)
    assert (waited["wait_timed_out"], waited["still_running"], waited["done"], waited["status"]) == (True, True, False, "running")
    assert waited["cwd"] == started["cwd"]
    done = await _run(quest, command="pwd", mode="await", wait_timeout_seconds=20)
    assert (done["wait_timed_out"], done["still_running"], done["done"]) == (False, False, True)
    assert done["log"] == done["cwd"] == str(quest.root.resolve())
    killed = await _run(quest, mode="kill", id=sid, force=True)  # no wait: nothing to time out
    assert "wait_timed_out" not in killed and killed["kind"] == "exec"


async def test_kind_is_recorded_at_start_and_list_and_history_filter_by_it_in_any_case(home, quest):
    (home.root / "config.yaml").write_text("bash_exec:\n  kill_grace_seconds: 600\n")
    term = await _run(quest, command="trap '' TERM; echo ready; sleep 300", kind="Terminal")
    plain = await _run(quest, command="sleep 300")
    done = await _run(quest, command="true", mode="await", wait_timeout_seconds=20, kind="EXEC")
    assert (term["kind"], plain["kind"], done["kind"]) == ("terminal", "exec", "exec")
    started = [(e.session_id, e.kind) for e in quest.log.read() if e.type == "bash.session_started"]
    assert started == [(term["id"], "terminal"), (plain["id"], "exec"), (done["id"], "exec")]
    terminals = await _run(quest, mode="list", kind="terminal")
    assert terminals["count"] == 1 and [(i["bash_id"], i["kind"]) for i in terminals["items"]] == [(term["id"], "terminal")]
    execs = await _run(quest, mode="history", kind="Exec")
    assert execs["count"] == 2 and [i["bash_id"] for i in execs["items"]] == [done["id"], plain["id"]]
    assert (await _run(quest, mode="list", kind="exec"))["count"] == 1  # the running exec one
    # The summary is the quest's, whatever the filter; a session being stopped still runs.
    assert terminals["summary"] == execs["summary"] == {"session_count": 3, "running_count": 2}
    wait_until(lambda: "ready" in (quest.root / term["log_path"]).read_text(), what="the trap to be set")
    stopping = await _run(quest, mode="kill", id=term["id"])  # TERM ignored; KILL only after 600 s
    assert stopping["status"] == "running" and stopping["session"]["kill_requested"] is True
    history = await _run(quest, mode="history")
    assert history["summary"] == {"session_count": 3, "running_count": 2} and history["counts"]["running"] == 2


async def test_read_answers_say_which_lines_they_hold_and_how_to_read_the_rest(quest):
    done = await _run(quest, command="seq 1 30", mode="await", wait_timeout_seconds=20)
    whole = await _run(quest, mode="read", id=done["id"])
    assert (whole["line_start"], whole["line_end"], whole["log_is_partial"]) == (1, 30, False)
    assert (whole["has_more_before"], whole["has_more_after"], whole["seq_window_start"], whole["seq_window_end"]) \
        == (False, False, 1, 30)
    assert "log_truncation_notice" not in whole and "log_read_hint" not in whole and "log_preview_head_lines" not in whole
    middle = await _run(quest, mode="read", id=done["id"], start=11, tail=5)
    assert (middle["line_start"], middle["line_end"], middle["has_more_before"], middle["has_more_after"]) == (11, 15, True, True)
    assert (middle["seq_has_more_before"], middle["seq_has_more_after"], middle["log_is_partial"]) == (True, True, True)
    assert middle["log_truncation_notice"].startswith("Lines 11-15 of 30 only (10 before, 15 after)")
    assert middle["log_read_hint"] == bash_tool.LOG_READ_HINT
    first = await _run(quest, mode="read", id=done["id"], start=1, tail=30)
    assert (first["log_is_partial"], first["has_more_after"]) == (False, False)
    newest = await _run(quest, mode="read", id=done["id"], tail_limit=4, order="desc")
    assert [e["seq"] for e in newest["tail"]] == [30, 29, 28, 27]
    assert (newest["seq_window_start"], newest["seq_window_end"], newest["seq_has_more_before"]) == (27, 30, True)
    past = await _run(quest, mode="read", id=done["id"], after_seq=30)
    assert (past["line_start"], past["line_end"], past["has_more_before"], past["has_more_after"]) == (None, None, False, False)
    assert past["log_is_partial"] is True and past["log_truncation_notice"] == "This window holds none of the log's 30 lines."


async def test_an_await_answer_of_a_long_log_says_it_holds_only_the_last_lines(quest):
    done = await _run(quest, command="seq 1 80", mode="await", wait_timeout_seconds=20)
    assert done["log"].splitlines() == [str(n) for n in range(31, 81)]
    assert (done["line_start"], done["line_end"], done["has_more_before"], done["log_is_partial"]) == (31, 80, True, True)
    assert done["log_truncation_notice"].startswith("Lines 31-80 of 80 only (30 before, 0 after)")


def test_a_running_session_silent_for_the_watchdog_time_is_overdue_and_an_ended_one_never(quest):
    session = start(quest, "echo once; sleep 300")
    log = quest.root / session.log_path
    wait_until(lambda: log.is_file() and "once" in log.read_text(), what="the first line")
    now = time.time()
    assert watchdog_overdue(quest, session, now=now) is False
    assert watchdog_overdue(quest, session, now=now + 1800 + 5) is True
    os.utime(log, (now + 1000, now + 1000))  # the last output later: silent only since then
    assert watchdog_overdue(quest, session, now=now + 1805) is False
    assert watchdog_overdue(quest, session, now=now + 2805) is True
    ended = service.kill(quest, KillSession(id=session.id, force=True, wait=True))
    assert ended.status == "terminated" and watchdog_overdue(quest, ended, now=now + 10**6) is False


@pytest.mark.parametrize(
    "args, code",
    [
        ({"command": "true", "mode": "run"}, "invalid_mode"),
        ({"command": "true", "id": "bx-00000000"}, "unexpected_id"),
        ({"mode": "read", "id": "bx-1", "command": "ls"}, "unexpected_command"),
        ({"mode": "read"}, "no_sessions"),
        ({"mode": "await"}, "no_sessions"),
        ({"mode": "kill"}, "missing_id"),
        ({"mode": "kill", "id": ""}, "missing_id"),
        ({"mode": "read", "id": "bx-1", "force": True}, "unexpected_argument"),
        ({"mode": "kill", "id": "bx-1", "timeout_seconds": 5}, "unexpected_argument"),
        ({"mode": "read", "order": "newest"}, "invalid_order"),
        ({"mode": "await", "id": "bx-00000000"}, "unknown_session"),
        ({"command": "true", "mode": "await", "wait_timeout_seconds": -1}, "invalid_timeout"),
        ({"command": ""}, "empty_command"),
        ({"mode": "history", "limit": 0}, "invalid_window"),
        ({"mode": "read", "tail": "3"}, "invalid_argument"),
        ({"mode": "read", "lines": 3}, "unknown_argument"),
        ({"command": "true", "kind": "daemon"}, "invalid_kind"),
        ({"command": "true", "mode": "await", "kind": ""}, "invalid_kind"),
        ({"mode": "list", "kind": "shell"}, "invalid_kind"),
        ({"mode": "history", "kind": 3}, "invalid_argument"),
        ({"mode": "read", "kind": "exec"}, "unexpected_argument"),
        ({"mode": "kill", "id": "bx-1", "kind": "exec"}, "unexpected_argument"),
    ],
)
async def test_a_bad_request_to_the_service_gets_the_tools_code_and_changes_nothing(quest, args, code):
    before = quest.log.last_seq
    with pytest.raises(ServiceError) as info:
        await _run(quest, **args)
    assert info.value.code == code and str(info.value)
    assert quest.log.last_seq == before and not (quest.root / ".ds" / "bash_exec").exists()


async def test_calls_on_one_server_run_side_by_side(quest):
    async with client_for(quest) as c:
        long = await call(c, command="echo up; sleep 300", mode="detach")
        waiting = asyncio.create_task(call(c, mode="await", id=long["id"], wait_timeout_seconds=60))
        quick = await call(c, command="echo hi", mode="await", wait_timeout_seconds=20)
        read = await call(c, mode="read", id=quick["id"])
        assert quick["log"] == read["log"] == "hi" and not waiting.done()
        await call(c, mode="kill", id=long["id"], force=True)
        waited = await asyncio.wait_for(waiting, 30)
    assert waited["done"] is True and waited["status"] == "terminated"


def test_the_operations_take_commands_decoded_from_json_and_answer_structs(quest):
    session = start(quest, "seq 5")
    wait_until(lambda: session_of(quest, session.id).status == "completed", what="seq to finish")
    page = service.read_output(quest, decode_command(ReadOutput, {"id": session.id, "after_seq": 1, "limit": 2}))
    assert isinstance(page, OutputPage) and page.lines == [(2, "2"), (3, "3")] and page.output == "2\n3"
    assert page.session.status == "completed" and page.total_lines == 5
    listed = service.list_sessions(quest, decode_command(ListSessions, {"include_ended": True}))
    assert isinstance(listed, SessionList) and [s.id for s in listed.sessions] == [session.id]
    assert listed.counts["completed"] == 1
    assert service.get_session(quest, decode_command(GetSession, {"id": session.id})) == session_of(quest, session.id)
    with pytest.raises(Invalid) as missing:
        decode_command(GetSession, {})
    assert missing.value.code == "missing_argument"
    with pytest.raises(NotFound) as unknown:
        service.kill(quest, decode_command(KillSession, {"id": "bx-nope"}))
    assert unknown.value.code == "unknown_session"


def test_a_session_record_obtained_before_an_event_does_not_change_after_it(home, quest):
    (home.root / "config.yaml").write_text("bash_exec:\n  progress_interval_seconds: 0\n")
    session = start(quest, "echo '__DS_PROGRESS__ {\"step\": 1}'; sleep 300")
    held = session_of(quest, session.id)
    wait_until(lambda: session_of(quest, session.id).progress == {"step": 1}, what="the progress report")
    killed = service.kill(quest, KillSession(id=session.id, force=True, wait=True))
    assert killed.status == "terminated" and killed.kill_requested
    assert held == session  # neither the progress, the kill request nor the exit touched it
    assert (held.status, held.progress, held.kill_requested) == ("running", None, False)
    with pytest.raises(AttributeError):
        held.status = "completed"  # type: ignore[misc]


def test_apply_replaces_a_changed_session_and_leaves_the_one_it_replaced_as_it_was(quest):
    session = start(quest, "echo '__DS_PROGRESS__ {\"step\": 1}'; echo bye")
    wait_until(lambda: session_of(quest, session.id).status == "completed", what="the session to end")
    events = [decode_line(line) for _seq, line in quest.log.iter_lines(after_seq=0)]
    state = bash_sessions.PROJECTION.initial()
    seen = []
    for event in events:
        before = state.sessions.get(session.id)
        copy = msgspec.structs.replace(before) if before is not None else None
        state = bash_sessions.apply(state, event)
        if before is not None:
            assert before == copy, event.type  # unchanged, field by field
            if state.sessions[session.id] != before:
                seen.append(event.type)
    assert seen == ["bash.progress", "bash.session_exited"]
