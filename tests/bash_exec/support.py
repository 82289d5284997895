"""Helpers for the bash_exec tests: bounded waiting and looking at real processes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import mcp

from ds_events.home import Quest
from handlers.mcp.bash_exec import build_server
from handlers.mcp.common import QuestBinding
from tests.helpers import tool_error

__all__ = ["wait_until", "group_members", "call", "call_error", "client_for", "bash_events"]


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def group_members(pgid: int) -> list[int]:
    """Pids (zombies included) whose process group is ``pgid``, from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        if int(fields[2]) == pgid:
            found.append(int(name))
    return found


def client_for(quest: Quest) -> mcp.Client:
    """An in-process MCP client of a bash_exec server bound to ``quest``."""
    return mcp.Client(build_server(QuestBinding(home=quest.home.root, quest_id=quest.id)))


async def call(client: mcp.Client, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("bash_exec", args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    return result.structured_content  # type: ignore[return-value]


async def call_error(client: mcp.Client, **args: Any) -> dict[str, Any]:
    return tool_error(await client.call_tool("bash_exec", args))


def bash_events(quest: Quest, session_id: str | None = None) -> list[Any]:
    events = [e for e in quest.log.read() if e.type.startswith("bash.")]
    return [e for e in events if session_id is None or e.session_id == session_id]
