"""Fixtures for memory tests: a memory context on quest ``q1`` and an in-process MCP client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import mcp
import pytest

from ds_events.home import Home, Quest


@pytest.fixture
async def client(home: Home, quest: Quest) -> AsyncIterator[mcp.Client]:
    # The client's context must be entered and exited in one task (anyio cancel
    # scopes), and pytest-asyncio runs fixture setup and teardown in different ones:
    # a helper task owns the context while the test calls tools through it.
    # Imported here, not at module level, so the service- and index-level memory tests
    # still load when the MCP adapter does not import (it is rewritten separately).
    from handlers.mcp import QuestBinding
    from handlers.mcp.memory import build_server

    server = build_server(QuestBinding.resolve(home=home.root, quest_id=quest.id))
    ready: asyncio.Future[mcp.Client] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def own() -> None:
        try:
            async with mcp.Client(server) as c:
                ready.set_result(c)
                await done.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    task = asyncio.create_task(own())
    try:
        yield await asyncio.wait_for(ready, 30)
    finally:
        done.set()
        await asyncio.wait_for(task, 30)


async def call(client: mcp.Client, tool: str, **args: Any) -> dict[str, Any]:
    """Call a tool that must succeed; returns its structured result."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content is not None
    return result.structured_content
