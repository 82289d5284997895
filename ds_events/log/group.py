"""Group commit: appends in flight at the same time share one write and one sync.

Both flavours talk to the log only through :class:`CommitTarget` — write some batches
under the append lock (blocking, or only if that needs no waiting), sync through an
offset, say that appends were acknowledged — so they know nothing of its files, locks
or tail state.

Threads use a leader/follower queue (:class:`ThreadGroupCommit`). Asyncio appends
(:class:`AsyncGroupCommit`) are written by a flusher task on the loop (when the lock is
free without waiting) and synced by one thread per log, so the next group is encoded
and written while the last one syncs. How far that goes is bounded by the disk:
``bench/log_group_commit.py`` prints the bound next to the figure.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LogError

if TYPE_CHECKING:
    import asyncio  # at run time only the coroutines need it, and they run on a loop

__all__ = ["CommitTarget", "ThreadGroupCommit", "AsyncGroupCommit", "ASYNC_GROUP"]

ASYNC_GROUP = 512  # most events one asyncio group commit encodes on the loop thread

Batches = list[list[Any]]
# Each batch as stored (or the exception that refused that batch alone), and the offset
# to sync through before acknowledging (0: none).
Written = tuple[list[Any], int]


class CommitTarget(Protocol):
    """What group commit needs from a log."""

    path: str
    policy: str  # "always" | "group" | "never"

    def write(self, batches: Batches) -> Written:
        """Under the append lock (waiting for it): write ``batches`` with one write,
        unsynced. Raises if the log cannot be appended to."""
        ...

    def try_write(self, batches: Batches) -> Written | None:
        """Like :meth:`write` if that needs no waiting (lock free, nothing to catch up
        with), else None having changed nothing. Called on an event loop's thread."""
        ...

    def sync_through(self, end: int) -> None:
        """Return once the log's first ``end`` bytes are on disk (raises LogError if not)."""
        ...

    def acknowledged(self) -> None:
        """Appends were acknowledged: wake whoever follows the log. Any thread."""
        ...


class ThreadGroupCommit:
    """Leader/follower group commit across the threads of one process.

    The first appender to find no leader leads: it takes everything queued so far and
    writes it with one write. Before it syncs, it hands the lead to the oldest appender
    queued since, so the next group is written while this one syncs (the sync releases
    the GIL). Each waiting thread is woken once, by its own lock: when its group is
    durable, or when it must lead.
    """

    def __init__(self, target: CommitTarget) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._leader = False

    @property
    def leading(self) -> bool:
        """Whether some thread leads a group now."""
        return self._leader

    def queued(self) -> int:
        """How many appends wait to be taken into a group."""
        with self._lock:
            return len(self._queue)

    def append(self, events: list[Any]) -> list[Any]:
        """Append ``events`` as one batch within a group; returns them as stored."""
        me = _Pending(events)
        with self._lock:
            self._queue.append(me)
            me.lead = not self._leader
            self._leader = True
        if not me.lead:
            try:
                me.wake.acquire()
            except BaseException:  # interrupted (a signal): leave the queue, pass the lead on
                self._abandon(me)
                raise
            if not me.lead:
                if me.error is not None:
                    raise me.error
                return me.result
        with self._lock:
            batch, self._queue = self._queue, []
        target = self._target
        sync_to = 0
        try:
            try:
                results, sync_to = target.write([p.events for p in batch])
            finally:
                self._pass_lead()
            if sync_to:
                target.sync_through(sync_to)
            for p, r in zip(batch, results, strict=True):
                if isinstance(r, BaseException):  # that append alone was refused
                    p.error = r
                else:
                    p.result = r
        except BaseException as exc:  # the whole group failed: tell every member
            for p in batch:
                p.error = exc
        for p in batch:
            if p is not me:
                p.wake.release()
        if sync_to:
            target.acknowledged()
        if me.error is not None:
            raise me.error
        return me.result

    def _pass_lead(self) -> None:
        """The leader has written its group: wake the oldest queued appender to lead."""
        with self._lock:
            if self._queue:
                successor = self._queue[0]
                successor.lead = True
                successor.wake.release()
            else:
                self._leader = False

    def _abandon(self, me: _Pending) -> None:
        """A queued appender gives up waiting before its group was taken, if it can."""
        with self._lock:
            if me not in self._queue:
                return  # already taken into a group: it will be written regardless
            self._queue.remove(me)
            promoted = me.lead
        if promoted:  # the lead was passed to us and nobody holds it now
            self._pass_lead()


class _Pending:
    """One thread's append waiting in the group commit queue."""

    __slots__ = ("events", "result", "error", "lead", "wake")

    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self.result: list[Any] = []
        self.error: BaseException | None = None
        self.lead = False  # told to lead the next group rather than that it is done
        self.wake = threading.Lock()  # held until this append is done or must lead
        self.wake.acquire()


_Item = tuple[list[Any], "asyncio.Future[list[Any]]"]
_Acks = list[tuple["asyncio.Future[list[Any]]", list[Any]]]


class AsyncGroupCommit:
    """Asyncio group commit, pipelined: write one group while the last one syncs.

    Appends queue per event loop (futures belong to a loop). Each round of a loop's
    flusher takes every append queued so far (up to ``group_size`` events) and writes it
    with one write; the sync thread syncs whatever has been written and only then
    resolves the appenders' futures. So the next group is encoded and written while the
    last one syncs, and one sync covers every group written before it started.

    The write runs on the loop thread when that cannot block (``try_write``); otherwise
    (contention, catch-up, recovery) in the default executor.
    """

    def __init__(self, target: CommitTarget, *, group_size: int = ASYNC_GROUP) -> None:
        self._target = target
        self._group_size = group_size
        self._lock = threading.Lock()  # the loop queues, the sync thread's birth, closing
        self._queues: dict[asyncio.AbstractEventLoop, _LoopQueue] = {}
        self._sync_thread: _SyncThread | None = None
        self._closed = False

    def queued(self, loop: asyncio.AbstractEventLoop) -> int:
        """How many appends on ``loop`` wait to be written."""
        with self._lock:
            queue = self._queues.get(loop)
            return len(queue.pending) if queue is not None else 0

    def loops(self) -> list[asyncio.AbstractEventLoop]:
        """The loops that have appended through this group commit (and are not closed)."""
        with self._lock:
            return [loop for loop in self._queues if not loop.is_closed()]

    async def append(self, events: list[Any]) -> list[Any]:
        """Append ``events`` as one batch within a group; returns them as stored."""
        import asyncio  # loaded already: we run on its loop

        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop) or self._queue_for(loop)
        future: asyncio.Future[list[Any]] = loop.create_future()
        queue.pending.append((events, future))
        if queue.flusher is None:
            queue.flusher = loop.create_task(self._flush(queue))
        return await future

    def close(self) -> None:
        """Sync and acknowledge every group handed to the sync thread, then end it.

        Groups written afterwards are synced by their flusher directly.
        """
        with self._lock:
            self._closed = True
            thread = self._sync_thread
        if thread is not None:
            thread.stop()

    def _queue_for(self, loop: asyncio.AbstractEventLoop) -> _LoopQueue:
        with self._lock:
            for other in [other for other in self._queues if other.is_closed()]:
                del self._queues[other]  # what was queued there can never be written
            return self._queues.setdefault(loop, _LoopQueue())

    async def _flush(self, queue: _LoopQueue) -> None:
        import asyncio  # loaded already: we run on its loop

        loop = asyncio.get_running_loop()
        target = self._target
        try:
            while queue.pending:
                # Let every appender that is ready to run enqueue first: the group grows.
                await asyncio.sleep(0)
                batch = queue.take(self._group_size)
                if not batch:
                    continue
                batches = [events for events, _ in batch]
                try:
                    written = target.try_write(batches)
                    if written is None:
                        written = await loop.run_in_executor(None, target.write, batches)
                except BaseException as exc:
                    _settle([(fut, []) for _, fut in batch], exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                results, sync_to = written
                items = [(fut, stored) for (_, fut), stored in zip(batch, results, strict=True)]
                if target.policy == "never":
                    _settle(items, None, target)
                elif not self._hand_to_sync_thread(loop, items, sync_to):
                    # Closed meanwhile: durable only if the close synced past it.
                    try:
                        target.sync_through(sync_to)
                    except LogError as exc:
                        _settle(items, exc)
                    else:
                        _settle(items, None, target)
        finally:
            queue.flusher = None

    def _hand_to_sync_thread(self, loop: asyncio.AbstractEventLoop, items: _Acks, sync_to: int) -> bool:
        with self._lock:
            if self._closed:
                return False
            if self._sync_thread is None:
                self._sync_thread = _SyncThread(self._target)
            thread = self._sync_thread
        return thread.submit(loop, items, sync_to)


class _LoopQueue:
    """The asyncio appends of one event loop waiting for that loop's flusher task."""

    __slots__ = ("pending", "flusher")

    def __init__(self) -> None:
        self.pending: list[_Item] = []
        self.flusher: asyncio.Task[None] | None = None

    def take(self, most: int) -> list[_Item]:
        """The oldest appends still wanted, whole, up to ``most`` events (at least one).

        An append whose caller was cancelled before it was written is dropped.
        """
        count = 0
        for taken, (events, _) in enumerate(self.pending):
            count += len(events)
            if count > most and taken:
                batch, self.pending = self.pending[:taken], self.pending[taken:]
                break
        else:
            batch, self.pending = self.pending, []
        return [item for item in batch if not item[1].done()]


class _SyncThread:
    """Syncs what the asyncio group commit wrote, off the loop, and acknowledges it.

    The loop hands over each written group with one byte down a pipe. This thread
    blocks in ``read`` (without the GIL), then syncs once for every group handed over
    before it woke, and resolves those appends on their loops. Groups written while it
    syncs wait for the next round, so under load syncs run back to back and each covers
    everything written during the one before. A bare thread and a pipe, rather than the
    default executor, because the hand-off is on every group's critical path and costs a
    fraction of an executor round trip.
    """

    def __init__(self, target: CommitTarget) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, _Acks, int]] = []  # (loop, appends, sync to)
        self._stopping = False
        self._rfd, self._wfd = os.pipe()
        self._thread = threading.Thread(target=self._run, name=f"ds-log-sync {target.path}", daemon=True)
        self._thread.start()

    def submit(self, loop: asyncio.AbstractEventLoop, written: _Acks, sync_to: int) -> bool:
        """``written`` is in the file: resolve it on ``loop`` once the log is synced
        through ``sync_to``. False (and nothing taken) if the thread is stopping."""
        with self._lock:
            if self._stopping:
                return False
            self._waiting.append((loop, written, sync_to))
            os.write(self._wfd, b"s")
        return True

    def stop(self) -> None:
        """Sync and acknowledge whatever was handed over, then end the thread."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            os.write(self._wfd, b"q")
        self._thread.join()
        os.close(self._rfd)
        os.close(self._wfd)

    def _run(self) -> None:
        while True:
            try:
                wake = os.read(self._rfd, 4096)
            except InterruptedError:  # pragma: no cover - signal during read
                continue
            with self._lock:  # every group handed over so far was written before this sync
                batch, self._waiting = self._waiting, []
            if batch:
                error: BaseException | None = None
                try:
                    self._target.sync_through(max(sync_to for *_, sync_to in batch))
                except BaseException as exc:  # the appends may or may not be on disk: say so
                    error = exc
                self._acknowledge(batch, error)
            if b"q" in wake:
                return

    def _acknowledge(self, batch: list[tuple[asyncio.AbstractEventLoop, _Acks, int]], error: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, _Acks] = {}
        for loop, written, _sync_to in batch:
            by_loop.setdefault(loop, []).extend(written)
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, items, error, self._target)
            except RuntimeError:  # that loop is closed: nobody waits there any more
                pass


def _settle(items: _Acks, error: BaseException | None, target: CommitTarget | None = None) -> None:
    """Resolve waiting appenders with their stored events, or fail them all with ``error``.

    With ``target``, also tell it the appends were acknowledged (it wakes followers).
    """
    for fut, stored in items:
        if not fut.done():
            if error is not None:
                fut.set_exception(error)
            elif isinstance(stored, BaseException):  # that append alone was refused
                fut.set_exception(stored)
            else:
                fut.set_result(stored)
    if target is not None and error is None:
        target.acknowledged()
