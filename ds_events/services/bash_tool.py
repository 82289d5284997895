"""The one-tool form of the bash_exec service: ``bash_exec(quest, BashExec)``.

What the `bash_exec` MCP tool (and the daemon's route) does with a request: check the
rules of its ``mode`` (``invalid_mode``, ``unexpected_id``, ``unexpected_command``, the
wait timeout) before anything starts, run the operation of
:mod:`ds_events.services.bash_exec` the mode names, and shape the answer
(:class:`BashExecResult`: the fields each mode has always answered with).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ds_events.errors import Invalid
from ds_events.home import Quest
from projections.bash_sessions import Session

from . import bash_exec as service
from .bash_commands import (
    MODES,
    AwaitSession,
    BashExec,
    BashExecResult,
    KillSession,
    ListSessions,
    OutputPage,
    ReadOutput,
    StartSession,
)

__all__ = ["bash_exec", "AWAIT_TAIL_LINES"]

AWAIT_TAIL_LINES = 50  # the output an await answers with


async def bash_exec(quest: Quest, cmd: BashExec) -> BashExecResult:
    """Run one ``bash_exec`` request: check the mode's rules, then do what it says.

    Every rule that needs no state is checked before anything starts, so a bad request
    changes nothing. Blocking work (reading the log's tail, reconciling under the lock,
    spawning the monitor) runs in worker threads: concurrent calls on one event loop do
    not wait on each other.
    """
    mode, session_id = cmd.mode, cmd.id
    if mode not in MODES:
        raise Invalid(f"unknown mode {mode!r}: use one of {', '.join(MODES)}", code="invalid_mode")
    starting = mode == "detach" or (mode == "await" and session_id is None)
    if starting and session_id is not None:
        raise Invalid("mode='detach' starts a new session: leave out id", code="unexpected_id")
    if not starting and cmd.command:
        raise Invalid(f"mode={mode!r} does not take a command", code="unexpected_command")
    if mode == "await":
        service.check_wait_timeout(cmd.wait_timeout_seconds)  # refuse before starting anything
    if starting:
        start_cmd = StartSession(command=cmd.command, workdir=cmd.workdir, env=cmd.env, timeout_seconds=cmd.timeout_seconds)
        session = await service.start_async(quest, start_cmd)
        if mode == "detach":
            return _with_session("detach", session, message=f"started {session.id}",
                                 next=f"bash_exec(mode='await', id='{session.id}') or mode='read'")
        session_id = session.id
    if mode in ("list", "history"):
        listed = await asyncio.to_thread(
            service.list_sessions, quest, ListSessions(include_ended=mode == "history", limit=cmd.limit)
        )
        return BashExecResult(mode=mode, sessions=listed.sessions, counts=listed.counts)
    session_id = session_id or ""  # the operation refuses it as missing_id
    if mode == "await":
        session = await service.await_session(quest, AwaitSession(id=session_id, wait_timeout_seconds=cmd.wait_timeout_seconds))
        page = await asyncio.to_thread(service.read_output, quest, ReadOutput(id=session.id, tail=AWAIT_TAIL_LINES))
        return _awaited(session, page)
    if mode == "read":
        window = ReadOutput(id=session_id, tail=cmd.tail, after_seq=cmd.after_seq, before_seq=cmd.before_seq, limit=cmd.limit)
        page = await asyncio.to_thread(service.read_output, quest, window)
        return _with_output(_with_session("read", page.session), page)
    session = await service.kill_async(quest, KillSession(id=session_id, force=cmd.force, wait=cmd.wait, reason=cmd.reason))
    text = "still stopping (the monitor escalates to KILL after the grace period)" \
        if session.status == "running" else f"ended: {session.status}"
    return _with_session("kill", session, message=text)


# -- private helpers -----------------------------------------------------------------


def _with_session(mode: str, session: Session, **extra: Any) -> BashExecResult:
    return BashExecResult(mode=mode, id=session.id, status=session.status, session=session, **extra)


def _with_output(result: BashExecResult, page: OutputPage) -> BashExecResult:
    result.output, result.total_lines = page.output, page.total_lines
    result.first_seq, result.last_seq = page.first_seq, page.last_seq
    result.omitted = list(page.omitted) if page.omitted else None
    return result


def _awaited(session: Session, page: OutputPage) -> BashExecResult:
    done = session.status != "running"
    result = _with_output(_with_session("await", session, done=done), page)
    if done:
        result.message = f"{session.id} ended: {session.status}" + (
            f" (exit code {session.exit_code})" if session.exit_code is not None else f" ({session.reason})"
        )
    else:
        result.message = f"{session.id} is still running; it keeps running in the background"
        result.next = (
            f"bash_exec(mode='await', id='{session.id}', wait_timeout_seconds=...) to keep waiting, "
            f"mode='read' for its output, or mode='kill' to stop it"
        )
    return result
