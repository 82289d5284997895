"""A namespace: its tools, registered by :meth:`Namespace.tool`, served by the SDK's
low-level :class:`~mcp.server.lowlevel.Server` through its two tool hooks.

``tools/list`` answers the listings the tools were declared with; ``tools/call`` runs
one (:meth:`ServiceTool.call`). The server's lifespan state is the namespace's
:class:`~.context.ToolContext`: it starts opening the quest in the background when the
server starts (so ``initialize`` is answered at once) and closes the namespace's state,
then the quest, when the server stops.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, ToolAnnotations

from ds_events.errors import NotFound

from .binding import QuestBinding
from .context import OpenState, StateT, ToolContext
from .errors import error_payload, error_result
from .tools import Handler, ServiceTool

__all__ = ["Namespace", "NamespaceServer", "serve_stdio"]

NamespaceServer = Server[ToolContext[StateT]]
"""The server of one namespace; its lifespan state is the namespace's ToolContext."""

H = TypeVar("H", bound=Handler)


class Namespace(Generic[StateT]):
    """The tools of one MCP namespace, bound to one quest.

    ``open_state(quest, actor)`` builds the namespace's state once, right after the quest
    opens, in the opening thread. ``serial=True`` runs the namespace's blocking tools one
    at a time.
    """

    def __init__(
        self,
        name: str,
        binding: QuestBinding,
        *,
        instructions: str,
        open_state: OpenState[StateT],
        serial: bool = False,
    ) -> None:
        self.name = name
        self.binding = binding
        self.instructions = instructions
        self.open_state = open_state
        self.actor = f"mcp:{name}"
        # One call at a time for namespaces whose state is not safe to share between
        # threads (an SQLite connection, lazily opened stores).
        self.serial = threading.Lock() if serial else None
        self.tools: dict[str, ServiceTool] = {}

    def tool(self, annotations: ToolAnnotations, *, name: str | None = None) -> Callable[[H], H]:
        """Register ``fn(tc: ToolContext[S], cmd: SomeCommand) -> SomeResult`` as a tool
        with ``annotations`` (:data:`~.tools.READ_ONLY` or :func:`~.tools.writes`).

        The command type comes from the annotation of the second parameter, the output
        schema from the return annotation, the description from the docstring.
        """

        def register(handler: H) -> H:
            tool = ServiceTool.of(handler, namespace=self.name, annotations=annotations, name=name, serial=self.serial)
            if tool.name in self.tools:
                raise ValueError(f"the {self.name} namespace has two tools named {tool.name!r}")
            self.tools[tool.name] = tool
            return handler

        return register

    def server(self) -> NamespaceServer[StateT]:
        tools = dict(self.tools)

        @asynccontextmanager
        async def lifespan(_server: NamespaceServer[StateT]) -> AsyncIterator[ToolContext[StateT]]:
            tc = ToolContext(self.binding, self.actor, self.open_state)
            opener = threading.Thread(target=tc.warm_up, name=f"open {self.binding.quest_id}", daemon=True)
            opener.start()
            try:
                yield tc
            finally:
                await anyio.to_thread.run_sync(opener.join)
                await anyio.to_thread.run_sync(tc.close)

        async def list_tools(_ctx: ServerRequestContext[ToolContext[StateT]], _params: PaginatedRequestParams | None) -> ListToolsResult:
            return ListToolsResult(tools=[tool.listing for tool in tools.values()])

        async def call_tool(ctx: ServerRequestContext[ToolContext[StateT]], params: CallToolRequestParams) -> CallToolResult:
            tool = tools.get(params.name)
            if tool is None:
                unknown = NotFound(f"no tool {params.name!r} in the {self.name} namespace: see tools/list",
                                   code="unknown_tool", tool=params.name, tools=list(tools))  # fmt: skip
                return error_result(error_payload(unknown))
            return await tool.call(ctx.lifespan_context, params.arguments or {})

        return Server(
            f"ds-events-{self.name}",
            instructions=self.instructions,
            lifespan=lifespan,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )


async def serve_stdio(server: NamespaceServer[StateT]) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client goes."""
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
