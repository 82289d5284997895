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
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds_events.bash import linelog, procs
from ds_events.events import Event
from ds_events.events.bash import (
    BashKillRequested,
    BashProgress,
    BashSessionExited,
    BashSessionLost,
    BashSessionStarted,
    session_end_id,
)
from ds_events.home import Quest
from projections.bash_sessions import Session, status_counts

from .errors import Invalid, NotFound, ServiceError

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

MODES = ("detach", "await", "read", "kill", "list", "history")
MAX_COMMAND_CHARS = 100_000
MAX_ENV_KEYS = 200
MAX_WAIT_SECONDS = 1800.0
MAX_LINES = 2000
DEFAULT_GRACE_SECONDS = 5.0
DEFAULT_PROGRESS_INTERVAL = 5.0
HANDSHAKE_TIMEOUT = 60.0
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_ENV = frozenset({"DS_BASH_SESSION_ID", "DS_QUEST_ID", "DS_QUEST_ROOT"})


@dataclass
class StartSpec:
    """A validated request to start a session (nothing has run yet)."""

    session_id: str
    command: str
    workdir: Path
    workdir_recorded: str
    env: dict[str, str]
    timeout_seconds: float | None
    grace_seconds: float
    progress_interval: float
    started_by: str
    quest_root: Path
    env_keys: list[str]

    @property
    def dir(self) -> Path:
        return self.quest_root / ".ds" / "bash_exec" / self.session_id

    @property
    def log_rel(self) -> str:
        return f".ds/bash_exec/{self.session_id}/output.log"


# -- starting ------------------------------------------------------------------------


def prepare_start(
    quest: Quest,
    command: str,
    *,
    workdir: str | None = None,
    env: dict[str, Any] | None = None,
    timeout_seconds: float | None = None,
) -> StartSpec:
    """Validate a start request; raises :class:`Invalid` on bad input, starts nothing."""
    if not isinstance(command, str) or not command.strip():
        raise Invalid("command is empty: pass the shell command to run, e.g. command='python train.py'",
                      code="empty_command")
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        raise Invalid(f"command must be at most {MAX_COMMAND_CHARS} characters without NUL bytes",
                      code="invalid_command")
    timeout = _check_seconds("timeout_seconds", timeout_seconds, allow_zero=False)
    real, recorded = _resolve_workdir(quest, workdir)
    extra = _check_env(env)
    state = quest.state("bash_sessions")
    session_id = _new_session_id(state.sessions)
    child_env = dict(os.environ)
    child_env.setdefault("TERM", "dumb")
    child_env.update(
        DS_QUEST_ID=quest.id, DS_QUEST_ROOT=str(quest.root.resolve()), DS_BASH_SESSION_ID=session_id
    )
    child_env.update(extra)
    return StartSpec(
        session_id=session_id,
        command=command,
        workdir=real,
        workdir_recorded=recorded,
        env=child_env,
        timeout_seconds=timeout,
        grace_seconds=kill_grace_seconds(quest),
        progress_interval=progress_interval_seconds(quest),
        started_by=quest.log.actor,
        quest_root=quest.root.resolve(),
        env_keys=sorted(extra),
    )


def start(quest: Quest, command: str, **options: Any) -> Session:
    """Start ``command`` detached and return its session (status ``running``)."""
    spec = prepare_start(quest, command, **options)
    handle = _spawn(spec)
    try:
        quest.emit(_started_event(spec, handle))
    except BaseException:
        handle.abort()
        raise
    handle.go()
    return get_session(quest, spec.session_id)


async def start_async(quest: Quest, command: str, **options: Any) -> Session:
    """:func:`start` without blocking the event loop while the monitor comes up."""
    spec = prepare_start(quest, command, **options)
    handle = await asyncio.to_thread(_spawn, spec)
    try:
        await quest.emit_async(_started_event(spec, handle))
    except BaseException:
        handle.abort()
        raise
    handle.go()
    return get_session(quest, spec.session_id)


# -- inspecting ----------------------------------------------------------------------


def get_session(quest: Quest, session_id: str | None) -> Session:
    """The session's current record; :class:`NotFound` for an unknown id."""
    if not isinstance(session_id, str) or not session_id:
        raise Invalid("this mode needs the session id: pass id='bx-...' (see mode='list')", code="missing_id")
    found = quest.state("bash_sessions").sessions.get(session_id)
    if found is None:
        raise NotFound(f"no bash session {session_id!r} in this quest: see mode='history' for every id",
                       code="unknown_session", id=session_id)
    return found


async def await_session(quest: Quest, session_id: str, wait_timeout_seconds: float | None = None) -> Session:
    """Wait until the session ends or ``wait_timeout_seconds`` pass; returns its record.

    Checks every 50 ms for the end event (any process may append it) and once a second
    whether the monitor is still alive, so a session whose monitor died unseen ends
    as ``lost`` instead of being waited on for ever.
    """
    get_session(quest, session_id)
    deadline = time.monotonic() + check_wait_timeout(wait_timeout_seconds)
    next_check = time.monotonic() + 1.0
    while True:
        session = get_session(quest, session_id)
        now = time.monotonic()
        if session.status != "running" or now >= deadline:
            return session
        if now >= next_check:
            reconcile(quest, only=[session_id])
            next_check = now + 1.0
        await asyncio.sleep(min(0.05, max(0.0, deadline - now)))


def check_wait_timeout(wait_timeout_seconds: float | None) -> float:
    """Seconds an await may wait: default 60, at most 30 minutes; negative is refused."""
    timeout = _check_seconds("wait_timeout_seconds", wait_timeout_seconds, allow_zero=True)
    return 60.0 if timeout is None else min(timeout, MAX_WAIT_SECONDS)


def read_output(
    quest: Quest,
    session_id: str,
    *,
    tail: int | None = None,
    after_seq: int | None = None,
    before_seq: int | None = None,
    limit: int | None = None,
) -> linelog.LogSlice:
    """A session's output lines.

    No window: the whole log when small, else its head and tail (the middle is counted,
    not returned). ``tail=N``: the last N lines. ``after_seq`` / ``before_seq`` (with
    ``limit``, default 200): a page of lines by number. Memory stays bounded by what is
    returned, whatever the log's size.
    """
    session = get_session(quest, session_id)
    if session.status == "running":
        reconcile(quest, only=[session_id])  # a reader must not be told "running" by a dead session
    tail = _check_count("tail", tail)
    limit = _check_count("limit", limit)
    after_seq = _check_seq("after_seq", after_seq)
    before_seq = _check_seq("before_seq", before_seq)
    if tail is not None and (after_seq is not None or before_seq is not None):
        raise Invalid("use either tail or after_seq/before_seq, not both", code="conflicting_window")
    if after_seq is not None and before_seq is not None and before_seq <= after_seq + 1:
        raise Invalid("before_seq must be greater than after_seq + 1", code="empty_window")
    path = quest.root / session.log_path
    if not path.is_file():
        return linelog.LogSlice()
    if tail is not None:
        return linelog.tail(path, tail)
    if after_seq is not None or before_seq is not None:
        return linelog.window(path, after_seq=after_seq, before_seq=before_seq, limit=limit or 200)
    if limit is not None:
        return linelog.head(path, limit)
    return linelog.preview(path)


def list_sessions(quest: Quest, *, include_ended: bool = False, limit: int | None = None) -> tuple[list[Session], dict[str, int]]:
    """Sessions (running only, or all newest first) and the count of each status."""
    limit = _check_count("limit", limit)
    reconcile(quest)
    state = quest.state("bash_sessions")
    sessions = list(state.sessions.values())
    if include_ended:
        sessions.reverse()
    else:
        sessions = [s for s in sessions if s.status == "running"]
    return sessions[: limit or 50] if include_ended else sessions, status_counts(state)


# -- stopping ------------------------------------------------------------------------


def kill(quest: Quest, session_id: str, *, force: bool = False, reason: str | None = None) -> Session:
    """Stop the session's whole process group: TERM now, KILL after the grace period
    (which the monitor enforces), or KILL at once with ``force``. Returns at once; an
    already ended session is returned unchanged."""
    session, event = _plan_kill(quest, session_id, force=force, reason=reason)
    if event is not None:
        quest.emit(event)
        _signal_session(quest, session, force)
    return get_session(quest, session_id)


async def kill_async(quest: Quest, session_id: str, *, force: bool = False, reason: str | None = None,
                     wait: bool = False) -> Session:
    """:func:`kill`; with ``wait`` it also waits (grace + 10 s at most) for the exit."""
    session, event = _plan_kill(quest, session_id, force=force, reason=reason)
    if event is not None:
        await quest.emit_async(event)
        _signal_session(quest, session, force)
    if wait:
        return await await_session(quest, session_id, kill_grace_seconds(quest) + 10.0)
    return get_session(quest, session_id)


def kill_quest_sessions(quest: Quest, *, reason: str) -> list[str]:
    """Kill every running session of the quest (pause/stop use this); returns their ids."""
    reconcile(quest)
    running = [s.id for s in quest.state("bash_sessions").sessions.values() if s.status == "running"]
    for session_id in running:
        kill(quest, session_id, reason=reason)
    return running


# -- reconciliation ------------------------------------------------------------------


def reconcile(quest: Quest, *, only: list[str] | None = None) -> list[Event]:
    """Mark sessions recorded running whose monitor is gone as ``bash.session_lost``.

    A group that outlived its monitor is killed first: nobody reads its terminal or
    enforces its timeout any more. Safe to run from several processes at once: the
    decision is re-checked under the log's lock, and the end event's id is derived from
    the session id, so each session ends at most once.
    """
    state = quest.state("bash_sessions")
    suspects = [
        s for s in state.sessions.values()
        if s.status == "running" and (only is None or s.id in only) and not _monitor_alive(s)
    ]
    if not suspects:
        return []
    alive_groups = {s.id: _kill_orphaned_group(s) for s in suspects}
    with quest.transaction() as txn:
        current = quest.state("bash_sessions").sessions
        lost = [
            BashSessionLost(
                id=session_end_id(s.id),
                session_id=s.id,
                reason="monitor_gone",
                group_alive=alive_groups[s.id],
                detail=f"monitor pid {s.monitor_pid} no longer runs"
                + ("; its process group was killed" if alive_groups[s.id] else ""),
            )
            for s in suspects
            if current[s.id].status == "running" and not _monitor_alive(current[s.id])
        ]
        return txn.append(lost) if lost else []


# -- what the monitor calls ----------------------------------------------------------


def record_progress(quest: Quest, session_id: str, line: int, data: dict[str, Any]) -> Event:
    return quest.emit(BashProgress(session_id=session_id, line=line, data=data))[0]


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


def kill_grace_seconds(quest: Quest) -> float:
    """Seconds between TERM and KILL: ``bash_exec.kill_grace_seconds`` in config.yaml."""
    return _config_seconds(quest, "kill_grace_seconds", DEFAULT_GRACE_SECONDS)


def progress_interval_seconds(quest: Quest) -> float:
    """Least seconds between two ``bash.progress`` events of a session (the latest wins):
    ``bash_exec.progress_interval_seconds`` in config.yaml."""
    return _config_seconds(quest, "progress_interval_seconds", DEFAULT_PROGRESS_INTERVAL)


# -- private helpers -----------------------------------------------------------------


class _Handle:
    """A monitor that has started the command and waits for "go"."""

    def __init__(self, proc: subprocess.Popen[bytes], info: dict[str, Any]) -> None:
        self.proc = proc
        self.info = info

    def go(self) -> None:
        self._send(b"go\n")

    def abort(self) -> None:
        self._send(b"abort\n")

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass


def _spawn(spec: StartSpec) -> _Handle:
    """Start the monitor in its own OS session and wait for its handshake."""
    spec.dir.mkdir(parents=True, exist_ok=True)
    (spec.dir / "output.log").touch()  # readable (empty) from the first instant
    payload = {
        "quest_root": str(spec.quest_root),
        "session_id": spec.session_id,
        "command": spec.command,
        "workdir": str(spec.workdir),
        "env": spec.env,
        "timeout_seconds": spec.timeout_seconds,
        "grace_seconds": spec.grace_seconds,
        "progress_interval": spec.progress_interval,
        "log_path": str(spec.dir / "output.log"),
    }
    with open(spec.dir / "monitor.log", "ab") as monitor_log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ds_events.bash_monitor"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=monitor_log,
            cwd=str(spec.quest_root),
            start_new_session=True,
        )
    # Reap the monitor when it ends, so it never lingers as our zombie.
    threading.Thread(target=proc.wait, name=f"reap-{spec.session_id}", daemon=True).start()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(payload).encode() + b"\n")
        proc.stdin.flush()
        line = _read_line(proc.stdout, HANDSHAKE_TIMEOUT)
    except (BrokenPipeError, OSError) as exc:
        line = json.dumps({"ok": False, "error": f"monitor died: {exc}"}).encode()
    finally:
        proc.stdout.close()
    try:
        info = json.loads(line) if line else {"ok": False, "error": "the monitor did not answer"}
    except ValueError:
        info = {"ok": False, "error": f"bad handshake {line[:200]!r}"}
    if not info.get("ok"):
        handle = _Handle(proc, info)
        handle.abort()
        raise ServiceError(
            f"could not start the session: {info.get('error')} (see .ds/bash_exec/{spec.session_id}/monitor.log)",
            code="start_failed",
        )
    return _Handle(proc, info)


def _read_line(stream: Any, timeout: float) -> bytes:
    fd = stream.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf.split(b"\n", 1)[0]


def _started_event(spec: StartSpec, handle: _Handle) -> BashSessionStarted:
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


def _plan_kill(quest: Quest, session_id: str, *, force: bool, reason: str | None) -> tuple[Session, Event | None]:
    session = get_session(quest, session_id)
    if reason is not None and (not isinstance(reason, str) or len(reason) > 200 or "\n" in reason):
        raise Invalid("reason is one line of at most 200 characters", code="invalid_reason")
    if session.status != "running":
        return session, None
    reconcile(quest, only=[session_id])
    session = get_session(quest, session_id)
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


def _resolve_workdir(quest: Quest, workdir: str | None) -> tuple[Path, str]:
    root = quest.root.resolve()
    if workdir is None or workdir in ("", "."):
        return root, "."
    if not isinstance(workdir, str) or "\x00" in workdir:
        raise Invalid("workdir must be a path string", code="invalid_workdir")
    if ".." in Path(workdir).parts:
        raise Invalid(f"workdir {workdir!r} uses '..': give a path inside the quest", code="workdir_outside_quest",
                      workdir=workdir)
    candidate = Path(workdir) if os.path.isabs(workdir) else root / workdir
    try:
        real = candidate.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        raise Invalid(f"workdir {workdir!r} does not exist", code="workdir_not_found", workdir=workdir) from None
    if not real.is_dir():
        raise Invalid(f"workdir {workdir!r} is not a directory", code="workdir_not_directory", workdir=workdir)
    if real == root or root in real.parents:
        return real, str(real.relative_to(root)) if real != root else "."
    for tree in _worktrees(quest):
        if real == tree or tree in real.parents:
            return real, str(real)
    raise Invalid(
        f"workdir {workdir!r} is outside the quest repository and its worktrees", code="workdir_outside_quest",
        workdir=workdir,
    )


def _worktrees(quest: Quest) -> list[Path]:
    try:
        repo = quest.repo()
        return [Path(repo.lookup_worktree(name).path).resolve() for name in repo.list_worktrees()]
    except Exception:  # noqa: BLE001 - no worktrees is the safe answer
        return []


def _config_seconds(quest: Quest, key: str, default: float) -> float:
    section = quest.home.config().get("bash_exec") or {}
    value = section.get(key, default) if isinstance(section, dict) else None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 3600:
        raise Invalid(f"config bash_exec.{key} must be a number of seconds (0-3600)", code="bad_config")
    return float(value)


def _check_env(env: dict[str, Any] | None) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise Invalid("env must be an object of NAME: value strings", code="invalid_env")
    if len(env) > MAX_ENV_KEYS:
        raise Invalid(f"env holds at most {MAX_ENV_KEYS} variables", code="invalid_env")
    bad = sorted(str(k) for k in env if not isinstance(k, str) or not _ENV_NAME.match(k))
    if bad:
        raise Invalid(
            f"invalid environment variable name(s) {', '.join(map(repr, bad))}: use letters, digits and '_', "
            "not starting with a digit", code="invalid_env_name", names=bad,
        )
    if _RESERVED_ENV & env.keys():
        raise Invalid(f"{', '.join(sorted(_RESERVED_ENV & env.keys()))} are set by bash_exec; leave them out of env",
                      code="invalid_env_name", names=sorted(_RESERVED_ENV & env.keys()))
    out: dict[str, str] = {}
    for key, value in env.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise Invalid(f"env value of {key} must be a string", code="invalid_env_value", name=key)
        text = str(value)
        if "\x00" in text:
            raise Invalid(f"env value of {key} holds a NUL byte", code="invalid_env_value", name=key)
        out[key] = text
    return out


def _check_seconds(name: str, value: Any, *, allow_zero: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid(f"{name} must be a number of seconds", code="invalid_timeout", field=name)
    if value < 0 or (value == 0 and not allow_zero):
        raise Invalid(f"{name} must be {'>= 0' if allow_zero else '> 0'} seconds, got {value}",
                      code="invalid_timeout", field=name)
    return float(value)


def _check_count(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LINES:
        raise Invalid(f"{name} must be a whole number from 1 to {MAX_LINES}", code="invalid_window", field=name)
    return value


def _check_seq(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"{name} must be a line seq >= 0", code="invalid_window", field=name)
    return value
