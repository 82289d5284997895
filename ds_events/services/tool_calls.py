"""Recording MCP tool calls in the quest's log: arguments in, outcome out.

The MCP layer calls these around every tool (it never appends itself). Cost: one extra
durable append per call, made *after* the call for a quick one (:func:`record_call`, a
single ``tool.call_finished`` carrying arguments and outcome). A call that may run long
(``bash_exec`` awaiting a command) is announced first by :func:`start_call`, so a
follower sees it in progress, and closed by :func:`finish_call`: two appends.

Environment values are never logged: an ``env`` argument is stored with its keys only
(the values are often tokens), as ``bash.session_started`` stores ``env_keys``. Nor is a
command's output (a result's ``output`` field, and a ``bash_exec`` answer's ``log`` text and
``tail`` lines): the log never holds output lines (they live in the session's line log),
so the record keeps only their size.

Arguments and results are bounded (:data:`MAX_JSON_CHARS` of JSON each): larger ones are
stored as a truncated JSON string with ``truncated`` set. The complete outcome is in the
domain events the tool appended; this record is the "what was asked, how did it go".
"""

from __future__ import annotations

import json
from typing import Any

from ds_events.errors import Invalid
from ds_events.events import new_event_id
from ds_events.events.tool import ToolCallFinished, ToolCallStarted
from ds_events.home import Quest

__all__ = ["MAX_JSON_CHARS", "REDACTED", "new_call_id", "start_call", "finish_call", "record_call", "bounded"]

MAX_JSON_CHARS = 4000
REDACTED = "<redacted>"


def new_call_id() -> str:
    return "tc-" + new_event_id()


def start_call(quest: Quest, *, call_id: str, namespace: str, tool: str, arguments: dict[str, Any]) -> ToolCallStarted:
    """Announce a long-running call (before it runs)."""
    args, _ = _bounded_arguments(arguments)
    return quest.emit(ToolCallStarted(call_id=call_id, namespace=namespace, tool=tool, arguments=args))


def finish_call(
    quest: Quest,
    *,
    call_id: str,
    namespace: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    started: bool,
    result: Any = None,
    error: dict[str, Any] | None = None,
    duration_ms: float = 0.0,
) -> ToolCallFinished:
    """Record how a call ended: ``result`` (builtins) when it succeeded, else ``error``
    (the ``{"error": code, "message": ...}`` payload the caller saw).

    ``arguments`` are stored only when the call was not announced by :func:`start_call`.
    """
    args, args_cut = _bounded_arguments(arguments or {}) if not started else ({}, False)
    if isinstance(result, dict):
        result = _without_output(namespace, result)
    body, body_cut = bounded(result) if error is None else (None, False)
    return quest.emit(
        ToolCallFinished(
            call_id=call_id,
            namespace=namespace,
            tool=tool,
            status="ok" if error is None else "error",
            arguments=args,
            started=started,
            error_code=str((error or {}).get("error", "")),
            error_message=str((error or {}).get("message", ""))[:MAX_JSON_CHARS],
            result=body,
            truncated=args_cut or body_cut,
            duration_ms=round(duration_ms, 3),
        )
    )


def record_call(quest: Quest, *, namespace: str, tool: str, arguments: dict[str, Any], **outcome: Any) -> ToolCallFinished:
    """A quick call, logged once after it ran (see :func:`finish_call` for ``outcome``)."""
    return finish_call(
        quest, call_id=new_call_id(), namespace=namespace, tool=tool, arguments=arguments, started=False, **outcome
    )


def bounded(value: Any) -> tuple[Any, bool]:
    """``value`` itself when its JSON is at most :data:`MAX_JSON_CHARS`, else a prefix of
    that JSON (a string); the flag says whether it was cut."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_JSON_CHARS:
        return json.loads(text), False
    return text[:MAX_JSON_CHARS], True


# -- private helpers -------------------------------------------------------------------


def _bounded_arguments(arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    if not isinstance(arguments, dict):  # the SDK hands a dict; be safe with anything else
        # The same fact as decode_command's "arguments must be a JSON object": the same code.
        raise Invalid("tool arguments must be an object", code="invalid_argument", argument="")
    if isinstance(arguments.get("env"), dict):
        arguments = {**arguments, "env": {key: REDACTED for key in arguments["env"]}}
    value, cut = bounded(arguments)
    return (value, False) if not cut else ({"_truncated_json": value}, True)


def _without_output(namespace: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with a command's output replaced by its size (see the module's doc)."""
    out = dict(result)
    if isinstance(out.get("output"), str):
        out["output"] = f"<{len(out['output'])} characters of output, not logged>"
    if namespace == "bash_exec":
        if isinstance(out.get("log"), str):
            out["log"] = f"<{len(out['log'])} characters of output, not logged>"
        if isinstance(out.get("tail"), list):
            out["tail"] = f"<{len(out['tail'])} lines of output, not logged>"
    return out
