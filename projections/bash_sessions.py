"""The `bash_sessions` view: every shell session of a quest and where it stands.

Materialises ``.ds/bash_exec/sessions.json`` (the session list, oldest first), which
``ds replay`` rewrites byte for byte.

A :class:`Session` is frozen and ``apply`` replaces a changed one instead of updating it
in place: a record someone got from the view (a service answer, a waiter comparing
before and after) keeps saying what it said when they got it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from msgspec.structs import replace

from ds_events.events import Event
from ds_events.events.bash import (
    BashKillRequested,
    BashProgress,
    BashSessionExited,
    BashSessionLost,
    BashSessionStarted,
)

from .base import Files, Projection

__all__ = ["Session", "State", "PROJECTION", "STATUSES", "SESSIONS_FILE", "apply", "render", "status_counts"]

STATUSES = ("running", "completed", "failed", "terminated", "lost")
SESSIONS_FILE = ".ds/bash_exec/sessions.json"


# The flat record every answer about a session holds (sessions.json, the bash_exec tool's
# output schema, the HTTP routes), pinned by the golden replay and the tool snapshot: so
# it copies the facts of the session's events rather than holding them. No docstring on
# purpose: one would become a description in that output schema.
class Session(msgspec.Struct, kw_only=True, frozen=True):
    id: str
    command: str
    workdir: str
    env_keys: list[str] = []
    pid: int = 0
    pgid: int = 0
    monitor_pid: int = 0
    start_time: int | None = None
    monitor_start_time: int | None = None
    boot_id: str = ""
    timeout_seconds: float | None = None
    started_by: str = ""
    started_at: str = ""
    started_seq: int = 0
    log_path: str = ""
    status: str = "running"  # one of STATUSES
    exit_code: int | None = None
    signal: str | None = None
    reason: str = ""
    ended_at: str | None = None
    ended_seq: int | None = None
    duration_seconds: float | None = None
    lines: int = 0
    bytes: int = 0
    progress: dict[str, Any] | None = None
    progress_line: int | None = None
    progress_updates: int = 0
    kill_requested: bool = False
    kill_reason: str = ""
    kill_force: bool = False
    kill_grace_seconds: float = 0.0
    kind: str = "exec"  # exec | terminal, as the start recorded it


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    sessions: dict[str, Session] = {}  # insertion order = start order
    keys: dict[str, str] = {}  # idempotency key -> the session started with it (the first)


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    match event:
        case BashSessionStarted():
            state.sessions[event.session_id] = Session(
                id=event.session_id,
                command=event.command,
                workdir=event.workdir,
                env_keys=list(event.env_keys),
                pid=event.pid,
                pgid=event.pgid,
                monitor_pid=event.monitor_pid,
                start_time=event.start_time,
                monitor_start_time=event.monitor_start_time,
                boot_id=event.boot_id,
                timeout_seconds=event.timeout_seconds,
                started_by=event.started_by,
                started_at=event.ts,
                started_seq=event.seq,
                log_path=event.log_path,
                kind=event.kind,
            )
            if event.idempotency_key is not None:
                state.keys.setdefault(event.idempotency_key, event.session_id)
        case BashProgress(session_id=sid) if sid in state.sessions:
            s = state.sessions[sid]
            state.sessions[sid] = replace(
                s, progress=dict(event.data), progress_line=event.line, progress_updates=s.progress_updates + 1
            )
        case BashKillRequested(session_id=sid) if sid in state.sessions and state.sessions[sid].status == "running":
            state.sessions[sid] = replace(
                state.sessions[sid], kill_requested=True, kill_reason=event.reason,
                kill_force=event.force, kill_grace_seconds=event.grace_seconds,
            )
        case BashSessionExited(session_id=sid) if sid in state.sessions:
            state.sessions[sid] = replace(
                state.sessions[sid], status=event.status, exit_code=event.exit_code, signal=event.signal,
                reason=event.reason, lines=event.lines, bytes=event.bytes, duration_seconds=event.duration_seconds,
                ended_at=event.ts, ended_seq=event.seq,
            )
        case BashSessionLost(session_id=sid) if sid in state.sessions and state.sessions[sid].status == "running":
            state.sessions[sid] = replace(
                state.sessions[sid], status="lost", reason=event.reason, ended_at=event.ts, ended_seq=event.seq
            )
    return state


def status_counts(state: State) -> dict[str, int]:
    """How many sessions are in each status (every status listed, zeros included)."""
    counts = dict.fromkeys(STATUSES, 0)
    for s in state.sessions.values():
        counts[s.status] = counts.get(s.status, 0) + 1
    return counts


def render(state: State) -> Files:
    if not state.sessions:
        return {}
    body = {
        "counts": status_counts(state),
        "sessions": [msgspec.to_builtins(s) for s in state.sessions.values()],
    }
    return {SESSIONS_FILE: msgspec.json.format(msgspec.json.encode(body), indent=2) + b"\n"}


def render_changed(state: State, events: Iterable[Event]) -> Files:
    # Only bash events change the file; skip the encode for everything else.
    if any(e.type.startswith("bash.") for e in events):
        return render(state)
    return {}


PROJECTION = Projection(
    name="bash_sessions",
    state_type=State,
    initial=State,
    apply=apply,
    render=render,
    render_changed=render_changed,
    version=2,  # 2: the idempotency keys (older snapshots: refolded)
)
