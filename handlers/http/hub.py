"""Open quests and their live event fan-out.

The daemon keeps each quest it has served open (a :class:`Quest` with its in-memory
views), so a request catches the views up by the few new events instead of rereading
the log. For streams, ONE follower per quest reads the log's new bytes (appends by
this process wake it at once; other processes' are seen within the poll interval) and
hands each event to every subscriber's bounded buffer. A subscriber whose buffer is
full is dropped, never waited for: one slow client cannot stall the others or grow
memory without bound; it is told where to resume (see ``stream.py``).

Everything that may block (opening a quest, reading the log, git, a memory search that
waits for its SQLite index, an append that syncs) runs on the hub's worker threads
(:meth:`Hub.run`), never on the event loop that feeds every stream. A quest's log and
views are safe from several threads; its memory stores are not, so memory calls on one
quest take turns (:meth:`Hub.with_memory`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

from ds_events.errors import LogError
from ds_events.events import Event
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext

from .settings import DEFAULT_POLL_INTERVAL, DEFAULT_QUEUE_SIZE, DEFAULT_WORKERS

__all__ = ["Hub", "Subscription", "DEFAULT_WORKERS"]

T = TypeVar("T")
_CLOSE_WAIT = 30.0  # seconds shutdown waits for calls still running on worker threads


class Subscription:
    """One stream's buffer of live events (at most ``maxsize``)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.buffer: collections.deque[Event] = collections.deque()
        self.dropped = False  # the stream must end and resume (see ``reason``)
        self.reason = ""  # slow: the buffer overflowed; follower_stopped: the log's follower ended
        self.closed = False  # the daemon is shutting down
        self._wake = asyncio.Event()

    def offer(self, event: Event) -> bool:
        """Buffer ``event``; False (and dropped) when the buffer is full."""
        if self.dropped or self.closed:
            return False
        if len(self.buffer) >= self.maxsize:
            self.drop()  # its memory is released now, not when the client wakes
            return False
        self.buffer.append(event)
        self._wake.set()
        return True

    def drop(self, reason: str = "slow") -> None:
        """End this stream with a resume point (unless the daemon is closing it anyway)."""
        if not self.closed:
            self.dropped, self.reason = True, reason
            self.buffer.clear()
            self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait(self, timeout: float) -> None:
        """Until an event, a drop or a close, or ``timeout`` seconds."""
        if self.buffer or self.dropped or self.closed:
            return
        self._wake.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)


class _Follower:
    def __init__(self, quest: Quest, poll_interval: float) -> None:
        self.quest = quest
        self.subscribers: set[Subscription] = set()
        self.task = asyncio.create_task(self._run(quest.log.last_seq, poll_interval), name=f"follow:{quest.id}")

    async def _run(self, after: int, poll_interval: float) -> None:
        try:
            async for event in self.quest.log.follow(after, poll_interval=poll_interval):
                for sub in list(self.subscribers):
                    if not sub.offer(event):
                        self.subscribers.discard(sub)
        finally:
            # The follower stopped (the log was repaired under it, say): its streams end
            # with a resume point instead of waiting forever; resuming starts a new one.
            for sub in list(self.subscribers):
                sub.drop("follower_stopped")
            self.subscribers.clear()


class QuestHost(Protocol):
    """Something that hosts turns on the hub's quests (:class:`~ds_events.runners.fleet.Fleet`)."""

    async def let_go(self, quest_id: str) -> bool: ...

    def take_back(self, quest_id: str) -> None: ...


class Hub:
    """The daemon's open quests, the worker threads their calls run on, and one log
    follower per streamed quest."""

    def __init__(
        self,
        home: Home,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        workers: int = DEFAULT_WORKERS,
    ) -> None:
        self.home = home
        self.poll_interval = poll_interval
        self.queue_size = queue_size
        self._quests: dict[str, Quest] = {}
        self._memory: dict[str, MemoryContext] = {}
        self._followers: dict[str, _Follower] = {}
        self._subs: set[Subscription] = set()
        self.closing = False
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ds-http")
        self._running: set[concurrent.futures.Future[Any]] = set()
        # Guards the dicts below; a per-quest lock is held for as long as one quest opens
        # (a replay of its log) or one memory call runs, so other quests never wait.
        self._locks_guard = threading.Lock()
        self._opening: dict[str, threading.Lock] = {}
        self._memory_locks: dict[str, threading.Lock] = {}
        # What hosts turns on these quests in this process (``ds serve``'s Fleet): let go
        # of a quest before it is deleted (see :meth:`letting_go`).
        self.hosts: list[QuestHost] = []

    async def run(self, fn: Callable[..., T], /, *args: object) -> T:
        """``fn(*args)`` on a worker thread; the loop (every stream) goes on meanwhile.

        A call still running when the daemon shuts down is waited for (a bounded time)
        before the quests close under it, even if the request that made it is gone.
        A caller that is cancelled (its client went away) does not cancel the call: work
        handed over, an append say, runs to its end whether or not anyone waits for it.
        """
        try:
            future = self._executor.submit(functools.partial(fn, *args))
        except RuntimeError:  # closed: the quests are closing or closed
            raise LogError("the daemon is shutting down") from None
        self._running.add(future)
        future.add_done_callback(self._running.discard)
        return await asyncio.shield(asyncio.wrap_future(future))

    def quest(self, quest_id: str) -> Quest:
        """The open quest (opened on first use); unknown ids raise ``unknown_quest``.

        Blocking the first time (opening replays the log from a snapshot): call it
        through :meth:`run`. Two threads asking for a quest that is not open yet open
        it once.
        """
        q = self._quests.get(quest_id)
        if q is not None:
            return q
        with self._lock(self._opening, quest_id):
            q = self._quests.get(quest_id)
            if q is None:
                self.home.require_quest(quest_id)  # NotFound(unknown_quest); also checks the id's shape
                q = self._quests[quest_id] = self.home.open_quest(quest_id, actor="daemon")
        return q

    def with_memory(self, quest_id: str, fn: Callable[[MemoryContext], T]) -> T:
        """``fn`` over the quest's memory stores, one call per quest at a time.

        The stores are kept open like the quest (their search index is an SQLite file:
        opened once, not per request), and a store's connection and caches are not safe
        for two threads at once. Blocking: call it through :meth:`run`.
        """
        quest = self.quest(quest_id)
        with self._lock(self._memory_locks, quest_id):
            mem = self._memory.get(quest_id)
            if mem is None:
                mem = self._memory[quest_id] = MemoryContext(quest=quest, actor="daemon")
            return fn(mem)

    def adopt(self, quest: Quest) -> Quest:
        """Keep a quest this daemon created open."""
        with self._locks_guard:
            kept = self._quests.setdefault(quest.id, quest)
        if kept is not quest:
            quest.close()
        return kept

    @contextlib.asynccontextmanager
    async def letting_go(self, quest_id: str) -> AsyncIterator[None]:
        """Around a deletion: the hosts stop hosting the quest first (its scheduler ends
        before the quest goes, not on a closed handle after) and host it again after, if
        it is still or again there."""
        for host in self.hosts:
            await host.let_go(quest_id)
        try:
            yield
        finally:
            for host in self.hosts:
                host.take_back(quest_id)

    def forget(self, quest_id: str) -> None:
        """Let go of a deleted quest: close its memory stores and its handle (closing
        twice is a no-op) and end its follower, whose streams end with a resume point.
        Blocking: call it through :meth:`run`."""
        with self._locks_guard:
            quest = self._quests.pop(quest_id, None)
            mem = self._memory.pop(quest_id, None)
            follower = self._followers.pop(quest_id, None)
        if mem is not None:
            mem.close()
        if quest is not None:
            quest.close()
        if follower is not None:
            follower.task.get_loop().call_soon_threadsafe(follower.task.cancel)

    @contextlib.asynccontextmanager
    async def subscribe(self, quest_id: str) -> AsyncIterator[Subscription]:
        """A live subscription to the quest's events appended from now on."""
        quest = self.quest(quest_id)
        follower = self._followers.get(quest_id)
        if follower is None or follower.task.done():
            follower = self._followers[quest_id] = _Follower(quest, self.poll_interval)
        sub = Subscription(self.queue_size)
        if self.closing:
            sub.close()
        follower.subscribers.add(sub)
        self._subs.add(sub)
        try:
            yield sub
        finally:
            follower.subscribers.discard(sub)
            self._subs.discard(sub)

    @property
    def open_streams(self) -> int:
        """How many streams are open, over every quest."""
        return len(self._subs)

    def subscriber_count(self, quest_id: str) -> int:
        f = self._followers.get(quest_id)
        return len(f.subscribers) if f else 0

    def end_streams(self) -> None:
        """Shutdown, first step: every open stream ends cleanly (they see ``closed``)."""
        self.closing = True
        for sub in list(self._subs):
            sub.close()

    async def close(self) -> None:
        """Shutdown, last step: stop the followers, let running calls end, close the quests."""
        self.end_streams()
        if self._running:
            await asyncio.to_thread(concurrent.futures.wait, set(self._running), _CLOSE_WAIT)
        self._executor.shutdown(wait=False, cancel_futures=True)
        for f in self._followers.values():
            f.task.cancel()
        for f in self._followers.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await f.task
        self._followers.clear()
        for mem in self._memory.values():
            mem.close()
        self._memory.clear()
        for q in self._quests.values():
            q.close()
        self._quests.clear()

    def _lock(self, locks: dict[str, threading.Lock], quest_id: str) -> threading.Lock:
        with self._locks_guard:
            return locks.setdefault(quest_id, threading.Lock())
