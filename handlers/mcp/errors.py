"""What a failed tool call looks like to the model: one text block holding the JSON
object ``{"error": code, "message": ..., "ok": false}`` (plus the details that help fix
the call), with ``isError`` set. The codes are the services' own, so the same fact has the same
code on MCP, HTTP and the CLI."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from mcp.types import CallToolResult, TextContent

from ds_events.errors import DiskFull, ErrorCode, LogError, LogUnavailable, ServiceError, catalogue
from ds_events.events import EventDecodeError

__all__ = ["error_payload", "error_result", "CODES"]

# The codes the MCP edge itself answers (what binds a server to its quest, what it
# cannot find or do); every domain's codes reach the model unchanged.
CODES = catalogue(
    ErrorCode("no_quest", 400, "ds mcp was started without a quest: set DS_QUEST_ID (with DS_HOME) or DS_QUEST_ROOT, or pass --quest."),
    ErrorCode("quest_outside_home", 400, "DS_QUEST_ROOT is not a quest directory of the home DS_HOME names."),
    ErrorCode("conflicting_quest", 400, "DS_QUEST_ID and DS_QUEST_ROOT name different quests: give one of them."),
    ErrorCode("unknown_tool", 404, "No tool of that name in this namespace: tools lists the ones there are."),
    # The host-served transport (handlers.mcp.host): a request it refuses before any tool runs.
    ErrorCode("missing_token", 401, "No bearer token on a request to the host-served MCP transport: send 'Authorization: Bearer <token>'."),
    ErrorCode("invalid_token", 401, "The bearer token names no running turn: it is wrong, or its turn has ended (a token lasts one turn)."),
    ErrorCode("wrong_turn", 401, "The bearer token belongs to another turn (quest or run id) than the one the URL names."),
    ErrorCode("unknown_endpoint", 404, "No such endpoint on the MCP host: it serves /mcp/<quest_id>/<run_id>/<namespace> only."),
    ErrorCode("unknown_namespace", 404, "No MCP namespace of that name: memory, artifact or bash_exec."),
    ErrorCode("os_error", 500, "The operating system refused a file operation (errno and the path say which)."),
)


def error_payload(exc: BaseException, *, tool: str = "") -> dict[str, Any]:
    """The JSON object a caller sees for ``exc``: a stable code and a message, with
    ``ok: false`` (DeepScientist's callers test a refused call's ``ok``) after them."""
    payload = _payload(exc, tool)
    payload.setdefault("ok", False)
    return payload


def _payload(exc: BaseException, tool: str) -> dict[str, Any]:
    if isinstance(exc, ServiceError):
        return exc.to_dict()
    if isinstance(exc, DiskFull):
        return {"error": "disk_full", "message": f"{exc}: free some space; nothing was written"}
    if isinstance(exc, LogUnavailable):  # as the daemon answers it: log_unavailable, the specific code as reason
        return exc.to_dict()
    if isinstance(exc, (LogError, EventDecodeError)):
        return {"error": "log_unavailable", "message": f"{exc}; run `ds verify`"}
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return {"error": "os_error", "message": f"{exc.strerror or exc}{where}", "errno": exc.errno}
    # A bug of ours: say so in our shape, and leave the traceback on stderr.
    traceback.print_exception(exc, file=sys.stderr)
    return {"error": "internal_error", "message": f"{tool or 'the tool'} failed unexpectedly ({type(exc).__name__}: {exc})"}


def error_result(payload: dict[str, Any]) -> CallToolResult:
    """``payload`` as the answer of a failed call."""
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
