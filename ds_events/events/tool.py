"""Events of the `tool` domain: one record per MCP tool call, with its arguments and outcome.

A call that finishes quickly is logged once, after it ran, as :class:`ToolCallFinished`
(which carries the arguments too): one extra durable append per call, none before it.
A call that may run long (``bash_exec`` in its blocking modes) is first logged as
:class:`ToolCallStarted`, so a follower sees it in progress, then finished with the same
``call_id``. Results are bounded (``result`` is a summary, truncated JSON) so a chatty
tool cannot bloat the log; the full outcome lives in the domain events it appended.
"""

from __future__ import annotations

from typing import Any, Literal

from .base import Event

__all__ = ["ToolCallStarted", "ToolCallFinished", "EVENTS"]


class ToolCallStarted(Event, tag="tool.call_started", kw_only=True):
    """A long-running tool call began (quick calls are logged only when finished)."""

    call_id: str
    namespace: str  # the MCP server: memory | artifact | bash_exec
    tool: str
    arguments: dict[str, Any] = {}


class ToolCallFinished(Event, tag="tool.call_finished", kw_only=True):
    """A tool call ended. ``started`` tells whether a ``tool.call_started`` preceded it;
    when it did not, ``arguments`` holds the call's arguments here."""

    call_id: str
    namespace: str
    tool: str
    status: Literal["ok", "error"]
    arguments: dict[str, Any] = {}
    started: bool = False
    error_code: str = ""
    error_message: str = ""
    result: Any = None  # bounded: small results verbatim, larger ones as a truncated JSON string
    truncated: bool = False
    duration_ms: float = 0.0


EVENTS = (ToolCallStarted, ToolCallFinished)
