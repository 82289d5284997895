"""Plumbing every MCP namespace shares.

- :class:`QuestBinding`: which quest a server works on, from flags or the environment
  (``DS_HOME`` + ``DS_QUEST_ID``, or ``DS_QUEST_ROOT`` inside ``DS_HOME``).
- :class:`Namespace`: the tools of one namespace, each declared as a handler
  ``(ToolContext, Command) -> Result``. A tool's input schema is its command's JSON
  schema (every default said in the parameter's description, because the Codex CLI
  strips ``default`` before the model sees a schema), its output schema is its result's.
  Arguments are decoded by :func:`ds_events.services.commands.decode_command`, so an
  unknown, missing or mistyped argument gets our structured error, never the SDK's
  validation dump. A plain ``def`` handler runs in a worker thread (it may take the
  log's lock, sync, run git or SQLite), an ``async def`` one on the loop.
- Errors: every failure reaches the model as a JSON object ``{"error": code,
  "message": ...}`` (:func:`error_payload`).
- Every call, refused ones included, is logged with its arguments and outcome through
  :mod:`ds_events.services.tool_calls` (a ``tool.call_finished`` after a quick call; a
  ``tool.call_started`` first for a call that may run long, see :data:`LONG_RUNNING`).

The quest is opened in the background when the server starts, so the server answers
``initialize`` at once; the first tool call waits for the opening if it is not done.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_origin, get_type_hints

import anyio.to_thread
import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from mcp.types import CallToolResult, TextContent

from ds_events.errors import DiskFull, Invalid, LogError, LogUnavailable, ServiceError
from ds_events.events import EventDecodeError
from ds_events.home import Home, Quest, validate_quest_id
from ds_events.services import tool_calls
from ds_events.services.commands import Command, decode_command, printable

__all__ = [
    "QuestBinding",
    "ToolContext",
    "Namespace",
    "error_payload",
    "input_schema",
    "output_schema",
]


@dataclass(frozen=True)
class QuestBinding:
    """The quest an MCP server acts on."""

    home: Path
    quest_id: str

    @classmethod
    def resolve(
        cls,
        *,
        home: str | os.PathLike[str] | None = None,
        quest_id: str | None = None,
        quest_root: str | os.PathLike[str] | None = None,
        environ: dict[str, str] | None = None,
    ) -> QuestBinding:
        """Flags win over the environment; a quest id or a quest root is required.

        A quest root must be ``<home>/quests/<id>`` of the home in force (so global memory
        and config stay in that home), and a quest id given beside a root must name it.
        """
        env = os.environ if environ is None else environ
        quest_id = quest_id or env.get("DS_QUEST_ID") or None
        root = quest_root or env.get("DS_QUEST_ROOT") or None
        home_path = Path(home or env.get("DS_HOME") or Home().root).expanduser()
        if quest_id is None and root is None:
            raise Invalid("no quest given: set DS_QUEST_ID (with DS_HOME) or DS_QUEST_ROOT, or pass --quest", code="no_quest")
        if root is not None:
            real_root = Path(root).expanduser().resolve()
            quests = (home_path / "quests").resolve()
            if real_root.parent != quests:
                raise Invalid(
                    f"quest root {root} is not a quest of the home {home_path} (expected {quests}/<quest id>): "
                    "set DS_HOME to the home that holds it",
                    code="quest_outside_home",
                )
            if quest_id is not None and quest_id != real_root.name:
                raise Invalid(
                    f"DS_QUEST_ID={quest_id!r} and DS_QUEST_ROOT={root} name different quests: give one of them",
                    code="conflicting_quest",
                )
            quest_id = real_root.name
        assert quest_id is not None
        return cls(home=home_path, quest_id=validate_quest_id(quest_id))

    def check(self) -> None:
        """Fail now, cheaply and with a clear message, if the quest does not exist."""
        Home(self.home).require_quest(self.quest_id)

    def open(self, actor: str) -> Quest:
        # A server started for a turn (the runner sets DS_RUN_ID) ties its events to it.
        return Home(self.home).open_quest(self.quest_id, actor=actor, run_id=os.environ.get("DS_RUN_ID") or None)


class ToolContext:
    """What a namespace's tools get: the open quest and room for namespace state.

    The quest opens in a background thread when the server starts; :attr:`quest` waits
    for it (or opens it, if nothing started the opening). A failed opening is kept and
    reported by every call.
    """

    def __init__(self, binding: QuestBinding, actor: str, setup: Callable[[ToolContext], None] | None = None) -> None:
        self.binding = binding
        self.actor = actor
        self.extra: dict[str, Any] = {}
        self._setup = setup
        self._quest: Quest | None = None
        self._error: BaseException | None = None
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.RLock()  # re-entrant: setup reads tc.quest
        self._closed = False

    @property
    def quest(self) -> Quest:
        with self._lock:
            if self._quest is None and self._error is None:
                if self._closed:
                    raise LogError("the MCP server is shutting down")
                try:
                    self._quest = self.binding.open(self.actor)
                    if self._setup is not None:
                        self._setup(self)
                except BaseException as exc:  # noqa: BLE001 - every later call reports it
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._quest is not None
            return self._quest

    @property
    def home(self) -> Home:
        return self.quest.home

    async def quest_async(self) -> Quest:
        """:attr:`quest` for ``async def`` tools: waits for the opening off the loop."""
        if self._quest is not None:
            return self._quest
        return await anyio.to_thread.run_sync(lambda: self.quest)

    def on_close(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` when the server stops (before the quest closes)."""
        self._closers.append(closer)

    def warm_up(self) -> None:
        """Open the quest now; a failure is kept for the first tool call to report."""
        try:
            self.quest  # noqa: B018 - opening is the point
        except BaseException:  # noqa: BLE001
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for closer in reversed(self._closers):
                closer()
            self._closers.clear()
            if self._quest is not None:
                self._quest.close()
                self._quest = None


Handler = Callable[..., Any]

# Calls that may take long enough for a follower to want to see them in progress:
# (namespace, tool) -> does this call (by its raw arguments) wait on something?
LONG_RUNNING: dict[tuple[str, str], Callable[[dict[str, Any]], bool]] = {
    ("bash_exec", "bash_exec"): lambda args: args.get("mode") == "await"
    or (args.get("mode") == "kill" and bool(args.get("wait"))),
}


class Namespace:
    """The tools of one MCP namespace, bound to one quest.

    ``setup(tc)`` runs once, right after the quest opens, in the opening thread: it may
    add namespace state to ``tc.extra`` and register closers with ``tc.on_close``.
    ``serial=True`` runs the namespace's blocking tools one at a time.
    """

    def __init__(
        self,
        name: str,
        binding: QuestBinding,
        *,
        instructions: str,
        setup: Callable[[ToolContext], None] | None = None,
        serial: bool = False,
    ) -> None:
        self.name = name
        # One call at a time for namespaces whose state is not safe to share between
        # threads (an SQLite connection, lazily opened stores).
        self.serial = threading.Lock() if serial else None
        self.binding = binding
        self.instructions = instructions
        self.setup = setup
        self.actor = f"mcp:{name}"
        self.tools: list[ServiceTool] = []

    def tool(self, fn: Handler | None = None, *, name: str | None = None) -> Any:
        """Register ``fn(tc: ToolContext, cmd: SomeCommand) -> SomeResult`` as a tool.

        The command type comes from the annotation of the second parameter, the output
        schema from the return annotation, the description from the docstring.
        """

        def register(handler: Handler) -> Handler:
            self.tools.append(ServiceTool.of(handler, name=name, serial=self.serial, namespace=self.name))
            return handler

        return register(fn) if fn is not None else register

    def server(self) -> MCPServer[ToolContext]:
        namespace = self

        @asynccontextmanager
        async def lifespan(_server: MCPServer[ToolContext]) -> AsyncIterator[ToolContext]:
            tc = ToolContext(binding=namespace.binding, actor=namespace.actor, setup=namespace.setup)
            opener = threading.Thread(target=tc.warm_up, name=f"open {namespace.binding.quest_id}", daemon=True)
            opener.start()
            try:
                yield tc
            finally:
                await anyio.to_thread.run_sync(opener.join)
                await anyio.to_thread.run_sync(tc.close)

        return MCPServer(
            name=f"ds-events-{self.name}", instructions=self.instructions, lifespan=lifespan, tools=list(self.tools)
        )


class ServiceTool(Tool):
    """A tool whose arguments are a :class:`Command` and whose answer is a Struct."""

    command: Any = None
    handler: Any = None
    result_schema: dict[str, Any] | None = None
    serial: Any = None  # a lock the blocking handler runs under, or None
    namespace: str = ""

    @classmethod
    def of(
        cls, handler: Handler, *, name: str | None = None, serial: threading.Lock | None = None, namespace: str = ""
    ) -> ServiceTool:
        hints = get_type_hints(handler)
        params = list(inspect.signature(handler).parameters)
        if len(params) != 2:
            raise TypeError(f"tool {handler.__name__} must take (tc, command)")
        command = hints.get(params[1])
        if not (isinstance(command, type) and issubclass(command, Command)):
            raise TypeError(f"tool {handler.__name__}: annotate its second parameter with a Command type")
        returns = hints.get("return")

        return cls(
            fn=_placeholder,
            name=name or handler.__name__,
            description=inspect.cleandoc(handler.__doc__ or ""),
            parameters=input_schema(command),
            fn_metadata=_placeholder_metadata(),
            is_async=inspect.iscoroutinefunction(handler),
            command=command,
            handler=handler,
            result_schema=output_schema(returns, description=_returns_paragraph(handler.__doc__ or "")),
            serial=serial,
            namespace=namespace,
        )

    @property
    def output_schema(self) -> dict[str, Any] | None:  # type: ignore[override]
        return self.result_schema

    def _call_blocking(self, tc: ToolContext, cmd: Command) -> Any:
        if self.serial is None:
            return self.handler(tc, cmd)
        with self.serial:
            return self.handler(tc, cmd)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        tc: ToolContext = context.request_context.lifespan_context
        log = _CallLog(tc, self.namespace, self.name, arguments)
        long = LONG_RUNNING.get((self.namespace, self.name))
        if long is not None and isinstance(arguments, dict) and long(arguments):
            await log.start()
        try:
            cmd = decode_command(self.command, arguments)
            if self.is_async:
                result = await self.handler(tc, cmd)
            else:
                result = await anyio.to_thread.run_sync(self._call_blocking, tc, cmd)
        except ToolError:
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise  # cancellation and the like are not the model's business
            payload = error_payload(exc, tool=self.name)
            await log.finish(error=payload)
            raise ToolError(json.dumps(payload, ensure_ascii=False, default=str)) from exc
        data = msgspec.to_builtins(result)
        await log.finish(result=data)
        text = json.dumps(data, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


class _CallLog:
    """One tool call's record in the quest's log, through the tool_calls service.

    Logging never changes the call's answer: when it cannot be written (the quest did not
    open, the disk is full) the call's own result or error still reaches the caller and
    the reason goes to stderr.
    """

    def __init__(self, tc: ToolContext, namespace: str, tool: str, arguments: Any) -> None:
        self.tc, self.namespace, self.tool = tc, namespace, tool
        # A refused call's record keeps what was asked, lone surrogates escaped (the log
        # is UTF-8: as sent, the record could not be written).
        self.arguments = _storable(arguments if isinstance(arguments, dict) else {"_arguments": arguments})
        self.call_id = tool_calls.new_call_id()
        self.started = False
        self.t0 = time.monotonic()

    async def start(self) -> None:
        def write(quest: Quest) -> None:
            tool_calls.start_call(
                quest, call_id=self.call_id, namespace=self.namespace, tool=self.tool, arguments=self.arguments
            )
            self.started = True

        await self._write(write)

    async def finish(self, *, result: Any = None, error: dict[str, Any] | None = None) -> None:
        duration_ms = (time.monotonic() - self.t0) * 1000

        def write(quest: Quest) -> None:
            tool_calls.finish_call(
                quest, call_id=self.call_id, namespace=self.namespace, tool=self.tool, arguments=self.arguments,
                started=self.started, result=result, error=error, duration_ms=duration_ms,
            )  # fmt: skip

        await self._write(write)

    async def _write(self, write: Callable[[Quest], None]) -> None:
        def run() -> None:
            try:
                quest = self.tc.quest
            except BaseException:  # noqa: BLE001 - the call itself reports why the quest is missing
                return
            try:
                write(quest)
            except Exception as exc:  # noqa: BLE001 - see the class docstring
                print(f"ds-events: could not log the {self.namespace}.{self.tool} call: {exc}", file=sys.stderr)

        await anyio.to_thread.run_sync(run)


def _storable(value: Any) -> Any:
    """``value`` with every string (names too) made encodable by :func:`printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k) if isinstance(k, str) else k: _storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable(v) for v in value]
    return value


def _placeholder() -> None:  # the SDK's Tool wants a function; ours is `handler`
    return None


@functools.cache
def _placeholder_metadata() -> Any:
    # The SDK builds two pydantic models per function it describes; every tool of ours
    # shares this one placeholder (its arguments are decoded by msgspec, not by these
    # models), so building them once instead of once per tool saves most of the time a
    # namespace takes to register its tools (about 10 ms a tool).
    return func_metadata(_placeholder)


def error_payload(exc: BaseException, *, tool: str = "") -> dict[str, Any]:
    """The JSON object a caller sees for ``exc``: a stable code and a message."""
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


def input_schema(command: type[Command]) -> dict[str, Any]:
    """The command's JSON schema as a tool's input schema, with every default spelled out
    in its parameter's description."""
    schema = _inline(msgspec.json.schema(command))
    _restore_extra_schemas(command, schema)
    for prop in schema.get("properties", {}).values():
        if "default" in prop:
            value = json.dumps(prop["default"], ensure_ascii=False)
            text = prop.get("description", "").rstrip()
            # Said unless the text already names the default with its value.
            if not ("default" in text.lower() and value.strip('"') in text):
                prop["description"] = f"{text} Default: {value}.".strip()
    return schema


def output_schema(result: Any, *, description: str = "") -> dict[str, Any] | None:
    """The JSON schema of a result type: a Struct's or a TypedDict's own; for a plain
    ``dict`` an object schema described by ``description`` (a tool must declare an output
    schema, and a client must be told its answer is an object); None for anything else."""
    if isinstance(result, type) and (issubclass(result, msgspec.Struct) or hasattr(result, "__total__")):
        return _inline(msgspec.json.schema(result))
    if result is dict or get_origin(result) is dict:
        said = description or "A JSON object; its fields are listed in the tool's description."
        return {"type": "object", "description": said, "additionalProperties": True}
    return None


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec's ``{"$ref": ..., "$defs": ...}`` with the referenced object at the top."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    defs = dict(schema.get("$defs", {}))
    top = dict(defs.pop(ref.rsplit("/", 1)[1]))
    if defs:
        top["$defs"] = defs
    return top


def _restore_extra_schemas(command: type[Command], schema: dict[str, Any]) -> None:
    """Put back each field's ``Meta(extra_json_schema=...)``: msgspec drops the ``anyOf``
    of an optional field's extra schema in favour of its own, so ``list[dict] | None``
    described in detail came out as ``{"type": "object"}`` items of unknown shape."""
    props = schema.get("properties", {})
    for f in msgspec.structs.fields(command):
        for meta in getattr(f.type, "__metadata__", ()):
            extra = getattr(meta, "extra_json_schema", None)
            if isinstance(meta, msgspec.Meta) and extra and f.encode_name in props:
                props[f.encode_name].update(extra)


def _returns_paragraph(doc: str) -> str:
    """The docstring's paragraph that says what comes back ("Returns: ..."), on one line."""
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        at = paragraph.find("Returns")
        if at >= 0:
            said = paragraph[at:].split("Example")[0]  # the examples are the description's
            return " ".join(said.split())
    return ""
