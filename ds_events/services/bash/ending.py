"""A durable shell session's end: waiting for it (await) and causing it (kill).

A kill records ``bash.kill_requested``, then signals the session's whole process group
(TERM, or KILL with ``force``) and wakes its monitor, which escalates to KILL after the
grace period and records the exit. A wait looks for the end event (any process may
append it) and, now and then, whether the monitor still runs, so a session whose
monitor died unseen ends as ``lost`` instead of being waited on for ever.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from ds_events.bash import procs
from ds_events.bash.checks import check_seconds
from ds_events.errors import Invalid
from ds_events.events.bash import BashKillRequested
from ds_events.home import Quest
from projections.bash_sessions import Session

from .commands import DEFAULT_WAIT_SECONDS, MAX_REASON_CHARS, MAX_WAIT_SECONDS, AwaitSession, KillSession
from .sessions import actor_of, group_is_ours, kill_grace_seconds, monitor_alive, reconcile, session_of

__all__ = ["await_session", "check_wait_timeout", "kill", "kill_async", "kill_quest_sessions"]

_POLL_SECONDS = 0.05  # how often a waiter looks for the end event
_RECONCILE_SECONDS = 1.0  # how often a waiter checks that the monitor still runs
_KILL_WAIT_SLACK = 10.0  # a kill's wait beyond the grace period: time for the monitor to record the end


async def await_session(quest: Quest, cmd: AwaitSession) -> Session:
    """Wait until the session ends or ``wait_timeout_seconds`` pass; returns its record.

    Checks every 50 ms for the end event (any process may append it) and once a second
    whether the monitor is still alive, so a session whose monitor died unseen ends
    as ``lost`` instead of being waited on for ever.
    """
    session_of(quest, cmd.id)
    wait = _EndWait(quest, cmd.id, check_wait_timeout(cmd.wait_timeout_seconds))
    while (session := wait.ended()) is None:
        if wait.reconcile_due():
            await asyncio.to_thread(reconcile, quest, only=[cmd.id])
        await asyncio.sleep(wait.pause())
    return session


def check_wait_timeout(wait_timeout_seconds: float | None) -> float:
    """Seconds an await may wait: default 60, at most 30 minutes; negative is refused."""
    timeout = check_seconds("wait_timeout_seconds", wait_timeout_seconds, allow_zero=True)
    return DEFAULT_WAIT_SECONDS if timeout is None else min(timeout, MAX_WAIT_SECONDS)


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
        return session_of(quest, cmd.id)
    wait = _EndWait(quest, cmd.id, _kill_wait(quest, cmd))
    while (ended := wait.ended()) is None:
        if wait.reconcile_due():
            reconcile(quest, only=[cmd.id])
        time.sleep(wait.pause())
    return ended


async def kill_async(quest: Quest, cmd: KillSession) -> Session:
    """:func:`kill` without blocking the event loop (the lock, the signals, the wait)."""
    session, event = await asyncio.to_thread(_plan_kill, quest, cmd)
    if event is not None:
        await quest.emit_async(event)
        await asyncio.to_thread(_signal_session, quest, session, cmd.force)
    if cmd.wait:
        return await await_session(quest, AwaitSession(id=cmd.id, wait_timeout_seconds=_kill_wait(quest, cmd)))
    return session_of(quest, cmd.id)


def kill_quest_sessions(quest: Quest, *, reason: str) -> list[str]:
    """Kill every running session of the quest (pause/stop use this); returns their ids."""
    reconcile(quest)
    running = [s.id for s in quest.state("bash_sessions").sessions.values() if s.status == "running"]
    for session_id in running:
        kill(quest, KillSession(id=session_id, reason=reason))
    return running


# -- private helpers -----------------------------------------------------------------


class _EndWait:
    """The steps of waiting for a session's end, shared by the blocking and the async
    waits (each sleeps and reconciles in its own way): look for the end event every
    :data:`_POLL_SECONDS`, check once every :data:`_RECONCILE_SECONDS` that the monitor
    still runs, give up at the deadline."""

    def __init__(self, quest: Quest, session_id: str, timeout: float) -> None:
        self.quest, self.session_id = quest, session_id
        self.deadline = time.monotonic() + timeout
        self.next_check = time.monotonic() + _RECONCILE_SECONDS

    def ended(self) -> Session | None:
        """The session once it ended or the wait is over; None while it should go on."""
        session = session_of(self.quest, self.session_id)
        return session if session.status != "running" or time.monotonic() >= self.deadline else None

    def reconcile_due(self) -> bool:
        now = time.monotonic()
        if now < self.next_check:
            return False
        self.next_check = now + _RECONCILE_SECONDS
        return True

    def pause(self) -> float:
        return min(_POLL_SECONDS, max(0.0, self.deadline - time.monotonic()))


def _kill_wait(quest: Quest, cmd: KillSession) -> float:
    """Seconds a kill with ``wait`` waits: the caller's bound, else the grace period + 10 s."""
    if cmd.wait_timeout_seconds is None:
        return kill_grace_seconds(quest) + _KILL_WAIT_SLACK
    return check_wait_timeout(cmd.wait_timeout_seconds)


def _plan_kill(quest: Quest, cmd: KillSession) -> tuple[Session, BashKillRequested | None]:
    """The session and the kill request to record (None when it has already ended);
    every argument is checked before anything is signalled."""
    session_id, force, reason = cmd.id, cmd.force, cmd.reason
    session = session_of(quest, session_id)
    if cmd.wait_timeout_seconds is not None:
        check_wait_timeout(cmd.wait_timeout_seconds)
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS or "\n" in reason):
        raise Invalid(f"reason is one line of at most {MAX_REASON_CHARS} characters", code="invalid_reason")
    if session.status != "running":
        return session, None
    reconcile(quest, only=[session_id])
    session = session_of(quest, session_id)
    if session.status != "running":
        return session, None
    event = BashKillRequested(
        session_id=session_id,
        reason=reason or "user_stop",
        force=bool(force),
        grace_seconds=0.0 if force else kill_grace_seconds(quest),
        requested_by=actor_of(quest),
    )
    return session, event


def _signal_session(quest: Quest, session: Session, force: bool) -> None:
    """Signal the group now and wake the monitor, which escalates to KILL after grace."""
    if group_is_ours(session):
        procs.signal_group(session.pgid, signal.SIGKILL if force else signal.SIGTERM)
    if monitor_alive(session):
        try:
            os.kill(session.monitor_pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    else:
        reconcile(quest, only=[session.id])
