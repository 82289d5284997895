"""Starting a durable shell session: check the request, spawn the monitor, record the start.

Start handshake (so the log never shows a session that did not start, nor misses one
that did): the service spawns the monitor and sends it the spec; the monitor starts the
command and answers with its pids; the service appends ``bash.session_started`` and
only then tells the monitor "go". If the service dies before that, the monitor sees its
stdin close, kills the command and exits: nothing ran unrecorded.

A start may carry an ``idempotency_key``: a key this quest already started a session
with returns that session (``reused``) instead of starting another, the same command
only (another command is ``idempotency_key_conflict``). The key is checked before the
monitor is spawned and again under the log's lock when the start is recorded, so two
starts racing with one key record one session (the loser's monitor is told to abort).
"""

from __future__ import annotations

import asyncio
import os
import secrets

from ds_events.bash.checks import check_env, check_seconds, resolve_workdir
from ds_events.bash.spawn import MonitorHandle, StartSpec, spawn_monitor
from ds_events.crashpoints import crashpoint
from ds_events.errors import Conflict, Invalid
from ds_events.events.bash import BashSessionStarted
from ds_events.home import Quest
from projections.bash_sessions import Session

from .commands import MAX_COMMAND_CHARS, MAX_KEY_CHARS, StartSession, check_kind
from .sessions import actor_of, kill_grace_seconds, progress_interval_seconds, session_of

__all__ = ["prepare_start", "start", "start_async", "start_or_reuse_async", "reusable_session"]


def prepare_start(quest: Quest, cmd: StartSession) -> StartSpec:
    """Validate a start request; raises :class:`Invalid` on bad input, starts nothing."""
    command = cmd.command
    if not isinstance(command, str) or not command.strip():
        raise Invalid("command is empty: pass the shell command to run, e.g. command='python train.py'",
                      code="empty_command")  # fmt: skip
    if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
        raise Invalid(f"command must be at most {MAX_COMMAND_CHARS} characters without NUL bytes",
                      code="invalid_command")  # fmt: skip
    _check_key(cmd.idempotency_key)
    kind = check_kind(cmd.kind) or "exec"
    timeout = check_seconds("timeout_seconds", cmd.timeout_seconds, allow_zero=False)
    real, recorded = resolve_workdir(quest, cmd.workdir)
    extra = check_env(cmd.env)
    session_id = _new_session_id(quest.state("bash_sessions").sessions)
    child_env = dict(os.environ)
    child_env.setdefault("TERM", "dumb")
    child_env.update(DS_QUEST_ID=quest.id, DS_QUEST_ROOT=str(quest.root.resolve()), DS_BASH_SESSION_ID=session_id)
    # The quest's home and the turn, whichever process serves the call: a turn's own stdio
    # server has them in its env already, the host serving it over HTTP does not.
    child_env["DS_HOME"] = str(quest.home.root)
    if quest.run_id:
        child_env["DS_RUN_ID"] = quest.run_id
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
        started_by=actor_of(quest),
        quest_root=quest.root.resolve(),
        env_keys=sorted(extra),
        exit_retry_seconds=config.bash_exec.exit_retry_seconds,
        idempotency_key=cmd.idempotency_key,
        kind=kind,
    )


def reusable_session(quest: Quest, cmd: StartSession) -> Session | None:
    """The session ``cmd.idempotency_key`` already started in this quest (None: no key,
    or a key not used yet); the key with another command is ``idempotency_key_conflict``."""
    _check_key(cmd.idempotency_key)
    if cmd.idempotency_key is None:
        return None
    state = quest.state("bash_sessions")
    session_id = state.keys.get(cmd.idempotency_key)
    if session_id is None:
        return None
    session = state.sessions[session_id]
    if session.command != cmd.command:
        raise Conflict(
            f"idempotency_key {cmd.idempotency_key!r} started session {session_id} with another command "
            f"({session.command[:200]!r}): use a new key for a new command", code="idempotency_key_conflict",
            session_id=session_id,
        )  # fmt: skip
    return session


def start(quest: Quest, cmd: StartSession) -> Session:
    """Start ``cmd.command`` detached and return its session (status ``running``), or
    the session its ``idempotency_key`` already started."""
    reused = reusable_session(quest, cmd)
    if reused is not None:
        return reused
    spec = prepare_start(quest, cmd)
    crashpoint("mcp.bash.before_spawn")
    handle = spawn_monitor(spec)
    try:
        crashpoint("mcp.bash.before_started_event")
        winner = _record_start(quest, spec, handle)
        crashpoint("mcp.bash.after_started_event")
    except BaseException:
        handle.abort()
        raise
    if winner is not None:
        handle.abort()
        return winner
    handle.go()
    crashpoint("mcp.bash.after_go")
    return session_of(quest, spec.session_id)


async def start_async(quest: Quest, cmd: StartSession) -> Session:
    """:func:`start` without blocking the event loop while the monitor comes up."""
    return (await start_or_reuse_async(quest, cmd))[0]


async def start_or_reuse_async(quest: Quest, cmd: StartSession) -> tuple[Session, bool]:
    """:func:`start_async`, and whether the session was reused (its key had started it)."""
    reused = await asyncio.to_thread(reusable_session, quest, cmd)
    if reused is not None:
        return reused, True
    spec = await asyncio.to_thread(prepare_start, quest, cmd)
    crashpoint("mcp.bash.before_spawn")
    handle = await asyncio.to_thread(spawn_monitor, spec)
    try:
        crashpoint("mcp.bash.before_started_event")
        if spec.idempotency_key is None:
            await quest.emit_async(_started_event(spec, handle))
            winner = None
        else:
            winner = await asyncio.to_thread(_record_start, quest, spec, handle)
        crashpoint("mcp.bash.after_started_event")
    except BaseException:
        handle.abort()
        raise
    if winner is not None:
        handle.abort()
        return winner, True
    handle.go()
    crashpoint("mcp.bash.after_go")
    return session_of(quest, spec.session_id), False


# -- private helpers -----------------------------------------------------------------


def _record_start(quest: Quest, spec: StartSpec, handle: MonitorHandle) -> Session | None:
    """Append the start; with a key, under the lock and only if no other start took the
    key meanwhile (then that session is returned, and nothing is appended)."""
    if spec.idempotency_key is None:
        quest.emit(_started_event(spec, handle))
        return None
    with quest.transaction() as txn:
        cmd = StartSession(command=spec.command, idempotency_key=spec.idempotency_key)
        winner = reusable_session(quest, cmd)
        if winner is not None:
            return winner
        txn.append([_started_event(spec, handle)])
    return None


def _check_key(key: str | None) -> None:
    if key is None:
        return
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS or not key.isprintable():
        raise Invalid(f"idempotency_key must be 1-{MAX_KEY_CHARS} printable characters", code="invalid_idempotency_key")


def _started_event(spec: StartSpec, handle: MonitorHandle) -> BashSessionStarted:
    """The start as the log keeps it: the request checked, and the processes the
    monitor reports (their pids, start times and boot: what tells them from a reuse)."""
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
        idempotency_key=spec.idempotency_key,
        kind=spec.kind,
    )


def _new_session_id(existing: dict[str, Session]) -> str:
    while True:
        candidate = f"bx-{secrets.token_hex(4)}"
        if candidate not in existing:
            return candidate
