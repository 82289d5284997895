"""The `bash_exec` MCP namespace: one tool, ``bash_exec``, for durable shell sessions.

A thin adapter over :mod:`ds_events.services.bash_tool`: the arguments are decoded into a
:class:`BashExec` command (by :mod:`handlers.mcp.common`), the service checks the mode's
rules and runs it, and its :class:`BashExecResult` is the tool's answer. The server
reconciles sessions when it starts, so sessions that died while no server was running
are marked at once.
"""

from __future__ import annotations

from ds_events.services import bash_exec as service
from ds_events.services import bash_tool
from ds_events.services.bash_commands import BashExec, BashExecResult

from .common import Namespace, QuestBinding, ToolContext

__all__ = ["build_server", "BashExecResult"]

INSTRUCTIONS = """\
Durable shell sessions for this quest. Use bash_exec for anything that may outlive your
turn: training runs, long evaluations, downloads. Sessions keep running when you, the MCP
server or the daemon go away; every start, progress report, kill and exit is recorded in
the quest's event log. Start with mode="detach" (returns an id at once) or mode="await"
(waits a while), then read, await or kill by id; mode="list" shows what is running.
Print lines like `__DS_PROGRESS__ {"step": 120, "loss": 1.9}` to report progress."""


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
        return await bash_tool.bash_exec(await tc.quest_async(), cmd)

    return ns.server()


# -- private helpers -------------------------------------------------------------------


def _reconcile_on_start(tc: ToolContext) -> None:
    service.reconcile(tc.quest)
