"""What a namespace's tools get: :class:`ToolContext`, the server's lifespan state.

It holds the open quest and the namespace's own state (a :class:`NamespaceState`
dataclass each namespace defines: the memory stores, the sessions reconciled at start,
...). The quest opens in a background thread when the server starts, so the server
answers ``initialize`` at once; the first tool call waits for the opening if it is not
done. A failed opening is kept and reported by every call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import anyio.to_thread

from ds_events.errors import LogError
from ds_events.home import Home, Quest

from .binding import QuestBinding

__all__ = ["NamespaceState", "StateT", "OpenState", "ToolContext"]


class NamespaceState:
    """Base of a namespace's state: what its tools share, built once when the quest
    opens (in the opening thread) and closed when the server stops, before the quest."""

    def close(self) -> None:
        """Release what the state holds; nothing by default."""


StateT = TypeVar("StateT", bound=NamespaceState)
# A context only hands its state out, so one with a namespace's own state is a
# ToolContext[NamespaceState] too (what the call log and the dispatch take).
_StateT_co = TypeVar("_StateT_co", bound=NamespaceState, covariant=True)

# Builds a namespace's state from the quest just opened and the actor its events carry.
OpenState = Callable[[Quest, str], StateT]


class ToolContext(Generic[_StateT_co]):
    """The open quest and the namespace's state, for one server.

    :attr:`quest` and :attr:`state` wait for the background opening (or open the quest
    themselves, if nothing started the opening); ``async def`` tools wait through
    :meth:`quest_async` instead, off the loop.
    """

    def __init__(self, binding: QuestBinding, actor: str, open_state: OpenState[_StateT_co]) -> None:
        self.binding = binding
        self.actor = actor
        self._open_state = open_state
        self._quest: Quest | None = None
        self._state: _StateT_co | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def quest(self) -> Quest:
        return self._opened()[0]

    @property
    def state(self) -> _StateT_co:
        return self._opened()[1]

    @property
    def home(self) -> Home:
        return self.quest.home

    async def quest_async(self) -> Quest:
        """:attr:`quest` for ``async def`` tools: waits for the opening off the loop.
        Once it returns, :attr:`state` answers without waiting."""
        if self._quest is not None and self._state is not None:
            return self._quest
        return await anyio.to_thread.run_sync(lambda: self.quest)

    def warm_up(self) -> None:
        """Open the quest now; a failure is kept for the first tool call to report."""
        try:
            self._opened()
        except BaseException:
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._state is not None:
                self._state.close()
                self._state = None
            if self._quest is not None:
                self._quest.close()
                self._quest = None

    def _opened(self) -> tuple[Quest, _StateT_co]:
        with self._lock:
            if self._state is None and self._error is None:
                if self._closed:
                    raise LogError("the MCP server is shutting down")
                try:
                    if self._quest is None:
                        self._quest = self.binding.open(self.actor)
                    self._state = self._open_state(self._quest, self.actor)
                except BaseException as exc:  # every later call reports it
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._quest is not None and self._state is not None
            return self._quest, self._state
