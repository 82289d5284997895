"""Durable shell sessions: the record of each one, kept true.

A session is a shell command running in its own process group under a small monitor
process (:mod:`ds_events.bash_monitor`) started in its own OS session, so it outlives
whatever started it (a tool call, the MCP server, the daemon). The monitor writes the
numbered line log under ``.ds/bash_exec/<id>/``, enforces the timeout, and records
progress and the exit through :func:`record_progress` / :func:`record_exit`.

This module is what every operation stands on: finding a session's record
(:func:`session_of`), telling whether its monitor and process group still run, and
:func:`reconcile`, which ends as ``lost`` a session whose monitor vanished unseen. The
operations are beside it: :mod:`.starting` (start, with the handshake), :mod:`.queries`
(a session, its output, the list), :mod:`.ending` (await and kill); the one-tool form
with its modes is :mod:`.tool`. Each takes its command and answers a Struct of
:mod:`.commands`.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any, NamedTuple

from ds_events.bash import procs
from ds_events.config import Config
from ds_events.errors import Invalid, NotFound
from ds_events.events import Event
from ds_events.events.base import ts_seconds
from ds_events.events.bash import BashProgress, BashSessionExited, BashSessionLost, ExitStatus, session_end_id
from ds_events.home import Quest
from projections.bash_sessions import Session

from .commands import WATCHDOG_AFTER_SECONDS

__all__ = [
    "ExitFacts",
    "reconcile",
    "record_progress",
    "record_exit",
    "session_dir",
    "kill_grace_seconds",
    "progress_interval_seconds",
    "watchdog_overdue",
    # for the domain's operations
    "session_of",
    "monitor_alive",
    "group_is_ours",
    "actor_of",
]


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
        if s.status == "running" and (only is None or s.id in only) and not monitor_alive(s)
    ]  # fmt: skip
    if not suspects:
        return []
    with quest.transaction() as txn:
        current = quest.state("bash_sessions").sessions
        lost: list[Event] = []
        for s in suspects:
            if current[s.id].status != "running" or monitor_alive(current[s.id]):
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


class ExitFacts(NamedTuple):
    """How the command ended, as its monitor saw it."""

    exit_code: int | None  # None when a signal ended it
    signal_name: str | None
    timed_out: bool
    stop_reason: str | None  # why the monitor itself stopped it (a TERM it was sent)
    lines: int
    nbytes: int
    duration_seconds: float


def record_progress(quest: Quest, session_id: str, line: int, data: dict[str, Any]) -> BashProgress:
    """Record the latest ``__DS_PROGRESS__`` report (``line``: the output line that carried it)."""
    return quest.emit(BashProgress(session_id=session_id, line=line, data=data))


def record_exit(quest: Quest, session_id: str, facts: ExitFacts) -> BashSessionExited | None:
    """Record how the command ended; the status follows from the facts and kill requests.

    Returns None when the session had already ended in the log (reconciled as lost).
    """
    with quest.transaction() as txn:
        session = quest.state("bash_sessions").sessions.get(session_id)
        if session is None or session.status != "running":
            return None
        status: ExitStatus
        if facts.timed_out:
            status, reason = "terminated", "timeout"
        elif session.kill_requested:
            status, reason = "terminated", session.kill_reason or "user_stop"
        elif facts.stop_reason:
            status, reason = "terminated", facts.stop_reason
        elif facts.exit_code == 0:
            status, reason = "completed", ""
        else:
            status, reason = "failed", ("signal" if facts.signal_name else "exit_code")
        event = BashSessionExited(
            id=session_end_id(session_id),
            session_id=session_id,
            status=status,
            exit_code=facts.exit_code,
            signal=facts.signal_name,
            reason=reason,
            lines=facts.lines,
            bytes=facts.nbytes,
            duration_seconds=round(facts.duration_seconds, 3),
        )
        return txn.append(event)


def session_dir(quest: Quest, session_id: str) -> Path:
    """Where a session's line log and its monitor's own log live."""
    return quest.root / ".ds" / "bash_exec" / session_id


def kill_grace_seconds(quest: Quest, config: Config | None = None) -> float:
    """Seconds between TERM and KILL: ``bash_exec.kill_grace_seconds`` in config.yaml
    (``config``: the home's config when the caller has already read it)."""
    return (config or quest.home.config()).bash_exec.kill_grace_seconds


def progress_interval_seconds(quest: Quest, config: Config | None = None) -> float:
    """Least seconds between two ``bash.progress`` events of a session (the latest wins):
    ``bash_exec.progress_interval_seconds`` in config.yaml."""
    return (config or quest.home.config()).bash_exec.progress_interval_seconds


def watchdog_overdue(quest: Quest, session: Session, *, now: float | None = None) -> bool:
    """Whether ``session`` runs and has shown no sign of life (no output line, progress
    report included, since it started) for :data:`WATCHDOG_AFTER_SECONDS`.

    The last output is the line log's modification time: the monitor appends every line
    there, so it needs no event per line. A hint for the caller; nothing is done to it.
    """
    if session.status != "running":
        return False
    last = ts_seconds(session.started_at) if session.started_at else 0.0
    if session.log_path:
        try:
            last = max(last, os.stat(quest.root / session.log_path).st_mtime)
        except OSError:
            pass  # no log yet: the start is the last sign
    return (time.time() if now is None else now) - last >= WATCHDOG_AFTER_SECONDS


# -- for the domain's operations -------------------------------------------------------


def session_of(quest: Quest, session_id: str | None) -> Session:
    """The session's current record: ``missing_id`` without an id, ``unknown_session``
    for an id this quest never started (every operation's first check)."""
    if not isinstance(session_id, str) or not session_id:
        raise Invalid("this mode needs the session id: pass id='bx-...' (see mode='list')", code="missing_id")
    found = quest.state("bash_sessions").sessions.get(session_id)
    if found is None:
        raise NotFound(f"no bash session {session_id!r} in this quest: see mode='history' for every id",
                       code="unknown_session", id=session_id)  # fmt: skip
    return found


def monitor_alive(session: Session) -> bool:
    """Whether the session's monitor (the very process recorded, not a pid's reuse) runs."""
    return procs.is_alive(session.monitor_pid, session.monitor_start_time, session.boot_id)


def group_is_ours(session: Session) -> bool:
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


def actor_of(quest: Quest) -> str:
    """Who appends through ``quest``: the actor its store stamps on every event, which a
    start (``started_by``) and a kill (``requested_by``) also record."""
    return quest.log.actor


# -- private helpers -----------------------------------------------------------------


def _kill_orphaned_group(session: Session) -> bool:
    if not group_is_ours(session):
        return False
    return procs.signal_group(session.pgid, signal.SIGKILL)
