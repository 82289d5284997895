"""Events as Agent Client Protocol ``session/update`` notifications (pure, no I/O).

:func:`to_notification` turns one stored event into a JSON-RPC 2.0 notification an ACP
client understands; :func:`from_notification` gives the event back. The mapping is a
match on the event's class (``_update``): each case builds the ``update`` body.

- ``conversation.message``: ``user_message_chunk`` (user), ``agent_message_chunk``
  (assistant), ``agent_thought_chunk`` (system). A turn's ``runner.agent_message`` is an
  ``agent_message_chunk`` and its ``runner.reasoning`` an ``agent_thought_chunk``.
- ``runner.tool_call`` / ``runner.tool_result``: ``tool_call`` then ``tool_call_update``
  (the agent's own view of its calls, ids prefixed with the turn's run id). One event
  alone cannot know that our MCP server's ``tool.*`` record is the same call: a stream
  maps through a :class:`Notifier`, which folds both views into one card per call
  (:mod:`projections.acp_cards` says how they are paired). A result's text is also the
  update's ``content``.
- ``tool.call_started`` / ``bash.session_started``: ``tool_call`` (in progress).
- ``tool.call_finished`` and the ends of a bash session: ``tool_call_update``
  (completed | failed). A finished call that was never started (quick calls are logged
  once) becomes a ``tool_call`` already completed or failed, so a client sees it whole.
  ``bash.progress`` / ``bash.kill_requested``: ``tool_call_update`` in progress.
- ``quest.anchor_changed``: ``plan`` (the canonical stages, done / current / pending).
- Every other event: ``session_info_update`` (its timestamp as ``updatedAt``).

Nothing is dropped: every notification carries the raw event in
``params.update._meta["ds_events"]["event"]``, which :func:`from_notification` decodes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec

from ds_events.events import AnyEvent, ConversationMessage, Event, QuestAnchorChanged
from ds_events.events.bash import BashKillRequested, BashProgress, BashSessionExited, BashSessionLost, BashSessionStarted
from ds_events.events.runner import AgentMessage, Reasoning, RunnerToolCall, RunnerToolResult
from ds_events.events.tool import ToolCallFinished, ToolCallStarted

from . import acp_cards

__all__ = ["to_notification", "from_notification", "Notifier", "on_card", "META_KEY", "STAGES", "mapped_tags"]

META_KEY = "ds_events"
# The canonical stages in order; ``decision`` is not a stage of its own (it folds into
# the stage it decides about), so a plan shows it as the current stage only when it is
# the anchor.
STAGES = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize")


def to_notification(event: Event, session_id: str) -> dict[str, Any]:
    """The ACP ``session/update`` notification for ``event`` in session ``session_id``."""
    update = _update(event)
    update["_meta"] = {META_KEY: {"event": msgspec.to_builtins(event), "seq": event.seq, "type": event.type}}
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}


class Notifier:
    """:func:`to_notification` for a stream of one session's events in log order, with
    the agent's view of each tool call and our server's record of it folded into one
    card (:mod:`projections.acp_cards`): the first half to arrive opens it
    (``tool_call``), the rest update it (``tool_call_update``) under its ``toolCallId``.
    Every event still gives exactly one notification carrying it."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.cards = acp_cards.initial()

    @property
    def last_seq(self) -> int:
        return self.cards.last_seq

    def prime(self, events: Iterable[Event]) -> None:
        """Fold events sent before (or not at all) so later halves find their cards."""
        for event in events:
            acp_cards.apply(self.cards, event)

    def fold(self, event: Event) -> acp_cards.Placed | None:
        """Fold ``event`` into the cards: its card (None: not a tool-call event, its
        notification is :func:`to_notification`'s)."""
        return acp_cards.apply(self.cards, event).placed

    def notification(self, event: Event) -> dict[str, Any]:
        placed = self.fold(event)
        note = to_notification(event, self.session_id)
        return on_card(note, placed) if placed is not None else note


def on_card(note: dict[str, Any], placed: acp_cards.Placed) -> dict[str, Any]:
    """A tool event's notification put on its card (``placed``, from :meth:`Notifier.fold`):
    the opener is a ``tool_call``, every later event a ``tool_call_update`` carrying the
    card's status so far."""
    update = note["params"]["update"]
    update["toolCallId"] = placed.card
    update["status"] = placed.status
    if placed.opens:
        update["sessionUpdate"] = "tool_call"
        update.setdefault("title", "tool call")
    else:
        update["sessionUpdate"] = "tool_call_update"
    return note


def from_notification(note: dict[str, Any]) -> Event:
    """The event a notification made by :func:`to_notification` carries.

    Raises ``ValueError`` for a notification without it (not one of ours)."""
    try:
        raw = note["params"]["update"]["_meta"][META_KEY]["event"]
    except (KeyError, TypeError):
        raise ValueError("not a ds-events notification: no params.update._meta.ds_events.event") from None
    try:
        return msgspec.convert(raw, AnyEvent)
    except msgspec.ValidationError as exc:
        raise ValueError(f"the carried event is invalid: {exc}") from None


def mapped_tags() -> frozenset[str]:
    """Tags with a mapping of their own (every other tag becomes ``session_info_update``)."""
    return frozenset(t.TAG for t in _MAPPED)


# --------------------------------------------------------------------------- mappers

# The types with a mapping of their own: the cases of _update, in its order.
_MAPPED: tuple[type[Event], ...] = (
    ConversationMessage, ToolCallStarted, ToolCallFinished, BashSessionStarted, BashProgress, BashKillRequested,
    BashSessionExited, BashSessionLost, QuestAnchorChanged, AgentMessage, Reasoning, RunnerToolCall, RunnerToolResult,
)  # fmt: skip


_MAPPED_SET = frozenset(_MAPPED)


def _update(event: Event) -> dict[str, Any]:
    if type(event) not in _MAPPED_SET:  # one set lookup for the types without a mapping
        return _info_update(event)
    match event:
        case ConversationMessage():
            return _message(event)
        case ToolCallStarted():
            return _tool_call_started(event)
        case ToolCallFinished():
            return _tool_call_finished(event)
        case BashSessionStarted():
            return _bash_started(event)
        case BashProgress():
            return _bash_progress(event)
        case BashKillRequested():
            return _bash_kill(event)
        case BashSessionExited():
            return _bash_exited(event)
        case BashSessionLost():
            return _bash_lost(event)
        case QuestAnchorChanged():
            return _anchor_plan(event)
        case AgentMessage():
            return _text("agent_message_chunk", event.text, event.message_id or event.id)
        case Reasoning():
            return _text("agent_thought_chunk", event.text, event.id)
        case RunnerToolCall():
            return _runner_tool_call(event)
        case RunnerToolResult():
            return _runner_tool_result(event)
    return _info_update(event)


def _result_content(value: Any) -> list[dict[str, Any]]:
    """A call's result as the card's content: one text block (JSON unless it is text)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return [{"type": "content", "content": {"type": "text", "text": text}}]


def _text(kind: str, text: str, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id}


def _message(e: ConversationMessage) -> dict[str, Any]:
    kind = {"user": "user_message_chunk", "assistant": "agent_message_chunk"}.get(e.role, "agent_thought_chunk")
    return _text(kind, e.content, e.id)


def _runner_call_id(e: RunnerToolCall | RunnerToolResult) -> str:
    return f"{e.run_id or 'turn'}:{e.call_id}"


def _runner_tool_call(e: RunnerToolCall) -> dict[str, Any]:
    namespace, _, tool = e.tool.rpartition(".")
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": _runner_call_id(e),
        "title": e.tool,
        "kind": _tool_kind(e.server or namespace, tool),
        "status": "in_progress",
        "rawInput": e.arguments,
    }


def _runner_tool_result(e: RunnerToolResult) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _runner_call_id(e),
        "status": "completed" if e.status == "ok" else "failed",
        "rawOutput": {"status": e.status, "output": e.output, "truncated": e.truncated},
        "content": _result_content(e.output),
    }


def _tool_call_started(e: ToolCallStarted) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": e.call_id,
        "title": f"{e.namespace}.{e.tool}",
        "kind": _tool_kind(e.namespace, e.tool),
        "status": "in_progress",
        "rawInput": e.arguments,
    }


def _tool_call_finished(e: ToolCallFinished) -> dict[str, Any]:
    status = "completed" if e.status == "ok" else "failed"
    output: dict[str, Any] = {"status": e.status, "result": e.result, "duration_ms": e.duration_ms}
    if e.status == "error":
        output.update(error=e.error_code, message=e.error_message)
    shown = e.result if e.status == "ok" else {"error": e.error_code, "message": e.error_message}
    body: dict[str, Any] = {
        "toolCallId": e.call_id, "status": status, "rawOutput": output, "content": _result_content(shown),
    }
    if e.started:
        return {"sessionUpdate": "tool_call_update", **body}
    # Logged once after the call: show the whole call.
    return {
        "sessionUpdate": "tool_call",
        **body,
        "title": f"{e.namespace}.{e.tool}",
        "kind": _tool_kind(e.namespace, e.tool),
        "rawInput": e.arguments,
    }


def _bash_started(e: BashSessionStarted) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": _bash_call_id(e.session_id),
        "title": e.command[:200],
        "kind": "execute",
        "status": "in_progress",
        "rawInput": {"command": e.command, "workdir": e.workdir, "timeout_seconds": e.timeout_seconds},
    }


def _bash_progress(e: BashProgress) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "in_progress",
        "rawOutput": {"progress": e.data, "line": e.line},
    }


def _bash_kill(e: BashKillRequested) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "in_progress",
        "rawOutput": {"kill_requested": e.reason, "force": e.force},
    }


def _bash_exited(e: BashSessionExited) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "completed" if e.status == "completed" else "failed",
        "rawOutput": {
            "status": e.status,
            "exit_code": e.exit_code,
            "signal": e.signal,
            "reason": e.reason,
            "lines": e.lines,
            "duration_seconds": e.duration_seconds,
        },
    }


def _bash_lost(e: BashSessionLost) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "failed",
        "rawOutput": {"status": "lost", "reason": e.reason, "detail": e.detail},
    }


def _anchor_plan(e: QuestAnchorChanged) -> dict[str, Any]:
    current = e.anchor
    rank = STAGES.index(current) if current in STAGES else -1
    entries = []
    for i, stage in enumerate(STAGES):
        status = "completed" if i < rank else "in_progress" if i == rank else "pending"
        entries.append({"content": stage, "priority": "high" if i == rank else "medium", "status": status})
    if rank < 0:  # an anchor outside the canonical stages (``decision``): show it as current
        entries.append({"content": current, "priority": "high", "status": "in_progress"})
    return {"sessionUpdate": "plan", "entries": entries}


def _info_update(e: Event) -> dict[str, Any]:
    return {"sessionUpdate": "session_info_update", "updatedAt": e.ts or None}


def _bash_call_id(session_id: str) -> str:
    return f"bash:{session_id}"


_KIND_BY_TOOL = {"search": "search", "read": "read", "list": "read", "get": "read", "delete": "delete"}


def _tool_kind(namespace: str, tool: str) -> str:
    """An ACP ``ToolKind`` for a tool by its name (a client picks an icon from it)."""
    if namespace == "bash_exec":
        return "execute"
    verb = tool.split("_", 1)[0]
    if verb in _KIND_BY_TOOL:
        return _KIND_BY_TOOL[verb]
    return "edit" if verb in ("write", "record", "append", "promote", "supersede", "import") else "other"
