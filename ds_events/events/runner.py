"""Events of the `runner` domain: the life of a turn, as the scheduler records it.

A turn is one run of a coding agent (Codex CLI, Claude Code, an ACP agent, the scripted
runner) on a prompt the runtime built. Every event of a turn carries the turn's id in
the envelope's ``run_id``. The life of a turn:

- :class:`TurnStarted`: the scheduler claimed the turn (no other turn of the quest is
  running) and handed it the queued messages it delivers; the prompt's hash and path.
- :class:`RunnerProcessStarted`: the agent process group exists (pid, pgid, start time:
  what pause and stop signal, and what crash recovery checks).
- :class:`AgentMessage`, :class:`Reasoning`, :class:`RunnerToolCall`,
  :class:`RunnerToolResult`: what the agent said, thought and did, parsed from its stream.
- :class:`TurnFinished`: the outcome, usage and duration; exactly one per turn.
- :class:`TurnRetryScheduled`: a failed or stalled turn will run again after a delay.
- :class:`TurnHeld`: a failed turn will not run again by itself (a deterministic failure,
  or its attempts are spent): it waits for the user (a message, or ``resume``).

How a failed turn ended is classified (:class:`TurnFailure`): ``transient`` (the agent
crashed or was killed, the provider was unreachable or failed, a stall, a rate or usage
limit) is retried; ``deterministic`` (the agent exited after one of our calls was refused,
or the same failure twice) is held for the user.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import Event

__all__ = [
    "TurnStarted",
    "RunnerProcessStarted",
    "AgentMessage",
    "Reasoning",
    "RunnerToolCall",
    "RunnerToolResult",
    "TurnFinished",
    "TurnRetryScheduled",
    "TurnHeld",
    "TurnFailure",
    "FailureClass",
    "TurnOutcome",
    "TURN_OUTCOMES",
    "EVENTS",
]

TurnOutcome = Literal["completed", "failed", "interrupted", "stalled", "cancelled"]
TURN_OUTCOMES: tuple[str, ...] = ("completed", "failed", "interrupted", "stalled", "cancelled")
FailureClass = Literal["transient", "deterministic"]


class TurnFailure(msgspec.Struct, frozen=True, kw_only=True):
    """How a failed turn ended, as the scheduler classified it. ``cause`` is a short code
    (``agent_crashed``, ``agent_failed``, ``provider_unreachable``, ``provider_5xx``,
    ``stalled``, ``usage_limit``, ``rate_limit``, ``refused_call``, ``repeated_failure``);
    ``tool`` and ``call_id`` name the refused call, ``error`` its error code (or the
    runner's error text). Stored as ``class`` (a Python keyword, hence the attribute name)."""

    failure_class: FailureClass = msgspec.field(name="class")
    cause: str
    tool: str | None = None
    call_id: str | None = None
    error: str | None = None


class TurnStarted(Event, tag="runner.turn_started", kw_only=True):
    """A turn began. ``message_ids`` are the queued inbound items (event ids) its prompt
    delivers; ``retry_of`` names the failed turn this one retries."""

    runner: str
    model: str = ""
    skill: str
    skill_reason: str = ""
    attempt: int = 1
    retry_of: str | None = None
    message_ids: list[str] = []
    prompt_sha256: str = ""
    prompt_path: str = ""  # relative to the quest root
    prompt_chars: int = 0
    # The process that hosts the turn (``ds run`` or ``ds serve``): crash recovery asks
    # whether it is still alive before it records the turn as interrupted.
    host: str = ""
    host_pid: int = 0
    host_start: int | None = None
    host_boot: str = ""


class RunnerProcessStarted(Event, tag="runner.process_started", kw_only=True):
    """The agent's process (the leader of its own process group) was started."""

    pid: int
    pgid: int
    start_time: int | None = None  # the kernel's start tick, to tell a reused pid apart
    boot_id: str = ""
    command: list[str] = []  # argv, without the prompt (which goes on stdin)


class AgentMessage(Event, tag="runner.agent_message", kw_only=True):
    """Text the agent addressed to the user (a whole message, not a token delta)."""

    text: str
    message_id: str = ""


class Reasoning(Event, tag="runner.reasoning", kw_only=True):
    """The agent's reasoning summary, as its runner exposes it."""

    text: str


class RunnerToolCall(Event, tag="runner.tool_call", kw_only=True):
    """The agent called a tool (one of ours over MCP, or its own: shell, file edits)."""

    call_id: str
    tool: str  # as the agent names it, e.g. "memory.write" or "shell"
    arguments: Any = None  # bounded like a tool-call record's result
    server: str = ""  # the MCP server, when it is one


class RunnerToolResult(Event, tag="runner.tool_result", kw_only=True):
    """A tool call of the agent ended."""

    call_id: str
    status: Literal["ok", "error"]
    output: Any = None  # bounded
    truncated: bool = False


class TurnFinished(Event, tag="runner.turn_finished", kw_only=True):
    """A turn ended, once. ``reason`` says why for every outcome but ``completed``
    (``paused``, ``stopped``, ``host_died``, ``silent for 600 s``, ``exit 1: ...``)."""

    outcome: TurnOutcome
    reason: str = ""
    exit_code: int | None = None
    usage: dict[str, int] = {}
    duration_ms: float = 0.0
    messages: int = 0  # agent messages in the turn
    tool_calls: int = 0


class TurnRetryScheduled(Event, tag="runner.turn_retry_scheduled", kw_only=True):
    """The turn ``run_id`` failed (or stalled) and will run again as attempt ``attempt``
    after ``delay_s`` seconds."""

    attempt: int
    delay_s: float
    reason: str = ""
    failure: TurnFailure | None = None  # why the attempt failed (always transient here)
    max_attempts: int = 0  # the attempt budget in force (0: not recorded)


class TurnHeld(Event, tag="runner.turn_held", kw_only=True):
    """The failed turn ``run_id`` (attempt ``attempt``) is not retried automatically: it
    needs the user. A new user message or ``ds control Q resume`` starts the next turn,
    a retry of this one with a fresh attempt budget."""

    attempt: int
    max_attempts: int = 0
    reason: str = ""
    failure: TurnFailure


EVENTS = (
    TurnStarted,
    RunnerProcessStarted,
    AgentMessage,
    Reasoning,
    RunnerToolCall,
    RunnerToolResult,
    TurnFinished,
    TurnRetryScheduled,
    TurnHeld,
)
