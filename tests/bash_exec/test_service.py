"""The bash_exec service on its own: the one-tool form's rules and answers without an MCP
server (what an HTTP route reuses), the per-operation commands decoded from JSON, and
session records that do not change under whoever holds them."""

from __future__ import annotations

import asyncio

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
from ds_events.services.commands import decode_command
from projections import bash_sessions

from .support import call, client_for, session_of, start, wait_until

# The fields the tool answers with, per mode (DeepScientist's names where it has the concept).
_SESSION = {"mode", "id", "bash_id", "status", "exit_code", "stop_reason", "session"}
_LOG = {"log", "log_line_count", "log_truncated", "first_seq", "last_seq", "omitted"}
FIELDS = {
    "detach": _SESSION | {"message", "next"},
    "await": _SESSION | _LOG | {"done", "message"},
    "read": _SESSION | _LOG,
    "kill": _SESSION | {"message"},
    "list": {"mode", "count", "items", "counts"},
    "history": {"mode", "count", "items", "counts"},
}


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
    assert set(read) == FIELDS["read"] and (read["log"], read["first_seq"], read["last_seq"]) == ("2\n3", 2, 3)
    for mode in ("list", "history"):
        listed = await _run(quest, mode=mode)
        assert set(listed) == FIELDS[mode]
    assert [s["id"] for s in (await _run(quest, mode="history"))["items"]] == [running["id"], done["id"]]
    killed = await _run(quest, mode="kill", id=running["id"], force=True, wait=True)
    assert set(killed) == FIELDS["kill"] and killed["status"] == "terminated"


async def test_the_tool_answers_exactly_what_the_service_answers(quest):
    async with client_for(quest) as c:
        done = await call(c, command="seq 500", mode="await", wait_timeout_seconds=20)
        for args in ({"mode": "read", "id": done["id"]}, {"mode": "read", "id": done["id"], "after_seq": 10, "limit": 3},
                     {"mode": "history"}, {"mode": "list"}):
            assert await call(c, **args) == await _run(quest, **args), args


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
