"""Events as Agent Client Protocol ``session/update`` notifications (pure, no I/O).

:func:`to_notification` turns one stored event into a JSON-RPC 2.0 notification an ACP
client understands; :func:`from_notification` gives the event back. The mapping is a
table keyed by event tag (``_MAPPERS``): each entry builds the ``update`` body.

- ``conversation.message``: ``user_message_chunk`` (user), ``agent_message_chunk``
  (assistant), ``agent_thought_chunk`` (system). A turn's ``runner.agent_message`` is an
  ``agent_message_chunk`` and its ``runner.reasoning`` an ``agent_thought_chunk``.
- ``runner.tool_call`` / ``runner.tool_result``: ``tool_call`` then ``tool_call_update``
  (the agent's own view of its calls, ids prefixed with the turn's run id; the MCP
  servers' ``tool.*`` records of the same calls keep their own ids).
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

from collections.abc import Callable
from typing import Any

import msgspec

from ds_events.events import AnyEvent, Event

__all__ = ["to_notification", "from_notification", "META_KEY", "STAGES", "mapped_tags"]

META_KEY = "ds_events"
# The canonical stages in order; ``decision`` is not a stage of its own (it folds into
# the stage it decides about), so a plan shows it as the current stage only when it is
# the anchor.
STAGES = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize")


def to_notification(event: Event, session_id: str) -> dict[str, Any]:
    """The ACP ``session/update`` notification for ``event`` in session ``session_id``."""
    mapper = _MAPPERS.get(event.type, _info_update)
    update = mapper(event)
    update["_meta"] = {META_KEY: {"event": msgspec.to_builtins(event), "seq": event.seq, "type": event.type}}
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}


def from_notification(note: dict[str, Any]) -> Event:
    """The event a notification made by :func:`to_notification` carries.

    Raises ``ValueError`` for a notification without it (not one of ours)."""
    try:
        raw = note["params"]["update"]["_meta"][META_KEY]["event"]
    except (KeyError, TypeError):
        raise ValueError("not a ds-events notification: no params.update._meta.ds_events.event") from None
    try:
        return msgspec.convert(raw, AnyEvent)  # type: ignore[return-value]
    except msgspec.ValidationError as exc:
        raise ValueError(f"the carried event is invalid: {exc}") from None


def mapped_tags() -> frozenset[str]:
    """Tags with a mapping of their own (every other tag becomes ``session_info_update``)."""
    return frozenset(_MAPPERS)


# --------------------------------------------------------------------------- mappers


def _text(kind: str, text: str, message_id: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id}


def _message(e: Any) -> dict[str, Any]:
    kind = {"user": "user_message_chunk", "assistant": "agent_message_chunk"}.get(e.role, "agent_thought_chunk")
    return _text(kind, e.content, e.id)


def _runner_text(kind: str) -> Callable[[Any], dict[str, Any]]:
    return lambda e: _text(kind, e.text, getattr(e, "message_id", "") or e.id)


def _runner_call_id(e: Any) -> str:
    return f"{e.run_id or 'turn'}:{e.call_id}"


def _runner_tool_call(e: Any) -> dict[str, Any]:
    namespace, _, tool = e.tool.rpartition(".")
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": _runner_call_id(e),
        "title": e.tool,
        "kind": _tool_kind(e.server or namespace, tool),
        "status": "in_progress",
        "rawInput": e.arguments,
    }


def _runner_tool_result(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _runner_call_id(e),
        "status": "completed" if e.status == "ok" else "failed",
        "rawOutput": {"status": e.status, "output": e.output, "truncated": e.truncated},
    }


def _tool_call_started(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": e.call_id,
        "title": f"{e.namespace}.{e.tool}",
        "kind": _tool_kind(e.namespace, e.tool),
        "status": "in_progress",
        "rawInput": e.arguments,
    }


def _tool_call_finished(e: Any) -> dict[str, Any]:
    status = "completed" if e.status == "ok" else "failed"
    output: dict[str, Any] = {"status": e.status, "result": e.result, "duration_ms": e.duration_ms}
    if e.status == "error":
        output.update(error=e.error_code, message=e.error_message)
    body: dict[str, Any] = {"toolCallId": e.call_id, "status": status, "rawOutput": output}
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


def _bash_started(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call",
        "toolCallId": _bash_call_id(e.session_id),
        "title": e.command[:200],
        "kind": "execute",
        "status": "in_progress",
        "rawInput": {"command": e.command, "workdir": e.workdir, "timeout_seconds": e.timeout_seconds},
    }


def _bash_progress(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "in_progress",
        "rawOutput": {"progress": e.data, "line": e.line},
    }


def _bash_kill(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "in_progress",
        "rawOutput": {"kill_requested": e.reason, "force": e.force},
    }


def _bash_exited(e: Any) -> dict[str, Any]:
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


def _bash_lost(e: Any) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": _bash_call_id(e.session_id),
        "status": "failed",
        "rawOutput": {"status": "lost", "reason": e.reason, "detail": e.detail},
    }


def _anchor_plan(e: Any) -> dict[str, Any]:
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


_MAPPERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "conversation.message": _message,
    "tool.call_started": _tool_call_started,
    "tool.call_finished": _tool_call_finished,
    "bash.session_started": _bash_started,
    "bash.progress": _bash_progress,
    "bash.kill_requested": _bash_kill,
    "bash.session_exited": _bash_exited,
    "bash.session_lost": _bash_lost,
    "quest.anchor_changed": _anchor_plan,
    "runner.agent_message": _runner_text("agent_message_chunk"),
    "runner.reasoning": _runner_text("agent_thought_chunk"),
    "runner.tool_call": _runner_tool_call,
    "runner.tool_result": _runner_tool_result,
}
