"""The ``claude`` runner: Claude Code in print mode, its stream-json parsed into turn events.

Command (``runner.commands.claude`` replaces the ``claude`` executable)::

    claude -p --output-format stream-json --verbose --mcp-config <run_dir>/mcp.json --strict-mcp-config
           --permission-mode bypassPermissions [--model M]

with the prompt on stdin. ``mcp.json`` registers our three namespaces as stdio servers
(``ds mcp --namespace ...`` with DS_HOME / DS_QUEST_ID / DS_RUN_ID in their env); the
model sees their tools as ``mcp__<server>__<tool>``. With ``runner.mcp_transport: http``
they are this host's URLs for the turn instead (``type: http``, the turn's bearer token in
``headers``; the token ends with the turn). ``bypassPermissions`` because
nobody is there to approve a tool call in an unattended turn.

The stream is one JSON object per line (kept whole in ``stdout.jsonl``):

- ``system`` / ``init``: the session, its tools and MCP servers with a status each; one of
  ours that did not connect fails the turn (the agent would run without its tools).
- ``assistant``: a model message; each content block is a line's worth of turn events —
  ``text`` an agent message, ``thinking`` reasoning, ``tool_use`` a tool call.
- ``user``: ``tool_result`` blocks end those tool calls (``is_error`` says how).
- ``result``: the end — ``subtype`` ``success`` unless the run failed (``error_max_turns``,
  ``error_during_execution``, ...), ``is_error``, and the whole run's ``usage``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ds_events.services.runtime.commands import RunResult, TurnSpec
from ds_events.services.runtime.turns import MCP_NAMESPACES, TurnRecorder

from .base import LineRunner, mcp_endpoints

__all__ = ["ClaudeRunner", "mcp_config", "tool_name"]


def mcp_config(spec: TurnSpec) -> dict[str, Any]:
    """The ``--mcp-config`` document: our three namespaces as stdio servers, or as this
    host's streamable-HTTP URLs for the turn (``type: http`` with the bearer token).

    A stdio server runs this interpreter with ``-m ds_events``: a source tree on
    PYTHONPATH must reach it, and Claude Code gives a server its own env plus what is
    listed (:func:`~.base.mcp_endpoints` adds it)."""
    servers: dict[str, Any] = {}
    for ep in mcp_endpoints(spec):
        if ep.url:
            servers[ep.namespace] = {"type": "http", "url": ep.url, "headers": ep.headers}
        else:
            servers[ep.namespace] = {"type": "stdio", "command": ep.command[0], "args": ep.command[1:], "env": ep.env}
    return {"mcpServers": servers}


def tool_name(name: str) -> tuple[str, str]:
    """``(tool, server)``: Claude Code's ``mcp__memory__write`` is ``("memory.write",
    "memory")``; its own tools (``Bash``, ``Edit``) keep their names, with no server."""
    if name.startswith("mcp__"):
        server, sep, tool = name[len("mcp__") :].partition("__")
        if sep and server and tool:
            return f"{server}.{tool}", server
    return name, ""


class ClaudeRunner(LineRunner):
    name = "claude"

    def __init__(self, config: Any, **_: Any) -> None:
        super().__init__(config)
        self.session_id = ""

    def command(self, spec: TurnSpec) -> list[str]:
        path = Path(spec.run_dir) / "mcp.json"
        path.write_text(json.dumps(mcp_config(spec), indent=2) + "\n", encoding="utf-8")
        argv = [
            *self.executable("claude"), "-p", "--output-format", "stream-json", "--verbose",
            "--mcp-config", str(path), "--strict-mcp-config", "--permission-mode", "bypassPermissions",
        ]  # fmt: skip
        # --strict-mcp-config: only our servers, not the user's own (one named ``memory``
        # would clash with ours).
        if spec.model:
            argv += ["--model", spec.model]
        return argv

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        program = self.executable("claude")[0]
        if shutil.which(program) is None:
            return RunResult(
                ok=False,
                error=f"cannot start {program!r}: not found; install Claude Code or set runner.commands.claude",
            )
        return await super().run(spec, recorder)

    def handle(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
        kind = item.get("type")
        if kind == "system" and item.get("subtype") == "init":
            self._init(item)
        elif kind == "assistant":
            self._assistant(_message(item), recorder)
        elif kind == "user":
            self._tool_results(_message(item), recorder)
        elif kind == "result":
            self._result(item, recorder)

    # -- the line kinds ---------------------------------------------------------------

    def _init(self, item: dict[str, Any]) -> None:
        self.session_id = str(item.get("session_id") or "")
        for server in item.get("mcp_servers") or []:
            if not isinstance(server, dict) or server.get("name") not in MCP_NAMESPACES:
                continue
            if server.get("status") in ("failed", "needs-auth"):
                self.failure = self.failure or f"MCP server {server['name']} did not start ({server['status']})"

    def _assistant(self, message: dict[str, Any], recorder: TurnRecorder) -> None:
        message_id = str(message.get("id") or "")
        for block in _blocks(message):
            block_type = block.get("type")
            if block_type == "text":
                recorder.agent_message(str(block.get("text") or ""), message_id)
            elif block_type == "thinking":
                recorder.reasoning(str(block.get("thinking") or ""))
            elif block_type in ("tool_use", "server_tool_use"):
                tool, server = tool_name(str(block.get("name") or "tool"))
                recorder.tool_call(str(block.get("id") or ""), tool, block.get("input"), server=server)

    def _tool_results(self, message: dict[str, Any], recorder: TurnRecorder) -> None:
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                ok = not block.get("is_error")
                recorder.tool_result(str(block.get("tool_use_id") or ""), ok, _result_content(block.get("content")))

    def _result(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
        usage = item.get("usage")
        if isinstance(usage, dict):
            recorder.add_usage(usage)  # the whole run's: per-message usage is not summed again
        subtype = str(item.get("subtype") or "")
        if item.get("is_error") or subtype not in ("", "success"):
            detail = item.get("result") or "; ".join(str(e) for e in item.get("errors") or []) or "no detail"
            self.failure = f"{subtype or 'error'}: {detail}"[:2000]


def _message(item: dict[str, Any]) -> dict[str, Any]:
    message = item.get("message")
    return message if isinstance(message, dict) else {}


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_content(content: Any) -> Any:
    """A tool result's content: a string, or the text of its blocks; an MCP tool's JSON
    text becomes the value it encodes."""
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if len(texts) != len(content):
            return content  # images and such: kept as given
        content = "\n".join(texts)
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            return json.loads(content)
        except ValueError:
            pass
    return content
