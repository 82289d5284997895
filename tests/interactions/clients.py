"""An in-process artifact MCP client (entered inside the test's own task: anyio cancel
scopes must not cross tasks, so this is a context manager rather than a fixture)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp

from ds_events.home import Home
from handlers.mcp import QuestBinding
from handlers.mcp.artifact import build_server

__all__ = ["artifact_client", "call"]


@asynccontextmanager
async def artifact_client(home: Home, quest_id: str = "q1") -> AsyncIterator[mcp.Client]:
    async with mcp.Client(build_server(QuestBinding(home=home.root, quest_id=quest_id))) as c:
        yield c


async def call(client: mcp.Client, tool: str, args: dict) -> dict:
    """Call ``tool`` and return its structured result, failing loudly on a tool error."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]
