"""Durable shell sessions: start, await, read, kill, list, reconcile.

A session is a shell command running in its own process group under a small monitor
process (:mod:`ds_events.bash_monitor`) started in its own OS session, so it outlives
whatever started it (a tool call, the MCP server, the daemon). The monitor writes the
numbered line log under ``.ds/bash_exec/<id>/``, enforces the timeout, and records
progress and the exit through :func:`record_progress` / :func:`record_exit`.

Start handshake (so the log never shows a session that did not start, nor misses one
that did): the service spawns the monitor and sends it the spec; the monitor starts the
command and answers with its pids; the service appends ``bash.session_started`` and
only then tells the monitor "go". If the service dies before that, the monitor sees its
stdin close, kills the command and exits: nothing ran unrecorded.

Each operation takes its command and answers a Struct (see
:mod:`ds_events.services.bash.commands`); the one-tool form with its modes is
:mod:`ds_events.services.bash.tool`.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from ds_events.bash import linelog, procs
from ds_events.bash.checks import (
    check_count,
    check_env,
    check_seconds,
    check_seq,
    resolve_workdir,
)
from ds_events.bash.spawn import MonitorHandle, StartSpec, spawn_monitor
from ds_events.errors import Invalid, NotFound
from ds_events.events import Event
from ds_events.events.bash import (
    BashKillRequested,
    BashProgress,
    BashSessionExited,
    BashSessionLost,
    BashSessionStarted,
    session_end_id,
)
from ds_events.config import Config
from ds_events.home import Quest
from projections.bash_sessions import Session, status_counts

from ds_events.services.bash.commands import (
    MODES,
    AwaitSession,
    GetSession,
    KillSession,
    ListSessions,
    OutputPage,
    ReadOutput,
    SessionList,
    StartSession,
)

__all__ = [
    "MODES",
    "Session",
    "StartSpec",
    "prepare_start",
    "start",
    "start_async",
    "get_session",
    "await_session",
    "check_wait_timeout",
    "check_window",
    "read_output",
    "kill",
    "kill_async",
    "kill_quest_sessions",
    "list_sessions",
    "reconcile",
    "record_progress",
    "record_exit",
    "session_dir",
    "kill_grace_seconds",
    "progress_interval_seconds",
]

MAX_COMMAND_CHARS = 100_000
MAX_WAIT_SECONDS = 1800.0
_POLL_SECONDS = 0.05  # how often a waiter looks for the end event
_RECONCILE_SECONDS = 1.0  # how often a waiter checks that the monitor still runs


# -- starting ------------------------------------------------------------------------


def prepare_start(quest: Quest, cmd: StartSession) -> StartSpec:
    """Validate a start request; raises :class:`Invalid` on bad input, starts nothing."""
    command = cmd.command
    if not isinstance(command, str) or not command.strip():
        raise Invalid("command is empty: pass the shell command to run, e.g. command='python train.py'",
                      code="empty_command")
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        raise Invalid(f"command must be at most {MAX_COMMAND_CHARS} characters without NUL bytes",
                      code="invalid_command")
    timeout = check_seconds("timeout_seconds", cmd.timeout_seconds, allow_zero=False)
    real, recorded = resolve_workdir(quest, cmd.workdir)
    extra = check_env(cmd.env)
    state = quest.state("bash_sessions")
    session_id = _new_session_id(state.sessions)
    child_env = dict(os.environ)
    child_env.setdefault("TERM", "dumb")
    child_env.update(
        DS_QUEST_ID=quest.id, DS_QUEST_ROOT=str(quest.root.resolve()), DS_BASH_SESSION_ID=session_id
    )
    child_env.update(extra)
    config = quest.home.config()  # parsed once: it is YAML, and a start is on a hot path
    return StartSpec(
        session_id=session_id,
        command=command,
        workdir=real,
        workdir_recorded=recorded,
        env=child_env,
        timeout_seconds=timeout,
        grace_seconds=kill_grace_seconds(quest, config),
        progress_interval=progress_interval_seconds(quest, config),
        started_by=quest.log.actor,
        quest_root=quest.root.resolve(),
        env_keys=sorted(extra),
        exit_retry_seconds=config.bash_exec.exit_retry_seconds,
    )


def start(quest: Quest, cmd: StartSession) -> Session:
    """Start ``cmd.command`` detached and return its session (status ``running``)."""
    spec = prepare_start(quest, cmd)
    handle = spawn_monitor(spec)
    try:
        quest.emit(_started_event(spec, handle))
    except BaseException:
        handle.abort()
        raise
    handle.go()
    return _session(quest, spec.session_id)


async def start_async(quest: Quest, cmd: StartSession) -> Session:
    """:func:`start` without blocking the event loop while the monitor comes up."""
    spec = await asyncio.to_thread(prepare_start, quest, cmd)
    handle = await asyncio.to_thread(spawn_monitor, spec)
    try:
        await quest.emit_async(_started_event(spec, handle))
    except BaseException:
        handle.abort()
        raise
    handle.go()
    return _session(quest, spec.session_id)


# -- inspecting ----------------------------------------------------------------------


def get_session(quest: Quest, cmd: GetSession) -> Session:
    """The session's current record; :class:`NotFound` for an unknown id."""
    return _session(quest, cmd.id)


async def await_session(quest: Quest, cmd: AwaitSession) -> Session:
    """Wait until the session ends or ``wait_timeout_seconds`` pass; returns its record.

    Checks every 50 ms for the end event (any process may append it) and once a second
    whether the monitor is still alive, so a session whose monitor died unseen ends
    as ``lost`` instead of being waited on for ever.
    """
    _session(quest, cmd.id)
    wait = _EndWait(quest, cmd.id, check_wait_timeout(cmd.wait_timeout_seconds))
    while (session := wait.ended()) is None:
        if wait.reconcile_due():
            await asyncio.to_thread(reconcile, quest, only=[cmd.id])
        await asyncio.sleep(wait.pause())
    return session


def check_wait_timeout(wait_timeout_seconds: float | None) -> float:
    """Seconds an await may wait: default 60, at most 30 minutes; negative is refused."""
    timeout = check_seconds("wait_timeout_seconds", wait_timeout_seconds, allow_zero=True)
    return 60.0 if timeout is None else min(timeout, MAX_WAIT_SECONDS)


def read_output(quest: Quest, cmd: ReadOutput) -> OutputPage:
    """A session's output lines and its record.

    No window: the whole log when small, else its head and tail (the middle is counted,
    not returned). ``tail=N``: the last N lines. ``after_seq`` / ``before_seq`` (with
    ``limit``, default 200): a page of lines by number; with ``tail_limit=N`` instead of
    ``limit``, the last N lines of that window (of the whole log without bounds). Memory stays bounded by what is
    returned, whatever the log's size.
    """
    session = _session(quest, cmd.id)
    check_window(cmd)
    tail, limit, tail_limit = cmd.tail, cmd.limit, cmd.tail_limit
    after_seq, before_seq = cmd.after_seq, cmd.before_seq
    if session.status == "running":
        reconcile(quest, only=[session.id])  # a reader must not be told "running" by a dead session
        session = _session(quest, session.id)
    path = quest.root / session.log_path
    if not path.is_file():
        found = linelog.LogSlice()
    elif tail is not None:
        found = linelog.tail(path, tail)
    elif tail_limit is not None:
        found = _last_of_window(path, after_seq, before_seq, tail_limit)
    elif after_seq is not None or before_seq is not None:
        found = linelog.window(path, after_seq=after_seq, before_seq=before_seq, limit=limit or 200)
    elif limit is not None:
        found = linelog.head(path, limit)
    else:
        found = linelog.preview(path)
    return OutputPage(
        session=session,
        lines=found.lines,
        first_seq=found.first_seq,
        last_seq=found.last_seq,
        total_lines=found.total_lines,
        omitted=found.omitted,
        output=found.text(),
    )


def check_window(cmd: ReadOutput) -> None:
    """Refuse a read window that no log could answer (needs no state: checked first)."""
    tail = check_count("tail", cmd.tail)
    limit = check_count("limit", cmd.limit)
    tail_limit = check_count("tail_limit", cmd.tail_limit)
    after_seq = check_seq("after_seq", cmd.after_seq)
    before_seq = check_seq("before_seq", cmd.before_seq)
    if tail is not None and (after_seq is not None or before_seq is not None or tail_limit is not None):
        raise Invalid("use either tail or after_seq/before_seq/tail_limit, not both", code="conflicting_window")
    if tail_limit is not None and limit is not None:
        raise Invalid("use either tail_limit (the last lines of the window) or limit (the first), not both",
                      code="conflicting_window")
    if after_seq is not None and before_seq is not None and before_seq <= after_seq + 1:
        raise Invalid("before_seq must be greater than after_seq + 1", code="empty_window")


def list_sessions(quest: Quest, cmd: ListSessions) -> SessionList:
    """Sessions (running only, or all newest first) and the count of each status."""
    limit = check_count("limit", cmd.limit)
    reconcile(quest)
    state = quest.state("bash_sessions")
    sessions = list(state.sessions.values())
    if cmd.include_ended:
        sessions.reverse()
        sessions = sessions[: limit or 50]
    else:
        sessions = [s for s in sessions if s.status == "running"]
    return SessionList(sessions=sessions, counts=status_counts(state))


# -- stopping ------------------------------------------------------------------------


def kill(quest: Quest, cmd: KillSession) -> Session:
    """Stop the session's whole process group: TERM now, KILL after the grace period
    (which the monitor enforces), or KILL at once with ``force``. An already ended
    session is returned unchanged. With ``wait``, blocks (grace + 10 s at most) until
    the session ends; else returns at once."""
    session, event = _plan_kill(quest, cmd)
    if event is not None:
        quest.emit(event)
        _signal_session(quest, session, cmd.force)
    if not cmd.wait:
        return _session(quest, cmd.id)
    wait = _EndWait(quest, cmd.id, _kill_wait(quest, cmd))
    while (session := wait.ended()) is None:
        if wait.reconcile_due():
            reconcile(quest, only=[cmd.id])
        time.sleep(wait.pause())
    return session


async def kill_async(quest: Quest, cmd: KillSession) -> Session:
    """:func:`kill` without blocking the event loop (the lock, the signals, the wait)."""
    session, event = await asyncio.to_thread(_plan_kill, quest, cmd)
    if event is not None:
        await quest.emit_async(event)
        await asyncio.to_thread(_signal_session, quest, session, cmd.force)
    if cmd.wait:
        return await await_session(quest, AwaitSession(id=cmd.id, wait_timeout_seconds=_kill_wait(quest, cmd)))
    return _session(quest, cmd.id)


def kill_quest_sessions(quest: Quest, *, reason: str) -> list[str]:
    """Kill every running session of the quest (pause/stop use this); returns their ids."""
    reconcile(quest)
    running = [s.id for s in quest.state("bash_sessions").sessions.values() if s.status == "running"]
    for session_id in running:
        kill(quest, KillSession(id=session_id, reason=reason))
    return running


# -- reconciliation ------------------------------------------------------------------


def reconcile(quest: Quest, *, only: list[str] | None = None) -> list[Event]:
    """Mark sessions recorded running whose monitor is gone as ``bash.session_lost``.

    A group that outlived its monitor is killed first: nobody reads its terminal or
    enforces its timeout any more. Safe to run from several processes at once: the
    decision is re-checked and the group killed under the log's lock, and the end
    event's id is derived from the session id, so each session ends at most once.
    """
    state = quest.state("bash_sessions")
    suspects = [
        s for s in state.sessions.values()
        if s.status == "running" and (only is None or s.id in only) and not _monitor_alive(s)
    ]
    if not suspects:
        return []
    with quest.transaction() as txn:
        current = quest.state("bash_sessions").sessions
        lost = []
        for s in suspects:
            if current[s.id].status != "running" or _monitor_alive(current[s.id]):
                continue
            # Killed under the lock: the process that records the loss is the one that
            # found the group alive or not, so ``group_alive`` says what really happened
            # even when several processes reconcile at once.
            alive = _kill_orphaned_group(s)
            lost.append(
                BashSessionLost(
                    id=session_end_id(s.id),
                    session_id=s.id,
                    reason="monitor_gone",
                    group_alive=alive,
                    detail=f"monitor pid {s.monitor_pid} no longer runs" + ("; its process group was killed" if alive else ""),
                )
            )
        return txn.append(lost) if lost else []


# -- what the monitor calls ----------------------------------------------------------


def record_progress(quest: Quest, session_id: str, line: int, data: dict[str, Any]) -> Event:
    return quest.emit(BashProgress(session_id=session_id, line=line, data=data))


def record_exit(
    quest: Quest,
    session_id: str,
    *,
    exit_code: int | None,
    signal_name: str | None,
    timed_out: bool,
    stop_reason: str | None,
    lines: int,
    nbytes: int,
    duration_seconds: float,
) -> Event | None:
    """Record how the command ended; the status follows from the facts and kill requests.

    Returns None when the session had already ended in the log (reconciled as lost).
    """
    with quest.transaction() as txn:
        session = quest.state("bash_sessions").sessions.get(session_id)
        if session is None or session.status != "running":
            return None
        if timed_out:
            status, reason = "terminated", "timeout"
        elif session.kill_requested:
            status, reason = "terminated", session.kill_reason or "user_stop"
        elif stop_reason:
            status, reason = "terminated", stop_reason
        elif exit_code == 0:
            status, reason = "completed", ""
        else:
            status, reason = "failed", ("signal" if signal_name else "exit_code")
        event = BashSessionExited(
            id=session_end_id(session_id),
            session_id=session_id,
            status=status,  # type: ignore[arg-type]
            exit_code=exit_code,
            signal=signal_name,
            reason=reason,
            lines=lines,
            bytes=nbytes,
            duration_seconds=round(duration_seconds, 3),
        )
        return txn.append(event)[0]


def session_dir(quest: Quest, session_id: str) -> Path:
    return quest.root / ".ds" / "bash_exec" / session_id


def kill_grace_seconds(quest: Quest, config: Config | None = None) -> float:
    """Seconds between TERM and KILL: ``bash_exec.kill_grace_seconds`` in config.yaml
    (``config``: the home's config when the caller has already read it)."""
    return (config or quest.home.config()).bash_exec.kill_grace_seconds


def progress_interval_seconds(quest: Quest, config: Config | None = None) -> float:
    """Least seconds between two ``bash.progress`` events of a session (the latest wins):
    ``bash_exec.progress_interval_seconds`` in config.yaml."""
    return (config or quest.home.config()).bash_exec.progress_interval_seconds


# -- private helpers -----------------------------------------------------------------


class _EndWait:
    """The steps of waiting for a session's end, shared by the blocking and the async
    waits (each sleeps and reconciles in its own way): look for the end event every
    :data:`_POLL_SECONDS`, check once every :data:`_RECONCILE_SECONDS` that the monitor
    still runs, give up at the deadline."""

    def __init__(self, quest: Quest, session_id: str | None, timeout: float) -> None:
        self.quest, self.session_id = quest, session_id
        self.deadline = time.monotonic() + timeout
        self.next_check = time.monotonic() + _RECONCILE_SECONDS

    def ended(self) -> Session | None:
        """The session once it ended or the wait is over; None while it should go on."""
        session = _session(self.quest, self.session_id)
        return session if session.status != "running" or time.monotonic() >= self.deadline else None

    def reconcile_due(self) -> bool:
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + _RECONCILE_SECONDS
        return True

    def pause(self) -> float:
        return min(_POLL_SECONDS, max(0.0, self.deadline - time.monotonic()))


def _session(quest: Quest, session_id: str | None) -> Session:
    found = quest.state("bash_sessions").sessions.get(_require_id(session_id))
    if found is None:
        raise NotFound(f"no bash session {session_id!r} in this quest: see mode='history' for every id",
                       code="unknown_session", id=session_id)
    return found  # type: ignore[no-any-return]


def _require_id(session_id: str | None) -> str:  # every operation's first check
    if not isinstance(session_id, str) or not session_id:
        raise Invalid("this mode needs the session id: pass id='bx-...' (see mode='list')", code="missing_id")
    return session_id


def _started_event(spec: StartSpec, handle: MonitorHandle) -> BashSessionStarted:
    info = handle.info
    return BashSessionStarted(
        session_id=spec.session_id,
        command=spec.command,
        workdir=spec.workdir_recorded,
        env_keys=spec.env_keys,
        pid=int(info["pid"]),
        pgid=int(info["pgid"]),
        monitor_pid=int(info["monitor_pid"]),
        start_time=info.get("start_time"),
        monitor_start_time=info.get("monitor_start_time"),
        boot_id=info.get("boot_id", ""),
        timeout_seconds=spec.timeout_seconds,
        started_by=spec.started_by,
        pty=bool(info.get("pty", True)),
        log_path=spec.log_rel,
    )


def _kill_wait(quest: Quest, cmd: KillSession) -> float:
    """Seconds a kill with ``wait`` waits: the caller's bound, else the grace period + 10 s."""
    if cmd.wait_timeout_seconds is None:
        return kill_grace_seconds(quest) + 10.0
    return check_wait_timeout(cmd.wait_timeout_seconds)


def _last_of_window(path: Path, after_seq: int | None, before_seq: int | None, n: int) -> linelog.LogSlice:
    """The last ``n`` lines with ``after_seq < seq < before_seq`` (either bound optional)."""
    total, _size = linelog.count(path)
    stop = total + 1 if before_seq is None else min(before_seq, total + 1)
    start_after = max(after_seq or 0, stop - 1 - n)
    return linelog.window(path, after_seq=start_after, before_seq=stop, limit=n)


def _plan_kill(quest: Quest, cmd: KillSession) -> tuple[Session, Event | None]:
    session_id, force, reason = cmd.id, cmd.force, cmd.reason
    session = _session(quest, session_id)
    if cmd.wait_timeout_seconds is not None:
        check_wait_timeout(cmd.wait_timeout_seconds)  # refused before anything is signalled
    if reason is not None and (not isinstance(reason, str) or len(reason) > 200 or "\n" in reason):
        raise Invalid("reason is one line of at most 200 characters", code="invalid_reason")
    if session.status != "running":
        return session, None
    reconcile(quest, only=[session_id])
    session = _session(quest, session_id)
    if session.status != "running":
        return session, None
    event = BashKillRequested(
        session_id=session_id,
        reason=reason or "user_stop",
        force=bool(force),
        grace_seconds=0.0 if force else kill_grace_seconds(quest),
        requested_by=quest.log.actor,
    )
    return session, event


def _signal_session(quest: Quest, session: Session, force: bool) -> None:
    """Signal the group now and wake the monitor, which escalates to KILL after grace."""
    if _group_is_ours(session):
        procs.signal_group(session.pgid, signal.SIGKILL if force else signal.SIGTERM)
    if _monitor_alive(session):
        try:
            os.kill(session.monitor_pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    else:
        reconcile(quest, only=[session.id])


def _monitor_alive(session: Session) -> bool:
    return procs.is_alive(session.monitor_pid, session.monitor_start_time, session.boot_id)


def _group_is_ours(session: Session) -> bool:
    """Whether signalling ``session.pgid`` reaches this session's processes.

    The leader alive with its recorded start time: yes. The leader gone but members
    left: yes (a group id is not reused while the group has members). The leader's pid
    taken by a newer process: no.
    """
    if procs.is_alive(session.pid, session.start_time, session.boot_id):
        return True
    if procs.is_alive(session.pid):
        return False
    return procs.group_alive(session.pgid)


def _kill_orphaned_group(session: Session) -> bool:
    if not _group_is_ours(session):
        return False
    return procs.signal_group(session.pgid, signal.SIGKILL)


def _new_session_id(existing: dict[str, Session]) -> str:
    while True:
        candidate = f"bx-{secrets.token_hex(4)}"
        if candidate not in existing:
            return candidate


