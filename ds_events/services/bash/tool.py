"""The one-tool form of the bash_exec service: ``bash_exec(quest, BashExec)``.

What the `bash_exec` MCP tool (and the daemon's route) does with a request: check the
rules of its ``mode`` (``invalid_mode``, ``unexpected_id``, ``unexpected_command``,
``unexpected_argument``, the wait timeout, the read window) before anything starts, run
the operation the mode names (:mod:`.starting`, :mod:`.queries`, :mod:`.ending`), and
shape the answer (:class:`BashExecResult`).

DeepScientist's argument forms become the canonical operation here, and only here:
an argv list ``command`` is quoted word by word into one shell command; ``mode="create"``
is ``await``; ``read`` and ``await`` without an id (and, for await, without a command)
mean the latest session; ``start=S, tail=N`` is the window of N lines from line S;
``tail_limit``/``order`` answer the lines of a seq window as ``tail`` entries;
``timeout_seconds`` bounds the wait of an await of an existing session or of a kill.

The answer carries the fields DeepScientist's callers read beside ours: where the session
runs and what it is (``cwd``, ``kind``, ``log_path``, ``still_running``, the watchdog),
whether a wait ran out (``wait_timed_out``), and which lines of the log an answer holds
(``line_start``/``line_end``, ``has_more_*``, ``seq_window_*``, ``log_is_partial``, a
notice and a hint when it is partial), all derived from the session and its
:class:`OutputPage`.
"""

from __future__ import annotations

import asyncio
import os
import shlex

import msgspec
from msgspec import UNSET, UnsetType

from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest
from projections.bash_sessions import Session

from .commands import (
    DEFAULT_WINDOW_LINES,
    MODES,
    ORDERS,
    WATCHDOG_AFTER_SECONDS,
    AwaitSession,
    BashExec,
    BashExecResult,
    KillSession,
    ListSessions,
    LogEntry,
    OutputPage,
    ReadOutput,
    SessionItem,
    StartSession,
    check_kind,
)
from .ending import await_session, check_wait_timeout, kill_async
from .queries import check_window, list_sessions, read_output
from .sessions import kill_grace_seconds, watchdog_overdue
from .starting import start_or_reuse_async

__all__ = ["bash_exec", "command_text", "AWAIT_TAIL_LINES", "LOG_READ_HINT"]

AWAIT_TAIL_LINES = 50  # the output an await answers with
_WAIT_SLACK_SECONDS = 5.0  # after a new command's timeout and kill grace: time to record the end
LOG_READ_HINT = (
    "bash_exec(mode='read', id=..., start=S, tail=N) reads N lines from line S; tail=N the last N; "
    "after_seq=S or before_seq=S with limit=N pages by line number."
)

# The arguments each mode takes besides ``mode`` and ``comment`` (every command's: why the
# call is made; kept in its record). The rest must keep their defaults.
_TAKES: dict[str, frozenset[str]] = {
    "detach": frozenset({"command", "workdir", "env", "timeout_seconds", "idempotency_key", "kind"}),
    "start-await": frozenset({
        "command", "workdir", "env", "timeout_seconds", "wait_timeout_seconds", "idempotency_key", "kind",
    }),
    "await": frozenset({"id", "timeout_seconds", "wait_timeout_seconds"}),
    "read": frozenset({"id", "tail", "start", "after_seq", "before_seq", "tail_limit", "order", "limit"}),
    "kill": frozenset({"id", "force", "wait", "reason", "timeout_seconds", "wait_timeout_seconds"}),
    "list": frozenset({"limit", "kind"}),
    "history": frozenset({"limit", "kind"}),
}
_DEFAULTS = {f.name: f.default for f in msgspec.structs.fields(BashExec)}


async def bash_exec(quest: Quest, cmd: BashExec) -> BashExecResult:
    """Run one ``bash_exec`` request: check the mode's rules, then do what it says.

    Every rule that needs no state is checked before anything starts, so a bad request
    changes nothing. Blocking work (reading the log's tail, reconciling under the lock,
    spawning the monitor) runs in worker threads: concurrent calls on one event loop do
    not wait on each other.
    """
    if cmd.mode not in MODES:
        raise Invalid(f"unknown mode {cmd.mode!r}: use one of {', '.join(MODES)}", code="invalid_mode")
    mode = "await" if cmd.mode == "create" else cmd.mode
    command = command_text(cmd.command)
    has_command = cmd.command != ""  # an empty argv list is a command given empty: refused as such
    session_id = cmd.id or None
    reused = False
    starting = mode == "detach" or (mode == "await" and session_id is None and has_command)
    if starting and session_id is not None:
        raise Invalid(f"mode={mode!r} with a command starts a new session: leave out id", code="unexpected_id")
    if not starting and has_command:
        raise Invalid(
            "mode='await' with id waits on that session: leave out command, or id to start a new one"
            if mode == "await" else f"mode={mode!r} does not take a command",
            code="unexpected_command",
        )
    _check_arguments(cmd, "start-await" if starting and mode == "await" else mode)
    kind = check_kind(cmd.kind)
    if mode == "await":
        check_wait_timeout(_await_bound(cmd, starting))  # refuse before starting anything
    if starting:
        start_cmd = StartSession(command=command, workdir=cmd.workdir, env=cmd.env, timeout_seconds=cmd.timeout_seconds,
                                 idempotency_key=cmd.idempotency_key, kind=kind or "exec")  # fmt: skip
        session, reused = await start_or_reuse_async(quest, start_cmd)
        if mode == "detach":
            said = f"{session.id} was started with this idempotency_key before: not started again" if reused \
                else f"started {session.id}"
            result = _with_session(quest, "detach", session, message=said,
                                   next_step=f"bash_exec(mode='await', id='{session.id}') or mode='read'")
            result.wait_timed_out = False  # nothing was waited for
            if cmd.idempotency_key is not None:
                result.reused = reused
            return result
        session_id = session.id
    if mode in ("list", "history"):
        return await asyncio.to_thread(_listed, quest, mode, cmd.limit, kind)
    if mode == "await":
        session_id = session_id or _latest_id(quest)
        wait = _await_bound(cmd, starting)
        if starting and cmd.wait_timeout_seconds is None and cmd.timeout_seconds is not None:
            wait = cmd.timeout_seconds + kill_grace_seconds(quest) + _WAIT_SLACK_SECONDS  # the timeout's TERM, KILL, record
        session = await await_session(quest, AwaitSession(id=session_id, wait_timeout_seconds=wait))
        page = await asyncio.to_thread(read_output, quest, ReadOutput(id=session.id, tail=AWAIT_TAIL_LINES))
        awaited = _awaited(quest, session, page)
        if starting and cmd.idempotency_key is not None:
            awaited.reused = reused
        return awaited
    if mode == "read":
        return await asyncio.to_thread(_read, quest, cmd, session_id)
    kill = KillSession(id=session_id or "", force=cmd.force, wait=cmd.wait, reason=cmd.reason,
                       wait_timeout_seconds=_wait_bound(cmd))
    session = await kill_async(quest, kill)
    text = "still stopping (the monitor escalates to KILL after the grace period)" \
        if session.status == "running" else f"ended: {session.status}"
    killed = _with_session(quest, "kill", session, message=text)
    if cmd.wait:
        killed.wait_timed_out = session.status == "running"
    return killed


def command_text(command: str | list[str]) -> str:
    """The shell command a ``command`` argument stands for: a string as it is; an argv
    list quoted word by word (so each item is one argument), a one-item list as the
    shell command it holds (DeepScientist's callers wrap a whole command line so)."""
    if isinstance(command, str):
        return command
    if len(command) == 1:
        return command[0]
    return shlex.join(command)


# -- private helpers -----------------------------------------------------------------


def _check_arguments(cmd: BashExec, form: str) -> None:
    """Refuse arguments the mode would not use: a dropped argument is a silent surprise."""
    takes = _TAKES[form]
    extra = [name for name, default in _DEFAULTS.items()
             if name not in ("mode", "command", "comment") and name not in takes and getattr(cmd, name) != default]
    if form == "kill" and not cmd.wait:
        extra += [n for n in ("timeout_seconds", "wait_timeout_seconds") if getattr(cmd, n) is not None]
    if extra:
        mode = "await" if form == "start-await" else form
        raise Invalid(
            f"mode={mode!r} does not take {', '.join(map(repr, extra))}"
            + (" (a wait bound needs wait=true)" if form == "kill" and not cmd.wait else "")
            + f": it takes {', '.join(sorted(takes))}",
            code="unexpected_argument", arguments=extra, mode=mode,
        )


def _wait_bound(cmd: BashExec) -> float | None:
    """How long to wait on an existing session: ``wait_timeout_seconds``, else
    ``timeout_seconds`` (DeepScientist's callers bound such a wait with it)."""
    return cmd.wait_timeout_seconds if cmd.wait_timeout_seconds is not None else cmd.timeout_seconds


def _await_bound(cmd: BashExec, starting: bool) -> float | None:
    if starting:  # timeout_seconds limits the new session; waiting for its end is what was asked
        return cmd.wait_timeout_seconds if cmd.wait_timeout_seconds is not None else cmd.timeout_seconds
    return _wait_bound(cmd)


def _latest_id(quest: Quest) -> str:
    sessions = quest.state("bash_sessions").sessions
    if not sessions:
        raise NotFound("no bash session in this quest yet: start one with command=...", code="no_sessions")
    return next(reversed(sessions))


def _read(quest: Quest, cmd: BashExec, session_id: str | None) -> BashExecResult:
    order = cmd.order
    if order is not None and order not in ORDERS:
        raise Invalid(f"order must be asc or desc, got {order!r}", code="invalid_order")
    by_seq = cmd.after_seq is not None or cmd.before_seq is not None or cmd.tail_limit is not None or order is not None
    if cmd.start is not None:
        if isinstance(cmd.start, bool) or cmd.start < 1:
            raise Invalid("start must be a line number >= 1", code="invalid_window", field="start")
        if by_seq:
            raise Invalid("start/tail is a line window: leave out after_seq, before_seq, tail_limit and order",
                          code="conflicting_window")
        if cmd.tail is not None and cmd.limit is not None:
            raise Invalid("with start, give the window's size as tail or limit, not both", code="conflicting_window")
        size = cmd.tail if cmd.tail is not None else cmd.limit or DEFAULT_WINDOW_LINES
        window = ReadOutput(id="", after_seq=cmd.start - 1, limit=size)
    elif by_seq and cmd.after_seq is None and cmd.before_seq is None and cmd.tail_limit is None:
        window = ReadOutput(id="", tail_limit=cmd.limit or DEFAULT_WINDOW_LINES)  # only an order: the latest lines
    else:
        window = ReadOutput(id="", tail=cmd.tail, after_seq=cmd.after_seq, before_seq=cmd.before_seq,
                            limit=cmd.limit, tail_limit=cmd.tail_limit)
    check_window(window)  # before the session is looked up: a bad window is refused as such
    window = msgspec.structs.replace(window, id=session_id or _latest_id(quest))
    page = read_output(quest, window)
    result = _with_session(quest, "read", page.session)
    if not by_seq:
        return _with_output(result, page)
    lines = page.lines[::-1] if order == "desc" else page.lines
    result.tail, result.order = [LogEntry(seq=seq, line=text) for seq, text in lines], order or "asc"
    return _with_window(result, page)


def _listed(quest: Quest, mode: str, limit: int | None, kind: str | None) -> BashExecResult:
    listed = list_sessions(quest, ListSessions(include_ended=mode == "history", limit=limit, kind=kind))
    sessions = listed.sessions if limit is None else listed.sessions[:limit]
    items = [SessionItem(bash_id=s.id, stop_reason=_stop_reason(s), **msgspec.structs.asdict(s)) for s in sessions]
    return BashExecResult(mode=mode, count=len(items), items=items, counts=listed.counts, summary=listed.summary)


def _stop_reason(session: Session) -> str | None:
    """Why a session was stopped (timeout, a kill's reason, monitor_gone); None otherwise."""
    return session.reason or None if session.status in ("terminated", "lost") else None


def _with_session(
    quest: Quest, mode: str, session: Session, *, message: str | UnsetType = UNSET, next_step: str | UnsetType = UNSET,
    done: bool | UnsetType = UNSET,
) -> BashExecResult:
    return BashExecResult(
        mode=mode, id=session.id, bash_id=session.id, status=session.status, exit_code=session.exit_code,
        stop_reason=_stop_reason(session), session=session, message=message, next=next_step, done=done,
        cwd=_cwd(quest, session), kind=session.kind, log_path=session.log_path,
        still_running=session.status == "running", watchdog_after_seconds=WATCHDOG_AFTER_SECONDS,
        watchdog_overdue=watchdog_overdue(quest, session),
    )  # fmt: skip


def _cwd(quest: Quest, session: Session) -> str:
    """Where the command runs, absolute: the recorded workdir is relative to the quest
    root (or absolute, in a worktree); the root as the start resolved it."""
    return os.path.normpath(os.path.join(os.path.realpath(quest.root), session.workdir))


def _partial(page: OutputPage) -> bool:
    """Whether lines of the log are missing from the answer (a preview, a window)."""
    if not page.total_lines:
        return False
    return page.omitted is not None or page.first_seq != 1 or page.last_seq != page.total_lines


def _with_output(result: BashExecResult, page: OutputPage) -> BashExecResult:
    result.log = page.output
    result.omitted = list(page.omitted) if page.omitted else None
    return _with_window(result, page)


def _with_window(result: BashExecResult, page: OutputPage) -> BashExecResult:
    """Which lines of the log ``page`` holds, in our fields and DeepScientist's. A line's
    number is its seq, so the line window and the seq window are the same numbers."""
    total, first, last, partial = page.total_lines, page.first_seq, page.last_seq, _partial(page)
    result.log_line_count, result.log_truncated, result.log_is_partial = total, partial, partial
    result.first_seq, result.last_seq = first, last
    result.line_start = result.seq_window_start = first
    result.line_end = result.seq_window_end = last
    before = first is not None and first > 1  # an empty window says neither: it has no place in the log
    after = last is not None and last < total
    result.has_more_before = result.seq_has_more_before = before
    result.has_more_after = result.seq_has_more_after = after
    if page.omitted is not None:
        omitted_first, omitted_last = page.omitted
        result.log_preview_head_lines = omitted_first - 1
        result.log_preview_tail_lines = total - omitted_last
        result.log_preview_omitted_lines = omitted_last - omitted_first + 1
    if partial:
        result.log_truncation_notice = _truncation_notice(page)
        result.log_read_hint = LOG_READ_HINT
    return result


def _truncation_notice(page: OutputPage) -> str:
    """What a partial answer leaves out, said so that nobody takes it for the whole log."""
    total, first, last = page.total_lines, page.first_seq, page.last_seq
    if first is None or last is None:
        return f"This window holds none of the log's {total} lines."
    if page.omitted is not None:
        omitted_first, omitted_last = page.omitted
        return (
            f"A preview, not the whole log: lines 1-{omitted_first - 1} and {omitted_last + 1}-{total} of {total}; "
            f"the {omitted_last - omitted_first + 1} lines {omitted_first}-{omitted_last} are left out. "
            "Do not take it for all of the output."
        )
    return (
        f"Lines {first}-{last} of {total} only ({first - 1} before, {total - last} after): "
        "not the whole log. Read the lines around it before concluding from it."
    )


def _awaited(quest: Quest, session: Session, page: OutputPage) -> BashExecResult:
    done = session.status != "running"
    result = _with_output(_with_session(quest, "await", session, done=done), page)
    result.wait_timed_out = not done  # the wait ended before the session did
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
