"""Plumbing every MCP namespace shares.

- :class:`QuestBinding`: which quest a server works on, from flags or the environment
  (``DS_HOME`` + ``DS_QUEST_ID``, or ``DS_QUEST_ROOT``).
- :func:`new_server`: an ``MCPServer`` whose lifespan opens the quest once and hands a
  :class:`ToolContext` to every tool through the lifespan context (no module globals).
- :func:`tool_errors`: service errors become ``ToolError``s whose text is a JSON object
  with a stable ``error`` code, so the model can read and correct them.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ds_events.events import EventDecodeError
from ds_events.home import Home, Quest
from ds_events.log import LogError
from ds_events.errors import Invalid, ServiceError

__all__ = ["QuestBinding", "ToolContext", "new_server", "tool_context", "tool_errors", "error_payload"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class QuestBinding:
    """The quest an MCP server acts on."""

    home: Path
    quest_id: str | None = None
    quest_root: Path | None = None

    @classmethod
    def resolve(
        cls,
        *,
        home: str | os.PathLike[str] | None = None,
        quest_id: str | None = None,
        quest_root: str | os.PathLike[str] | None = None,
        environ: dict[str, str] | None = None,
    ) -> QuestBinding:
        """Flags win over the environment; a quest id or a quest root is required."""
        env = os.environ if environ is None else environ
        quest_id = quest_id or env.get("DS_QUEST_ID") or None
        root = quest_root or env.get("DS_QUEST_ROOT") or None
        home_path = Path(home or env.get("DS_HOME") or Home().root).expanduser()
        if quest_id is None and root is None:
            raise Invalid(
                "no quest given: set DS_QUEST_ID (with DS_HOME) or DS_QUEST_ROOT, or pass --quest", code="no_quest"
            )
        return cls(home=home_path, quest_id=quest_id, quest_root=Path(root).expanduser() if root else None)

    def open(self, actor: str) -> Quest:
        if self.quest_root is not None:
            return Quest.at(self.quest_root, actor=actor)
        assert self.quest_id is not None
        return Home(self.home).open_quest(self.quest_id, actor=actor)


@dataclass
class ToolContext:
    """What a namespace's tools get: the open quest and room for namespace state."""

    binding: QuestBinding
    quest: Quest
    actor: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def home(self) -> Home:
        return self.quest.home


def new_server(
    name: str,
    binding: QuestBinding,
    *,
    instructions: str,
    setup: Callable[[ToolContext], Awaitable[None] | None] | None = None,
) -> MCPServer[ToolContext]:
    """An MCP server for namespace ``name`` bound to one quest.

    The quest is opened when the server starts (so a bad binding fails at once, before
    any tool call) and closed when it stops. ``setup`` may add namespace state to the
    context's ``extra``.
    """
    actor = f"mcp:{name}"

    @asynccontextmanager
    async def lifespan(_server: MCPServer[ToolContext]) -> AsyncIterator[ToolContext]:
        quest = binding.open(actor)
        ctx = ToolContext(binding=binding, quest=quest, actor=actor)
        try:
            if setup is not None:
                maybe = setup(ctx)
                if maybe is not None:
                    await maybe
            yield ctx
        finally:
            quest.close()

    return MCPServer(name=f"ds-events-{name}", instructions=instructions, lifespan=lifespan)


def tool_context(ctx: Context) -> ToolContext:  # type: ignore[type-arg]
    """The :class:`ToolContext` of the server handling this call."""
    return ctx.request_context.lifespan_context  # type: ignore[no-any-return]


def error_payload(exc: ServiceError) -> str:
    return json.dumps(exc.to_dict(), ensure_ascii=False, default=str)


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Map domain errors to ``ToolError`` with a JSON body ``{"error": code, "message": ...}``."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except ToolError:
            raise
        except ServiceError as exc:
            raise ToolError(error_payload(exc)) from exc
        except (LogError, EventDecodeError) as exc:
            raise ToolError(json.dumps({"error": "log_unavailable", "message": f"{exc}; run `ds verify`"})) from exc

    return wrapper
