"""The ``acp`` runner: any Agent Client Protocol agent over stdio, one runner for all.

The agent (Zed's ``codex-acp`` or ``claude-code-acp``, ``gemini --experimental-acp``,
the scripted ``fixtures/acp_agent.py``) is the command in ``runner.commands.acp``. It is
started as the leader of its own process group, and this runner is its client, through
the official SDK's client side (:func:`acp.connect_to_agent`):

1. ``initialize``: we offer file reads and writes (confined to the quest), no terminal.
2. ``session/new`` in the quest root, with our three MCP servers in ``mcpServers``:
   with ``runner.mcp_transport: http`` (the default) and an agent whose
   ``mcpCapabilities.http`` says it takes them, this host's URLs for the turn with its
   bearer token; else stdio, ``ds mcp --namespace ...``, with DS_HOME / DS_QUEST_ID /
   DS_RUN_ID in their env (an agent hands a server only the env it is given). A
   configured model is selected through the session's ``model`` config option when the
   agent offers one.
3. ``session/prompt`` with the built prompt; ``session/update``s become turn events:
   ``agent_message_chunk``s are joined into one ``runner.agent_message`` (per message id,
   until something else arrives), ``agent_thought_chunk``s likewise into
   ``runner.reasoning``, ``tool_call`` / ``tool_call_update`` into ``runner.tool_call``
   and, when the call completes or fails, ``runner.tool_result``. A call of one of our
   tools is named as every runner names it (``memory.write``, server ``memory``) whatever
   the agent's title (:func:`tool_name`); an MCP invocation sent as the call's input is
   its arguments, an MCP result sent as its output is its structured content (codex-acp
   sends both whole), and our server's JSON text sent as the output is the value it
   encodes (claude-agent-acp). A call announced before its input is known (claude-agent-acp
   streams ``rawInput: {}`` first and the whole input in the next update) is recorded
   once the input arrives.
4. The answer's ``stopReason`` decides: ``end_turn`` is a success; ``refusal``,
   ``max_tokens``, ``max_turn_requests`` and an unasked ``cancelled`` are failures.
5. ``session/close`` when the agent offers it, then EOF on its stdin. Some agents
   (codex-acp 0.16) do not exit at EOF: one that closed its session is signalled after
   a short grace, one that did not gets the longer one to exit by itself.

Unattended, ``session/request_permission`` is answered with the agent's "allow" option.
:meth:`AcpRunner.interrupt` (a pause, a stop, a stall) sends ``session/cancel`` and waits
for the agent to answer the prompt ``cancelled``; the scheduler then signals the group.
Every JSON-RPC message both ways is kept in ``.ds/runs/<run_id>/acp.jsonl``, the agent's
stderr in ``stderr.log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import acp
from acp import schema
from ds_events.bash import procs
from ds_events.config import RunnerConfig
from ds_events.errors import Invalid
from ds_events.services.runtime.commands import RunResult, TurnSpec
from ds_events.services.runtime.turns import MCP_NAMESPACES, TurnRecorder

from .base import agent_env, kill_and_reap, mcp_endpoints, mcp_stdio_endpoints, serving_turn, start_agent, stop_group

__all__ = ["AcpRunner", "TurnClient", "mcp_servers", "tool_name", "STOP_REASONS"]

# What a prompt's stopReason means for the turn (ok, and why not).
STOP_REASONS: dict[str, tuple[bool, str]] = {
    "end_turn": (True, ""),
    "cancelled": (False, "the agent cancelled the turn"),
    "refusal": (False, "the agent refused to continue"),
    "max_tokens": (False, "the agent hit its token limit"),
    "max_turn_requests": (False, "the agent hit its limit of model requests in one turn"),
}
EXIT_GRACE_SECONDS = 15.0  # for the agent to exit at EOF (it closes its MCP servers first)
# For an agent that answered session/close: it has released the session (its MCP servers
# too), so nothing is left for it to finish. codex-acp 0.16 does not exit at EOF at all
# and is signalled after this; claude-agent-acp 0.23.1 exits within it.
CLOSED_EXIT_GRACE_SECONDS = 2.0
CLOSE_TIMEOUT_SECONDS = 30.0  # for the answer to session/close
_WRITE_REFUSED = (".ds", ".git")  # the log and the repository: never written by an agent
# ``mcp__memory__write`` (Claude Code's names), ``memory.write`` / ``memory/write``, and
# either after a label such as codex-acp's ``Tool: memory/write``.
_MCP_TITLE = re.compile(
    r"^(?P<label>Tool:\s*)?(?:mcp__(?P<a>[^_].*?)__(?P<at>.+)|(?P<b>[A-Za-z_][\w-]*)[./](?P<bt>[\w.-]+))$"
)
# Gemini CLI's title of an MCP call: ``search (memory MCP Server)``.
_GEMINI_TITLE = re.compile(r"^(?P<tool>[\w.-]+) \((?P<server>[\w.-]+) MCP Server\)$")


def mcp_servers(spec: TurnSpec, *, http: bool = False) -> list[schema.McpServerStdio | schema.HttpMcpServer]:
    """``session/new``'s ``mcpServers``: our three namespaces as stdio servers, or, when
    the host serves the turn and the agent takes http servers (``http``: its
    ``mcpCapabilities.http``), as the host's URLs with the turn's bearer token.

    A stdio server runs this interpreter with ``-m ds_events``: a source tree on
    PYTHONPATH (a checkout, a test) must reach it too, and an agent passes on only what
    it is given (:func:`~.base.mcp_endpoints` adds it)."""
    endpoints = mcp_endpoints(spec)
    if not http and any(ep.url for ep in endpoints):
        endpoints = mcp_stdio_endpoints(spec)
    servers: list[schema.McpServerStdio | schema.HttpMcpServer] = []
    for ep in endpoints:
        if ep.url:
            headers = [schema.HttpHeader(name=k, value=v) for k, v in ep.headers.items()]
            servers.append(schema.HttpMcpServer(name=ep.namespace, url=ep.url, headers=headers, type="http"))
        else:
            servers.append(
                schema.McpServerStdio(
                    name=ep.namespace,
                    command=ep.command[0],
                    args=ep.command[1:],
                    env=[schema.EnvVariable(name=k, value=v) for k, v in ep.env.items()],
                )
            )
    return servers


def tool_name(title: str) -> tuple[str, str]:
    """``(tool, server)`` from a tool call's title: ``mcp__memory__write``, ``memory.write``,
    codex-acp's ``Tool: memory/write`` and Gemini CLI's ``write (memory MCP Server)`` are
    ``("memory.write", "memory")``; anything else is kept as the agent named it, with no
    server."""
    gemini = _GEMINI_TITLE.match(title.strip())
    if gemini:
        return f"{gemini['server']}.{gemini['tool']}", gemini["server"]
    match = _MCP_TITLE.match(title.strip())
    if match:
        server, tool = (match["a"], match["at"]) if match["a"] else (match["b"], match["bt"])
        # A file name (``config.yaml``) is not a tool: a bare ``x.y`` names one of ours only.
        if match["a"] or match["label"] or server in MCP_NAMESPACES:
            return f"{server}.{tool}", server
    return title, ""


class AcpRunner:
    name = "acp"

    def __init__(self, config: RunnerConfig, **_: Any) -> None:
        self.config = config
        self.argv = list(config.commands.get("acp") or [])
        if not self.argv:
            raise Invalid(
                'the acp runner needs the agent\'s command: set runner.commands.acp, e.g. ["codex-acp"]',
                code="runner_not_configured",
            )
        self._conn: Any = None
        self._session_id: str | None = None
        self._can_close = False  # the agent offers session/close
        self._interrupted = False
        self._prompt_done = asyncio.Event()

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        async with serving_turn(spec, self.config):
            return await self._run(spec, recorder)

    async def _run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        run_dir = Path(spec.run_dir)
        try:
            proc = await start_agent(self.argv, cwd=spec.quest_root, env=agent_env(spec))
        except OSError as exc:
            return RunResult(ok=False, error=f"cannot start the ACP agent {self.argv[0]!r}: {exc.strerror or exc}")
        recorder.process_started(proc.pid, self.argv)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        client = TurnClient(spec, recorder)
        with open(run_dir / "acp.jsonl", "wb") as traffic, open(run_dir / "stderr.log", "wb") as err:
            stderr = asyncio.create_task(_copy(proc.stderr, err, recorder))
            # The SDK looks each of the agent's requests up on the client and answers
            # method_not_found for what it lacks (terminals, elicitation): this client
            # serves session updates, permissions and files only, not the whole protocol.
            peer = cast(acp.Client, client)
            conn = acp.connect_to_agent(peer, proc.stdin, proc.stdout, observers=[_Traffic(traffic, recorder)])
            self._conn = conn
            try:
                ok, error = await self._converse(conn, spec, client, recorder)
            except (ConnectionError, acp.RequestError) as exc:
                ok, error = False, _describe(exc)
            except BaseException:  # cancelled (the host is going away) or a bug: the agent goes too
                stderr.cancel()
                await kill_and_reap(proc)
                raise
            finally:
                client.settle()
                self._prompt_done.set()
            try:
                closed = await self._close_session(conn)
            finally:
                await conn.close()
            code = await self._end(proc, closed=closed)
            await stderr
        if not ok and not error.strip():
            error = "the agent failed"
        if not ok and code not in (0, None):
            error = f"{error}; {_tail(run_dir / 'stderr.log')}".strip("; ")
        return RunResult(ok=ok, exit_code=code, error="" if ok else error)

    async def interrupt(self) -> None:
        """Ask the agent to cancel the prompt (``session/cancel``) and wait for its answer;
        the scheduler bounds the wait, then signals the process group."""
        self._interrupted = True
        if self._conn is None or self._session_id is None or self._prompt_done.is_set():
            return
        with contextlib.suppress(ConnectionError):
            await self._conn.cancel(session_id=self._session_id)
        await self._prompt_done.wait()

    # -- the conversation -------------------------------------------------------------

    async def _converse(
        self, conn: Any, spec: TurnSpec, client: TurnClient, recorder: TurnRecorder
    ) -> tuple[bool, str]:
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=schema.ClientCapabilities(
                fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=False
            ),
            client_info=schema.Implementation(name="ds-events", title="ds-events runtime", version=_version()),
        )
        sessions = init.agent_capabilities.session_capabilities if init.agent_capabilities else None
        self._can_close = sessions is not None and sessions.close is not None
        recorder.touch()
        caps = init.agent_capabilities
        http = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
        session = await conn.new_session(cwd=spec.quest_root, mcp_servers=mcp_servers(spec, http=http))
        self._session_id = session.session_id
        recorder.touch()
        if spec.model:
            refused = await _select_model(conn, session, spec.model)
            if refused:
                return False, refused
        if self._interrupted:  # a pause arrived while the agent was starting
            return False, "interrupted before the prompt"
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(spec.prompt)])
        client.settle()
        if answer.usage is not None:
            recorder.add_usage(answer.usage.model_dump(exclude_none=True, exclude={"field_meta"}))
        else:
            recorder.add_usage(_quota_usage(answer.field_meta))
        ok, why = STOP_REASONS.get(answer.stop_reason, (False, f"stopReason {answer.stop_reason}"))
        if answer.stop_reason == "cancelled" and self._interrupted:
            why = "cancelled on request"
        return ok, why

    async def _close_session(self, conn: Any) -> bool:
        """``session/close`` when the agent offers it and the session is still its own to
        close (not after an interrupt: the scheduler ends the group then). Whether the
        agent answered it."""
        if not self._can_close or self._session_id is None or self._interrupted:
            return False
        try:
            await asyncio.wait_for(conn.close_session(session_id=self._session_id), timeout=CLOSE_TIMEOUT_SECONDS)
        except (TimeoutError, ConnectionError, acp.RequestError):
            return False
        return True

    async def _end(self, proc: asyncio.subprocess.Process, *, closed: bool) -> int | None:
        """Close the agent's stdin (an ACP agent may exit at EOF) and wait for it to exit;
        one that does not is signalled (TERM, then KILL), and whatever it left in its
        group goes too. The exit code, or None when the agent had to be signalled."""
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        code: int | None = None
        grace = CLOSED_EXIT_GRACE_SECONDS if closed else EXIT_GRACE_SECONDS
        try:
            code = await asyncio.wait_for(proc.wait(), timeout=grace)
        except TimeoutError:
            procs.signal_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout=self.config.kill_grace_seconds)
            except TimeoutError:
                stop_group(proc)
                await proc.wait()
        if procs.group_alive(proc.pid):
            procs.signal_group(proc.pid, signal.SIGKILL)
        return code


class TurnClient:
    """The client side of one turn's ACP connection: updates become turn events, the
    agent's permission and file requests get an unattended, quest-confined answer."""

    def __init__(self, spec: TurnSpec, recorder: TurnRecorder) -> None:
        self.spec = spec
        self.recorder = recorder
        self.root = Path(spec.quest_root).resolve()
        self._text: list[str] = []
        self._text_kind = ""  # "message" | "thought": what _text holds
        self._text_id = ""
        self._calls: dict[str, bool] = {}  # tool call id -> finished
        self._held: dict[str, Any] = {}  # tool call id -> its announcement, input still to come
        self._servers: dict[str, str] = {}  # tool call id -> our MCP server it calls, or ""

    def on_connect(self, conn: Any) -> None:
        pass

    # -- session/update ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        # Synchronous inside: the SDK runs each notification as a task, and a handler that
        # never suspends keeps them in arrival order.
        self.recorder.touch()
        kind = getattr(update, "session_update", "")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            which = "message" if kind == "agent_message_chunk" else "thought"
            message_id = getattr(update, "message_id", None) or ""
            if which != self._text_kind or (message_id and message_id != self._text_id):
                self.flush()
            self._text_kind, self._text_id = which, message_id or self._text_id
            self._text.append(_block_text(update.content))
        elif kind == "tool_call":
            self.flush()
            if update.raw_input == {} and update.status in (None, "pending"):
                self._held[update.tool_call_id] = update  # claude-agent-acp: the input follows
                return
            self._start_call(update)
            self._maybe_finish_call(update)
        elif kind == "tool_call_update":
            self.flush()
            held = update.tool_call_id in self._held
            if held and update.raw_input is None and update.status not in ("completed", "failed"):
                return  # still no input (claude-agent-acp's PostToolUse note): keep waiting
            if update.tool_call_id not in self._calls:
                self._start_call(update)
            self._maybe_finish_call(update)

    def settle(self) -> None:
        """At the turn's end: record the calls still held for their input, as announced,
        then the last joined chunks."""
        for call_id in list(self._held):
            self._start_call(self._held[call_id])
        self.flush()

    def flush(self) -> None:
        """Record the joined chunks (a whole message or thought) and start afresh."""
        text, kind, message_id = "".join(self._text), self._text_kind, self._text_id
        self._text, self._text_kind, self._text_id = [], "", ""
        if kind == "message":
            self.recorder.agent_message(text, message_id)
        elif kind == "thought":
            self.recorder.reasoning(text)

    def _start_call(self, update: Any) -> None:
        announced = self._held.pop(update.tool_call_id, None)
        if announced is not None:  # what the announcement said, updated by what came since
            fields = ("title", "kind", "raw_input", "content")
            update = announced.model_copy(update={f: getattr(update, f) for f in fields if getattr(update, f, None)})
        tool, server = tool_name(update.title or update.kind or "tool")
        if not server:
            tool, server = _name_from_call_id(update.tool_call_id) or (tool, server)
        arguments = _arguments(update.raw_input, tool)
        if arguments is None and server:
            # Gemini CLI sends no rawInput: an MCP call's content is its arguments as JSON.
            arguments = _json_value(_tool_content(update.content), objects_only=True)
        self._calls[update.tool_call_id] = False
        self._servers[update.tool_call_id] = server
        self.recorder.tool_call(update.tool_call_id, tool, arguments, server=server)

    def _maybe_finish_call(self, update: Any) -> None:
        if update.status not in ("completed", "failed") or self._calls.get(update.tool_call_id):
            return
        self._calls[update.tool_call_id] = True
        if update.raw_output is not None:
            output = _output(update.raw_output)
            if self._servers.get(update.tool_call_id):  # claude-agent-acp: our JSON as text
                output = _json_value(output)
        else:
            output = _tool_content(update.content)
            if self._servers.get(update.tool_call_id):  # our servers answer JSON text
                output = _json_value(output)
        self.recorder.tool_result(update.tool_call_id, update.status == "completed", output)

    # -- requests from the agent ------------------------------------------------------

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        """Unattended: pick the agent's broadest "allow" option; none offered is a refusal.
        A call first heard of here (Gemini CLI announces a call that needs approval only
        in the request) is recorded now, before its result."""
        self.recorder.touch()
        if getattr(tool_call, "tool_call_id", None) and tool_call.tool_call_id not in self._calls:
            # Also a call held for its input: the request carries it (claude-agent-acp).
            self.flush()
            self._start_call(tool_call)
        for wanted in ("allow_always", "allow_once"):
            for option in options:
                if option.kind == wanted:
                    chosen = schema.AllowedOutcome(option_id=option.option_id, outcome="selected")
                    return schema.RequestPermissionResponse(outcome=chosen)
        return schema.RequestPermissionResponse(outcome=schema.DeniedOutcome(outcome="cancelled"))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **_: Any
    ) -> Any:
        target = self._inside(path, writing=False)
        try:
            text = await asyncio.to_thread(target.read_text, encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise acp.RequestError.resource_not_found(path) from None
        except OSError as exc:
            raise _refused("unreadable", path, exc.strerror or str(exc)) from None
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : start + limit if limit is not None else None])
        return schema.ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> Any:
        target = self._inside(path, writing=True)
        await asyncio.to_thread(_write_atomically, target, content)
        self.recorder.touch()
        return schema.WriteTextFileResponse()

    def _inside(self, path: str, *, writing: bool) -> Path:
        """``path`` resolved, when it lies in the quest (and, to write, outside ``.ds``
        and ``.git``); anything else is refused with a structured error."""
        raw = Path(path)
        if not raw.is_absolute():
            raise _refused("relative_path", path, "ACP paths are absolute")
        target = raw.resolve()
        if not target.is_relative_to(self.root):
            raise _refused("outside_quest", path, f"only files under {self.root} are served")
        if writing:
            first = target.relative_to(self.root).parts[:1]
            if first and first[0] in _WRITE_REFUSED:
                raise _refused("protected_path", path, f"{first[0]}/ is the runtime's, not the agent's")
        return target


# -- helpers ----------------------------------------------------------------------------


async def _select_model(conn: Any, session: Any, model: str) -> str:
    """Choose ``model`` through the session's model option; the reason it could not, or ""."""
    for option in session.config_options or []:
        if getattr(option, "category", None) != "model" or getattr(option, "type", "") != "select":
            continue
        values = [v for group in option.options for v in (getattr(group, "options", None) or [group])]
        match = next((v.value for v in values if model in (v.value, v.name)), None)
        if match is None:
            offered = ", ".join(v.value for v in values)
            return f"the agent does not offer model {model!r} (it offers: {offered})"
        if match != option.current_value:
            await conn.set_config_option(config_id=option.id, session_id=session.session_id, value=match)
        return ""
    return ""  # the agent has no model choice: it runs its own default


def _quota_usage(meta: Any) -> dict[str, Any]:
    """The turn's tokens from an answer without ``usage``: Gemini CLI 0.61 reports them in
    ``_meta.quota.token_count`` (``input_tokens``, ``output_tokens``)."""
    quota = meta.get("quota") if isinstance(meta, dict) else None
    counts = quota.get("token_count") if isinstance(quota, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {k: v for k, v in counts.items() if k in ("input_tokens", "output_tokens") and isinstance(v, int)}


class _Traffic:
    """Keeps every JSON-RPC message, both ways, one JSON line each."""

    def __init__(self, out: Any, recorder: TurnRecorder) -> None:
        self.out = out
        self.recorder = recorder

    def __call__(self, event: Any) -> None:
        way = "in" if event.direction.value == "incoming" else "out"
        line = {"dir": way, "t": round(time.time(), 3), "msg": event.message}
        self.out.write((json.dumps(line, ensure_ascii=False, default=str) + "\n").encode())
        self.out.flush()
        self.recorder.touch()


def _refused(code: str, path: str, message: str) -> acp.RequestError:
    """A file request we do not serve: JSON-RPC invalid params with our stable code."""
    return acp.RequestError.invalid_params({"error": code, "path": path, "message": message})


def _name_from_call_id(call_id: str) -> tuple[str, str] | None:
    """``(tool, server)`` of one of our tools from a Gemini CLI call id
    (``mcp_bash_exec_bash_exec__<n>``: its declared name ``mcp_<server>_<tool>`` first),
    for a call whose title does not say (Gemini titles a call with a ``command`` argument
    by the command); None when the id names none of ours."""
    declared, found, _ = call_id.partition("__")
    if not found or not declared.startswith("mcp_"):
        return None
    rest = declared.removeprefix("mcp_")
    for server in sorted(MCP_NAMESPACES, key=len, reverse=True):  # bash_exec before a "bash"
        if rest.startswith(server + "_") and len(rest) > len(server) + 1:
            return f"{server}.{rest[len(server) + 1 :]}", server
    return None


def _json_value(value: Any, *, objects_only: bool = False) -> Any:
    """``value`` decoded when it is text holding JSON (an object, with ``objects_only``),
    else as it is."""
    if not isinstance(value, str):
        return None if objects_only else value
    try:
        decoded = json.loads(value)
    except ValueError:
        return None if objects_only else value
    if objects_only and not isinstance(decoded, dict):
        return None
    return decoded


def _arguments(raw_input: Any, tool: str) -> Any:
    """A call's arguments: codex-acp sends an MCP call's whole invocation
    (``{"server", "tool", "arguments"}``) as its ``rawInput``; the arguments are its part."""
    if isinstance(raw_input, dict) and set(raw_input) == {"server", "tool", "arguments"}:
        if tool == f"{raw_input['server']}.{raw_input['tool']}":
            return raw_input["arguments"]
    return raw_input


def _output(raw_output: Any) -> Any:
    """A call's output: an MCP ``CallToolResult`` (as codex-acp sends it in ``rawOutput``)
    is its structured content, else the JSON or text its content blocks hold, as the codex
    runner records it; a list of text blocks only (Claude Code's ``tool_result`` content,
    as claude-agent-acp sends it) is their text; anything else as the agent sent it."""
    if isinstance(raw_output, list) and raw_output and all(_is_text_block(b) for b in raw_output):
        return "\n".join(str(b["text"]) for b in raw_output)
    if not (isinstance(raw_output, dict) and isinstance(raw_output.get("content"), list) and "isError" in raw_output):
        return raw_output
    if raw_output.get("structuredContent") is not None:
        return raw_output["structuredContent"]
    text = "".join(str(c.get("text", "")) for c in raw_output["content"] if isinstance(c, dict) and c.get("type") == "text")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _is_text_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind == "resource_link":
        return f"[{block.name}]({block.uri})"
    return f"[{kind or 'content'}]"


def _tool_content(content: list[Any] | None) -> Any:
    parts: list[Any] = []
    for item in content or []:
        kind = getattr(item, "type", "")
        if kind == "content":
            parts.append(_block_text(item.content))
        elif kind == "diff":
            parts.append({"path": item.path, "new_text": item.new_text})
        elif kind == "terminal":
            parts.append({"terminal_id": item.terminal_id})
    if len(parts) == 1:
        return parts[0]
    return parts or None


def _write_atomically(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


async def _copy(stream: asyncio.StreamReader, out: Any, recorder: TurnRecorder) -> None:
    while chunk := await stream.read(65536):
        out.write(chunk)
        out.flush()
        recorder.touch()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, acp.RequestError):
        data = f": {json.dumps(exc.data, default=str)[:500]}" if exc.data else ""
        return f"the agent answered an error ({exc.code} {exc}){data}"
    return "the agent closed the connection"


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        return path.read_bytes()[-limit:].decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ds-events")
    except PackageNotFoundError:
        return "0"
