"""One tool of a namespace: :class:`ServiceTool`, declared by a handler
``(ToolContext, Command) -> Result`` and what it does to the quest.

The handler says everything the listing shows: its name and docstring (the
description), its command type (the input schema: :func:`~.schema.input_schema`) and
its return type (the output schema). Its :class:`ToolAnnotations` say what a client may
assume: :data:`READ_ONLY` for a query (clients run it without asking), :func:`writes`
for a tool that changes the quest or the world.

A call decodes its arguments with :func:`ds_events.services.commands.decode_command`,
so an unknown, missing or mistyped argument gets our structured error, never the SDK's
validation dump. A plain ``def`` handler runs in a worker thread (it may take the log's
lock, sync, run git or SQLite), an ``async def`` one on the loop. Every call leaves its
record (:class:`~.calls.CallRecord`); every failure answers ``{"error": code,
"message": ...}`` (:mod:`.errors`).
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import anyio.to_thread
import msgspec
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations

from ds_events.services.commands import Command, decode_command

from .calls import CallRecord
from .context import NamespaceState, ToolContext
from .errors import error_payload, error_result
from .schema import input_schema, output_schema, returns_paragraph

__all__ = ["READ_ONLY", "writes", "Handler", "ServiceTool"]

READ_ONLY = ToolAnnotations(read_only_hint=True)
"""A query: it reads the quest and changes nothing (its own call record aside)."""


def writes(*, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """A tool that changes the quest or the world. ``destructive``: it may replace or
    remove what is there (not only add to it); ``idempotent``: calling it again with the
    same arguments changes nothing more."""
    return ToolAnnotations(read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent)


Handler = Callable[..., Any]


@dataclass(frozen=True)
class ServiceTool:
    """A tool whose arguments are a :class:`Command` and whose answer is a Struct."""

    namespace: str
    handler: Handler
    command: type[Command]
    listing: Tool  # what tools/list shows of it
    is_async: bool  # an ``async def`` handler runs on the loop, any other in a worker thread
    serial: threading.Lock | None  # a lock the blocking handler runs under, or None

    @property
    def name(self) -> str:
        return self.listing.name

    @classmethod
    def of(
        cls,
        handler: Handler,
        *,
        namespace: str,
        annotations: ToolAnnotations,
        name: str | None = None,
        serial: threading.Lock | None = None,
    ) -> ServiceTool:
        hints = get_type_hints(handler)
        params = list(inspect.signature(handler).parameters)
        if len(params) != 2:
            raise TypeError(f"tool {handler.__name__} must take (tc, command)")
        command = hints.get(params[1])
        if not (isinstance(command, type) and issubclass(command, Command)):
            raise TypeError(f"tool {handler.__name__}: annotate its second parameter with a Command type")
        doc = handler.__doc__ or ""
        listing = Tool(
            name=name or handler.__name__,
            description=inspect.cleandoc(doc),
            input_schema=input_schema(command),
            output_schema=output_schema(hints.get("return"), description=returns_paragraph(doc)),
            annotations=annotations,
        )
        return cls(
            namespace=namespace, handler=handler, command=command, listing=listing,
            is_async=inspect.iscoroutinefunction(handler), serial=serial,
        )  # fmt: skip

    async def call(self, tc: ToolContext[NamespaceState], arguments: dict[str, Any]) -> CallToolResult:
        """Run one call with ``arguments`` as received and answer it; never raises for
        what the caller or the quest got wrong."""
        record = CallRecord(tc, self.namespace, self.name, arguments)
        if record.long_running:
            await record.start()
        try:
            cmd = decode_command(self.command, arguments)
            if self.is_async:
                result = await self.handler(tc, cmd)
            else:
                result = await anyio.to_thread.run_sync(self._call_blocking, tc, cmd)
            data = msgspec.to_builtins(result)
        except Exception as exc:  # not BaseException: a cancellation is not the model's business
            payload = error_payload(exc, tool=self.name)
            await record.finish(error=payload)
            return error_result(payload)
        await record.finish(result=data)
        text = json.dumps(data, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def _call_blocking(self, tc: ToolContext[NamespaceState], cmd: Command) -> Any:
        if self.serial is None:
            return self.handler(tc, cmd)
        with self.serial:
            return self.handler(tc, cmd)
