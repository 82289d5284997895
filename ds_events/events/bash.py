"""Events of the `bash` domain: durable shell sessions run under a monitor process.

The log records state changes of a session, never its output lines: a start, throttled
progress reports, kill requests, and exactly one end (``session_exited`` from the
monitor, or ``session_lost`` from reconciliation when the monitor vanished unseen).
Both end events carry the id :func:`session_end_id`, so the log keeps at most one.
"""

from __future__ import annotations

from typing import Any, Literal

from .base import Event

__all__ = [
    "BashSessionStarted",
    "BashProgress",
    "BashKillRequested",
    "BashSessionExited",
    "BashSessionLost",
    "EVENTS",
    "ExitStatus",
    "session_end_id",
]

ExitStatus = Literal["completed", "failed", "terminated"]


class BashSessionStarted(Event, tag="bash.session_started", kw_only=True):
    """A command started in its own process group under a monitor process.

    ``start_time`` / ``monitor_start_time`` are the kernel start times (clock ticks since
    boot, from ``/proc/<pid>/stat``) and ``boot_id`` the boot they belong to: together with
    the pids they tell a live process from a later one that reused its pid.
    """

    session_id: str
    command: str
    workdir: str  # relative to the quest root ("." for the root) or absolute for a worktree
    env_keys: list[str] = []
    pid: int
    pgid: int
    monitor_pid: int
    start_time: int | None = None
    monitor_start_time: int | None = None
    boot_id: str = ""
    timeout_seconds: float | None = None
    started_by: str = ""
    pty: bool = True
    log_path: str = ""  # the numbered line log, relative to the quest root
    # The caller's key for this start: a start with the same key in the same quest returns
    # this session instead of starting another (a retried step must not run a job twice).
    idempotency_key: str | None = None
    # "exec" (a command) or "terminal" (DeepScientist's name for an interactive shell):
    # a label list and history filter by. Lines written before it existed read as "exec".
    kind: str = "exec"


class BashProgress(Event, tag="bash.progress", kw_only=True):
    """A ``__DS_PROGRESS__ {json}`` line the command printed (throttled: latest wins)."""

    session_id: str
    line: int  # seq of the output line that carried it
    data: dict[str, Any] = {}


class BashKillRequested(Event, tag="bash.kill_requested", kw_only=True):
    """Someone asked for the session's process group to be stopped."""

    session_id: str
    reason: str = "user_stop"
    force: bool = False
    grace_seconds: float = 0.0
    requested_by: str = ""


class BashSessionExited(Event, tag="bash.session_exited", kw_only=True):
    """The command ended and its monitor recorded how.

    ``status``: ``completed`` (exit 0), ``failed`` (non-zero exit, or a signal nobody here
    sent), ``terminated`` (stopped on request or by its timeout; ``reason`` says which).
    """

    session_id: str
    status: ExitStatus
    exit_code: int | None = None
    signal: str | None = None
    reason: str = ""  # "", "timeout", "user_stop", "quest_pause", "signal", ...
    lines: int = 0
    bytes: int = 0
    duration_seconds: float = 0.0


class BashSessionLost(Event, tag="bash.session_lost", kw_only=True):
    """Reconciliation found a session recorded running whose monitor no longer exists."""

    session_id: str
    reason: str = "monitor_gone"
    group_alive: bool = False  # the group was still there (and was killed: nobody supervised it)
    detail: str = ""


def session_end_id(session_id: str) -> str:
    """The event id every end of ``session_id`` carries: the log appends one at most."""
    return f"bash-end-{session_id}"


EVENTS = (BashSessionStarted, BashProgress, BashKillRequested, BashSessionExited, BashSessionLost)
