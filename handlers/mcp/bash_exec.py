"""The `bash_exec` MCP namespace: one tool, ``bash_exec``, for durable shell sessions.

A thin adapter over :mod:`ds_events.services.bash.tool`: the arguments are decoded into a
:class:`BashExec` command (by :mod:`handlers.mcp.tools`), the service checks the mode's
rules and runs it, and its :class:`BashExecResult` is the tool's answer. The server
reconciles sessions when it starts (:class:`BashState`), so sessions that died while no
server was running are marked at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ds_events.events.bash import BashSessionLost
from ds_events.home import Quest
from ds_events.services.bash import sessions as service, tool as bash_tool
from ds_events.services.bash.commands import BashExec, BashExecResult

from .binding import QuestBinding
from .context import NamespaceState, ToolContext
from .namespace import Namespace, NamespaceServer
from .tools import writes

__all__ = ["build_server", "BashExecResult", "BashState"]

INSTRUCTIONS = """\
Durable shell sessions for this quest: use bash_exec for anything that may outlive your turn.
Training runs, long evaluations, downloads: sessions keep running when you, the MCP
server or the daemon go away; every start, progress report, kill and exit is recorded in
the quest's event log. Start with mode="detach" (returns an id at once) or mode="await"
(waits a while), then read, await or kill by id; mode="list" shows what is running.
`command` may be an argv list; mode="create" is mode="await"; read without an id reads
the latest session.
Print lines like `__DS_PROGRESS__ {"step": 120, "loss": 1.9}` to report progress."""


@dataclass
class BashState(NamespaceState):
    """What the server found when it started: the sessions it marked lost (recorded
    running, their monitor gone while no server was watching)."""

    lost_at_start: list[str]

    @classmethod
    def open(cls, quest: Quest, actor: str) -> BashState:
        lost = service.reconcile(quest)
        return cls(lost_at_start=[event.session_id for event in lost if isinstance(event, BashSessionLost)])


def build_server(binding: QuestBinding) -> NamespaceServer[BashState]:
    ns = Namespace("bash_exec", binding, instructions=INSTRUCTIONS, open_state=BashState.open)

    # It runs any shell command, and kills sessions: it may change anything.
    @ns.tool(writes(destructive=True, idempotent=False))
    async def bash_exec(tc: ToolContext[BashState], cmd: BashExec) -> BashExecResult:
        """Run and manage durable shell commands (bash -c) in this quest.
        A refused call changes nothing.

        Each session runs in its own process group under a monitor, with stdout and stderr
        (through a terminal) written to a numbered line log. It survives the end of your
        turn and of this server. Output lines are numbered from 1 (their "seq").

        `command` is a string, or an argv list (["python", "train.py", "--lr", "0.1"]: each
        item one word). Answers name the session `id` (also as `bash_id`) with its `status`,
        `exit_code`, `stop_reason`, full record (`session`), `cwd`, `kind`, `log_path`,
        `still_running` and `watchdog_overdue` (running, silent for `watchdog_after_seconds`,
        1800). After a wait, `wait_timed_out` says it ran out first. Give a start an
        `idempotency_key` (e.g. the step's name) to make it safe to retry: a start with a
        key already used in this quest returns that session (same id, reused=true)
        instead of running the job twice.

        Modes:
          detach  start `command` and return at once with its id (status "running").
                  `kind`="exec" (default) or "terminal" is recorded with it.
          await   start `command` (mode="create" is the same), or with `id` wait on an
                  existing session (no id, no command: the latest one), for up to
                  `wait_timeout_seconds` (default 60, max 1800; a new command with
                  `timeout_seconds` is waited for until that limit ends it; an existing
                  session's wait may be bounded by `timeout_seconds` too). Returns the last
                  50 lines in `log` and done=true when it ended; if still running,
                  done=false and `next` says what to call (it keeps running).
          read    the output of session `id` (no id: the latest session), as text in `log`
                  with `log_line_count` and `log_truncated`: all of it up to 2000 lines,
                  else the first 500 and last 1500 (`log_preview_head_lines`/`_tail_lines`)
                  with the middle counted in `omitted` [first, last]. Every answer with
                  output says its window: `line_start`/`line_end` (= `seq_window_start`/
                  `_end`), `has_more_before`/`has_more_after`, `log_is_partial`, and if
                  partial `log_truncation_notice` and `log_read_hint`. Windows:
                  `tail`=N (last N lines), `start`=S with `tail`=N (N lines from line S).
                  By seq, answered as `tail` entries [{seq, line}]: `after_seq`=S (the
                  `limit` lines after S, default 200), `before_seq`=S (the `limit` lines
                  before S), `tail_limit`=N (the last N lines of that window, or of the
                  log), `order`="asc" | "desc".
          kill    stop session `id`: TERM to its whole process group, KILL after a grace
                  period (5 s by default); `force`=true sends KILL at once; `wait`=true
                  waits for the exit (bounded by `wait_timeout_seconds` or
                  `timeout_seconds`). `reason` is recorded (default "user_stop").
          list    running sessions as `items` (each with `bash_id`), `count`, `counts` of
                  every status, `summary` {session_count, running_count}; `kind` filters.
          history every session, newest first (`limit`, default 50), same fields.
        An argument the mode does not use is refused (unexpected_argument).

        Session status: running | completed (exit 0) | failed (non-zero exit) |
        terminated (killed or timed out; see stop_reason) | lost (its monitor vanished).

        Examples:
          bash_exec(command="python train.py --epochs 20", mode="detach", timeout_seconds=7200)
          bash_exec(command="pytest -q", mode="await", wait_timeout_seconds=300)
          bash_exec(mode="await", id="bx-1a2b3c4d", wait_timeout_seconds=600)
          bash_exec(mode="read", id="bx-1a2b3c4d", tail=100)
          bash_exec(mode="read", id="bx-1a2b3c4d", after_seq=120, tail_limit=50)
          bash_exec(mode="history", kind="exec", limit=10)
          bash_exec(mode="kill", id="bx-1a2b3c4d", wait=True, reason="diverged")
        """
        return await bash_tool.bash_exec(await tc.quest_async(), cmd)

    return ns.server()
