"""The `bash_exec` MCP namespace: one tool, ``bash_exec``, for durable shell sessions.

A thin adapter over :mod:`ds_events.services.bash_exec`: decode the arguments, call the
service for the mode, return a JSON-able dict. The server reconciles sessions when it
starts, so sessions that died while no server was running are marked at once.
"""

from __future__ import annotations

from typing import Any, TypedDict

import anyio.to_thread
import msgspec
from mcp.server.mcpserver import MCPServer

from ds_events.bash.linelog import LogSlice
from ds_events.errors import Invalid
from ds_events.services import bash_exec as service
from ds_events.services.bash_commands import BashExec

from .common import Namespace, QuestBinding, ToolContext

__all__ = ["build_server", "BashExecResult"]

INSTRUCTIONS = """\
Durable shell sessions for this quest. Use bash_exec for anything that may outlive your
turn: training runs, long evaluations, downloads. Sessions keep running when you, the MCP
server or the daemon go away; every start, progress report, kill and exit is recorded in
the quest's event log. Start with mode="detach" (returns an id at once) or mode="await"
(waits a while), then read, await or kill by id; mode="list" shows what is running.
Print lines like `__DS_PROGRESS__ {"step": 120, "loss": 1.9}` to report progress."""


class BashExecResult(TypedDict, total=False):
    mode: str
    id: str
    status: str
    done: bool
    session: dict[str, Any]
    output: str
    first_seq: int | None
    last_seq: int | None
    total_lines: int
    omitted: list[int] | None
    sessions: list[dict[str, Any]]
    counts: dict[str, int]
    message: str
    next: str


def build_server(binding: QuestBinding) -> MCPServer[ToolContext]:
    ns = Namespace("bash_exec", binding, instructions=INSTRUCTIONS, setup=_reconcile_on_start)

    @ns.tool
    async def bash_exec(tc: ToolContext, cmd: BashExec) -> BashExecResult:
        """Run and manage durable shell commands (bash -c) in this quest.

        Each session runs in its own process group under a monitor, with stdout and stderr
        (through a terminal) written to a numbered line log. It survives the end of your
        turn and of this server. Output lines are numbered from 1 (their "seq").

        Modes:
          detach  start `command` and return at once with its id (status "running").
          await   start `command`, or with `id` wait on an existing session, for up to
                  `wait_timeout_seconds` (default 60, max 1800). Returns the output tail and
                  done=true when it ended; if still running, done=false and `next` says what
                  to call (it keeps running: await again, read, or kill).
          read    the output of session `id`: all of it when small, else head and tail
                  with the middle counted in `omitted` [first, last]. Page huge logs with
                  `tail`=N (last N lines), `after_seq`=S (lines after S), `before_seq`=S
                  (the `limit` lines before S); `limit` 1-2000 (default 200).
          kill    stop session `id`: TERM to its whole process group, KILL after a grace
                  period (5 s by default); `force`=true sends KILL at once; `wait`=true
                  waits for the exit. `reason` is recorded (default "user_stop").
          list    running sessions, with counts of every status.
          history every session, newest first (`limit`, default 50), with counts.

        Session status: running | completed (exit 0) | failed (non-zero exit) |
        terminated (killed or timed out; see reason) | lost (its monitor vanished).

        Examples:
          bash_exec(command="python train.py --epochs 20", mode="detach", timeout_seconds=7200)
          bash_exec(command="pytest -q", mode="await", wait_timeout_seconds=300)
          bash_exec(mode="await", id="bx-1a2b3c4d", wait_timeout_seconds=600)
          bash_exec(mode="read", id="bx-1a2b3c4d", tail=100)
          bash_exec(mode="kill", id="bx-1a2b3c4d", wait=True, reason="diverged")
        """
        quest = await tc.quest_async()
        mode, session_id = cmd.mode, cmd.id
        if mode not in service.MODES:
            raise Invalid(f"unknown mode {mode!r}: use one of {', '.join(service.MODES)}", code="invalid_mode")
        starting = mode == "detach" or (mode == "await" and session_id is None)
        if starting and session_id is not None:
            raise Invalid("mode='detach' starts a new session: leave out id", code="unexpected_id")
        if not starting and cmd.command:
            raise Invalid(f"mode={mode!r} does not take a command", code="unexpected_command")
        if mode == "await":
            service.check_wait_timeout(cmd.wait_timeout_seconds)  # refuse before starting anything
        if starting:
            session = await service.start_async(
                quest, cmd.command, workdir=cmd.workdir, env=cmd.env, timeout_seconds=cmd.timeout_seconds
            )
            if mode == "detach":
                return _with_session("detach", session, message=f"started {session.id}",
                                     next=f"bash_exec(mode='await', id='{session.id}') or mode='read'")
            session_id = session.id
        if mode == "await":
            session = await service.await_session(quest, session_id, cmd.wait_timeout_seconds)  # type: ignore[arg-type]
            return await anyio.to_thread.run_sync(_awaited, quest, session)
        if mode == "read":
            return await anyio.to_thread.run_sync(_read, quest, cmd)
        if mode == "kill":
            session = await service.kill_async(quest, session_id, force=cmd.force, reason=cmd.reason, wait=cmd.wait)  # type: ignore[arg-type]
            text = "still stopping (the monitor escalates to KILL after the grace period)" \
                if session.status == "running" else f"ended: {session.status}"
            return _with_session("kill", session, message=text)
        sessions, counts = await anyio.to_thread.run_sync(
            lambda: service.list_sessions(quest, include_ended=mode == "history", limit=cmd.limit)
        )
        return {"mode": mode, "sessions": [_session_dict(s) for s in sessions], "counts": counts}

    return ns.server()


# -- private helpers -------------------------------------------------------------------


def _reconcile_on_start(tc: ToolContext) -> None:
    service.reconcile(tc.quest)


def _read(quest: Any, cmd: BashExec) -> BashExecResult:
    session = service.get_session(quest, cmd.id)
    out = service.read_output(
        quest, session.id, tail=cmd.tail, after_seq=cmd.after_seq, before_seq=cmd.before_seq, limit=cmd.limit
    )
    return _with_session("read", session) | _output(out)


def _session_dict(session: service.Session) -> dict[str, Any]:
    return msgspec.to_builtins(session)  # type: ignore[no-any-return]


def _with_session(mode: str, session: service.Session, **extra: Any) -> BashExecResult:
    return {"mode": mode, "id": session.id, "status": session.status, "session": _session_dict(session),
            **extra}  # type: ignore[typeddict-item]


def _output(out: LogSlice) -> BashExecResult:
    return {
        "output": out.text(),
        "first_seq": out.first_seq,
        "last_seq": out.last_seq,
        "total_lines": out.total_lines,
        "omitted": list(out.omitted) if out.omitted else None,
    }


def _awaited(quest: Any, session: service.Session) -> BashExecResult:
    done = session.status != "running"
    result = _with_session("await", session, done=done) | _output(service.read_output(quest, session.id, tail=50))
    if done:
        result["message"] = f"{session.id} ended: {session.status}" + (
            f" (exit code {session.exit_code})" if session.exit_code is not None else f" ({session.reason})"
        )
    else:
        result["message"] = f"{session.id} is still running; it keeps running in the background"
        result["next"] = (
            f"bash_exec(mode='await', id='{session.id}', wait_timeout_seconds=...) to keep waiting, "
            f"mode='read' for its output, or mode='kill' to stop it"
        )
    return result
