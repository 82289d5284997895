"""Helpers for the bash_exec tests: bounded waiting and looking at real processes."""

from __future__ import annotations

import os
from typing import Any

import mcp

from ds_events.home import Quest
from ds_events.services import bash as service
from ds_events.services.bash.commands import GetSession, StartSession
from handlers.mcp import QuestBinding
from handlers.mcp.bash_exec import build_server
from tests.helpers import tool_error, wait_until

__all__ = [
    "wait_until",
    "group_members",
    "group_is_gone",
    "process_state",
    "waits_on_a_lock",
    "call",
    "call_error",
    "client_for",
    "bash_events",
    "start",
    "session_of",
]


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


def group_is_gone(pgid: int) -> bool:
    """True when no process at all, zombies included, is left in group ``pgid``.

    Both views must agree: ``/proc`` lists no member and the kernel refuses to signal
    the group (``killpg`` succeeds for a group that only holds zombies).
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return group_members(pgid) == []
    return False


def process_state(pid: int) -> str | None:
    """The state letter of ``pid`` in ``/proc`` (``"Z"`` for a zombie), None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()[0].decode()


def waits_on_a_lock(pid: int) -> bool:
    """Whether ``pid`` is blocked waiting for a file lock (a ``->`` line of /proc/locks)."""
    with open("/proc/locks") as f:
        return any(line.split()[1] == "->" and int(line.split()[5]) == pid for line in f)


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


def start(quest: Quest, command: str, **options: Any) -> service.Session:
    """Start ``command`` through the service, as a caller in the same process would."""
    return service.start(quest, StartSession(command=command, **options))


def session_of(quest: Quest, session_id: str) -> service.Session:
    return service.get_session(quest, GetSession(id=session_id))
