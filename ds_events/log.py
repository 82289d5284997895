"""The append-only, typed, hash-chained event log: one JSON line per event.

Several processes append to one log (the daemon, MCP servers, the CLI). An append takes
an exclusive ``flock`` on ``<log>.lock``, catches up with whatever other processes
appended since it last looked, assigns the next ``seq`` and the ``prev`` hash, writes
the whole batch with one ``write``, releases the lock, and syncs per the durability
policy before returning. Syncing outside the lock is safe because a sync covers every
byte written to the file before it, whoever wrote it: what is durable is always a prefix
of the log. Readers never take the lock: they only consume complete
(``\\n``-terminated) lines, so a write in progress elsewhere is invisible until it is
whole.

Group commit (policy ``group``) shares writes and syncs between appends in flight in one
process. Threads use a leader/follower queue; asyncio appends are written by a flusher
task on the loop (when the lock is free without waiting) and synced by one thread per
log, so the next group is encoded and written while the last one syncs. How far that
goes is bounded by the disk: ``bench/log_group_commit.py`` prints the bound next to
the figure.

A sparse index (``<log>.idx``: the byte offset of every ``INDEX_EVERY``-th seq, little
endian uint64) lets a read near the tail of a long log seek instead of scanning.
The index is a cache: it is checked on open and rebuilt when it does not match.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import os
import struct
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Literal

import msgspec

from .errors import LogError
from .events import Event, EventDecodeError, LogRecovered, decode_line, encode, new_event_id, new_event_ids, utc_now

__all__ = ["EventLog", "Transaction", "Policy", "LogError", "line_hash", "end_of_last_line", "append_lock", "INDEX_EVERY"]

Policy = Literal["always", "group", "never"]
INDEX_EVERY = 64
_ASYNC_GROUP = 512  # most events one asyncio group commit encodes on the loop thread
_CHUNK = 1 << 20
_ID_MARK = b'"id":"'
_SEQ_MARK = b'"seq":'


class _WouldScan(Exception):
    """A commit on the loop thread would have to read the whole log first."""


def line_hash(line: bytes) -> str:
    """The chain hash of one stored line (without its newline)."""
    return hashlib.blake2b(line, digest_size=16).hexdigest()


def _line_seq(line: bytes) -> int:
    """The ``seq`` of a stored line without decoding all of it."""
    at = line.find(_SEQ_MARK)
    if at < 0:
        raise EventDecodeError("line has no seq")
    end = at + len(_SEQ_MARK)
    stop = end
    while stop < len(line) and 48 <= line[stop] <= 57:
        stop += 1
    if stop == end:
        raise EventDecodeError("line has no numeric seq")
    return int(line[end:stop])


def _line_id(line: bytes) -> str | None:
    at = line.find(_ID_MARK)
    if at < 0:
        return None
    start = at + len(_ID_MARK)
    end = line.find(b'"', start)
    return line[start:end].decode() if end > start else None


def _line_type(line: bytes) -> bytes:
    # Stored lines start with {"type":"<tag>" because the tag field is encoded first.
    end = line.find(b'"', 9)
    return line[9:end]


class _Pending:
    """One thread's append waiting in the group commit queue."""

    __slots__ = ("events", "result", "error", "lead", "wake")

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.result: list[Event] = []
        self.error: BaseException | None = None
        self.lead = False  # told to lead the next group rather than that it is done
        self.wake = threading.Lock()  # held until this append is done or must lead
        self.wake.acquire()


class EventLog:
    """One quest's (or global memory's) event log at ``path``.

    ``policy``: ``always`` syncs every append call; ``group`` lets appends that are in
    flight at the same time in this process share one write and one sync; ``never``
    leaves syncing to the OS. Every policy returns only after the write completed and,
    unless ``never``, the data reached the disk. If a sync fails, the appends it covered
    raise :class:`LogError` and this handle refuses further appends: reopen the log.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        quest_id: str = "",
        actor: str = "",
        policy: Policy = "group",
        recover: bool = True,
    ) -> None:
        if policy not in ("always", "group", "never"):
            raise ValueError(f"unknown durability policy {policy!r}: use always, group or never")
        self.path = os.fspath(path)
        self.quest_id = quest_id
        self.actor = actor
        self.policy: Policy = policy
        self.recovered: LogRecovered | None = None
        parent = os.path.dirname(self.path) or "."
        os.makedirs(parent, exist_ok=True)
        created = not os.path.exists(self.path)
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except BaseException:
            os.close(self._fd)
            raise
        self._tlock = threading.RLock()  # this process's writers; with the flock: _locked()
        self._lock_depth = 0  # how deep the owning thread is in _locked() (flock once)
        self._lock_owner: int | None = None
        self._qlock = threading.Lock()  # the group commit queues and the sync thread's birth
        self._queue: list[_Pending] = []
        self._leader = False
        self._loop_queues: dict[asyncio.AbstractEventLoop, _LoopQueue] = {}
        self._sync_thread: _SyncThread | None = None
        self._sync_lock = threading.Lock()  # one sync at a time; guards _durable, _sync_failed
        self._durable = 0  # the log's first _durable bytes are known to be on disk
        self._last_write_end = 0  # the file offset just after this handle's last write
        self._sync_failed: OSError | None = None
        self._retired_fds: list[int] = []
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._ids: dict[str, int] | None = None
        self._closed = False
        self._reset_state()
        try:
            if created:
                _fsync_dir(parent)
            with self._locked():
                self._load_tail(recover=recover)
                self._load_index()
            if self.recovered is not None:
                self.recovered = self.append(self.recovered)
        except BaseException:
            self.close()
            raise

    # -- public API -----------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The highest seq in the log, including other processes' appends."""
        self._refresh()
        return self._last_seq

    def append(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Append one event (returns it as stored) or a batch atomically (returns a list).

        An event that carries an ``id`` already in the log is not appended again; the
        stored one is returned, so a retried append is idempotent.
        """
        single = isinstance(event, Event)
        events = [event] if single else list(event)  # type: ignore[list-item, arg-type]
        if not events:
            return []
        if self.policy == "group" and self._lock_owner != threading.get_ident():
            stored = self._append_grouped(events)
        else:  # (inside this thread's own transaction a group could never form)
            stored = self._commit([events])[0]
        return stored[0] if single else stored

    async def append_async(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Like :meth:`append` without blocking the loop.

        Under ``group`` (and ``never``) concurrent calls share one write, and one sync
        covers every group written while the previous sync was in flight.
        """
        single = isinstance(event, Event)
        events = [event] if single else list(event)  # type: ignore[list-item, arg-type]
        if not events:
            return []
        loop = asyncio.get_running_loop()
        if self.policy == "always":
            stored = (await loop.run_in_executor(None, self._commit, [events]))[0]
        else:
            queue = self._loop_queues.get(loop) or self._loop_queue(loop)
            future: asyncio.Future[list[Event]] = loop.create_future()
            queue.pending.append((events, future))
            if queue.flusher is None:
                queue.flusher = loop.create_task(self._flush_async(queue))
            stored = await future
        return stored[0] if single else stored

    def read(self, after_seq: int = 0, limit: int | None = None, types: Iterable[str] | None = None) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit``, optionally only ``types``."""
        wanted = {t.encode() for t in types} if types is not None else None
        out: list[Event] = []
        for _seq, line in self.iter_lines(after_seq):
            if wanted is not None and _line_type(line) not in wanted:
                continue
            out.append(decode_line(line))
            if limit is not None and len(out) >= limit:
                break
        return out

    def get(self, seq: int) -> Event | None:
        """The event with this seq, or None."""
        found = self.read(after_seq=seq - 1, limit=1)
        return found[0] if found and found[0].seq == seq else None

    def tail(self, n: int, types: Iterable[str] | None = None) -> list[Event]:
        """The last ``n`` events (of ``types`` if given) in log order."""
        if types is None:
            return self.read(after_seq=max(0, self.last_seq - n))
        return self.read_reverse(limit=n, types=types)[::-1]

    def read_reverse(
        self, before_seq: int | None = None, limit: int = 100, types: Iterable[str] | None = None
    ) -> list[Event]:
        """Events with ``seq < before_seq`` newest first, scanning back window by window."""
        end = (self.last_seq + 1) if before_seq is None else before_seq
        out: list[Event] = []
        window = max(limit, INDEX_EVERY)
        while end > 1 and len(out) < limit:
            start = max(0, end - 1 - window)
            chunk = [e for e in self.read(after_seq=start, limit=end - 1 - start, types=types) if e.seq < end]
            out.extend(reversed(chunk))
            end = start + 1
            window *= 2
        return out[:limit]

    def iter_lines(self, after_seq: int = 0) -> Iterator[tuple[int, bytes]]:
        """Raw stored lines ``(seq, line)`` with ``seq > after_seq``, complete lines only."""
        self._refresh()
        seq, offset = self._seek(after_seq + 1)
        for line, _off in self._scan(offset):
            if seq > after_seq:
                yield seq, line
            seq += 1

    async def follow(self, after_seq: int = 0, *, poll_interval: float = 0.05) -> AsyncIterator[Event]:
        """Yield every event after ``after_seq`` as it is appended, by any process, forever.

        Keeps a byte cursor, so each wake reads only the new bytes. Appends in this
        process wake followers at once; other processes' appends are seen within
        ``poll_interval``.
        """
        self._refresh()
        seq, offset = self._seek(after_seq + 1)
        wake = asyncio.Event()
        waiter = (asyncio.get_running_loop(), wake)
        self._waiters.add(waiter)
        try:
            while True:
                progressed = False
                for line, end in self._scan(offset):
                    offset = end
                    if seq > after_seq:
                        yield decode_line(line)
                    seq += 1
                    progressed = True
                if not progressed:
                    if self._replaced() or os.fstat(self._fd).st_size < offset:
                        raise LogError("the log was repaired or truncated under a follower: follow again from a seq")
                    try:
                        await asyncio.wait_for(wake.wait(), poll_interval)
                    except asyncio.TimeoutError:
                        pass
                    wake.clear()
        finally:
            self._waiters.discard(waiter)

    def close(self) -> None:
        """Sync what this handle wrote, acknowledge what is in flight, release the files.

        Appends that were written before ``close`` return normally; appends not yet
        written fail with :class:`LogError`.
        """
        if self._closed:
            return
        if self._sync_thread is not None:
            self._sync_thread.stop()  # syncs and acknowledges every group handed to it
        with self._tlock, self._sync_lock:  # no write or sync of ours is in progress
            if self._closed:
                return
            if self.policy != "never" and self._sync_failed is None and self._last_write_end > self._durable:
                with contextlib.suppress(LogError):  # recorded: later syncs through this handle fail
                    self._fdatasync_locked()
            self._closed = True
            for fd in (self._fd, self._lock_fd, *self._retired_fds):
                os.close(fd)

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- appending ------------------------------------------------------------------

    def _append_grouped(self, events: list[Event]) -> list[Event]:
        # Leader/follower group commit across threads. The first appender to find no
        # leader leads: it takes everything queued so far and writes it with one write.
        # Before it syncs, it hands the lead to the oldest appender queued since, so the
        # next group is written while this one syncs (the sync releases the GIL). Each
        # waiting thread is woken once, by its own lock: when its group is durable, or
        # when it must lead.
        me = _Pending(events)
        with self._qlock:
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
        with self._qlock:
            batch, self._queue = self._queue, []
        sync_to = 0
        try:
            try:
                results, sync_to = self._write(p.events for p in batch)
            finally:
                self._pass_lead()
            if sync_to:
                self._sync_through(sync_to)
            for p, r in zip(batch, results):
                p.result = r
        except BaseException as exc:  # the whole group failed: tell every member
            for p in batch:
                p.error = exc
        for p in batch:
            if p is not me:
                p.wake.release()
        if sync_to:
            self._wake_followers()
        if me.error is not None:
            raise me.error
        return me.result

    def _pass_lead(self) -> None:
        """The leader has written its group: wake the oldest queued appender to lead."""
        with self._qlock:
            if self._queue:
                successor = self._queue[0]
                successor.lead = True
                successor.wake.release()
            else:
                self._leader = False

    def _abandon(self, me: _Pending) -> None:
        """A queued appender gives up waiting before its group was taken, if it can."""
        with self._qlock:
            if me not in self._queue:
                return  # already taken into a group: it will be written regardless
            self._queue.remove(me)
            promoted = me.lead
        if promoted:  # the lead was passed to us and nobody holds it now
            self._pass_lead()

    def _loop_queue(self, loop: asyncio.AbstractEventLoop) -> _LoopQueue:
        """The asyncio append queue of ``loop`` (one per loop: futures belong to a loop)."""
        with self._qlock:
            for other in [other for other in self._loop_queues if other.is_closed()]:
                del self._loop_queues[other]  # what was queued there can never be written
            return self._loop_queues.setdefault(loop, _LoopQueue())

    async def _flush_async(self, queue: _LoopQueue) -> None:
        """Asyncio group commit, pipelined: write one group while the last one syncs.

        Each round takes every append queued on this loop so far (up to
        ``_ASYNC_GROUP`` events) and writes it with one ``write``; the log's
        :class:`_SyncThread` syncs whatever has been written and only then resolves the
        appenders' futures. So the next group is encoded and written while the last
        one syncs, and one sync covers every group written before it started.

        The write runs on the loop thread when that cannot block: the thread lock and
        the ``flock`` are free (tried without waiting) and no other process has appended
        since we last looked. Otherwise (contention, catch-up, recovery) it runs in the
        default executor like a synchronous append.
        """
        loop = asyncio.get_running_loop()
        try:
            while queue.pending:
                # Let every appender that is ready to run enqueue first: the group grows.
                await asyncio.sleep(0)
                batch = queue.take(_ASYNC_GROUP)
                if not batch:
                    continue
                batches = [events for events, _ in batch]
                try:
                    written = self._write_without_blocking(batches)
                    if written is None:
                        written = await loop.run_in_executor(None, self._write, batches)
                except BaseException as exc:
                    _settle([(fut, []) for _, fut in batch], exc)
                    if isinstance(exc, asyncio.CancelledError):
                        raise
                    continue
                results, sync_to = written
                items = [(fut, stored) for (_, fut), stored in zip(batch, results)]
                if self.policy == "never":
                    _settle(items, None, self)
                elif not self._hand_to_sync_thread(loop, items, sync_to):
                    # Closed meanwhile: durable only if the close synced past it.
                    try:
                        self._sync_through(sync_to)
                    except LogError as exc:
                        _settle(items, exc)
                    else:
                        _settle(items, None, self)
        finally:
            queue.flusher = None

    def _hand_to_sync_thread(self, loop: asyncio.AbstractEventLoop, items: _Written, sync_to: int) -> bool:
        with self._qlock:
            if self._closed:
                return False
            if self._sync_thread is None:
                self._sync_thread = _SyncThread(self)
            thread = self._sync_thread
        return thread.submit(loop, items, sync_to)

    def _write_without_blocking(self, batches: list[list[Event]]) -> tuple[list[list[Event]], int] | None:
        """Write ``batches`` (unsynced) if that needs no waiting and no catch-up, else None."""
        self._usable()
        if not self._tlock.acquire(blocking=False):
            return None
        try:
            if self._lock_depth:  # this thread is inside a transaction: wait for its end
                return None
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except (BlockingIOError, InterruptedError):
                return None
            try:
                st = os.fstat(self._fd)
                named = _stat(self.path)
                if st.st_size != self._size or named is None or named.st_ino != st.st_ino:
                    return None  # another process appended or repaired: catch up off the loop
                return self._commit_locked(batches, sync=False, may_scan=False)
            except _WouldScan:  # an idempotency check must first read the whole log
                return None
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        finally:
            self._tlock.release()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Hold the append lock across a read-decide-append sequence.

        Inside, no other process or thread can append: the log is caught up on entry,
        reads see every event, and ``txn.append`` writes (and syncs) at once. Use it
        for check-then-write rules that must hold across processes (exactly-once
        delivery, duplicate refusal). Keep it short and synchronous: every appender
        waits on it, and it must not span an ``await`` (async appends on the same loop
        wait for it to end; a synchronous ``append`` from another coroutine on the same
        thread would land inside it).
        """
        self._usable()
        with self._locked():
            self._catch_up()
            yield Transaction(self)
        self._wake_followers()

    def _commit(self, batches: list[list[Event]]) -> list[list[Event]]:
        """Write ``batches`` as one write, then sync per policy; each batch as stored."""
        results, sync_to = self._write(batches)
        if sync_to:
            if self.policy != "never":
                self._sync_through(sync_to)
            self._wake_followers()
        return results

    def _write(self, batches: Iterable[list[Event]]) -> tuple[list[list[Event]], int]:
        """Under the lock: catch up and write ``batches`` with one write, not synced.

        Returns the batches as stored and the offset the log must be synced through
        before they may be acknowledged (0 if nothing needs it). The sync comes after
        the lock is released, so other processes and the next group can write
        meanwhile. That is safe because a sync covers every byte of the file written
        before it, so what is durable is always a prefix of the log.
        """
        self._usable()
        with self._locked():
            self._catch_up()
            return self._commit_locked(list(batches), sync=False)

    def _sync_through(self, end: int) -> None:
        """Return once the log's first ``end`` bytes are on disk.

        One sync runs at a time. A sync that began after those bytes were written
        (ours or another thread's) is enough, so a caller whose bytes a sync already
        covered returns at once. A failed sync is final for this handle: the kernel
        may have dropped the pages it could not write, so a later sync that succeeds
        would prove nothing about them. Every later append and sync raises.
        """
        with self._sync_lock:
            self._refuse_after_failed_sync()
            if self._durable >= end:
                return
            if self._closed:
                raise LogError(f"log {self.path} was closed before the append was synced")
            self._fdatasync_locked()

    def _fdatasync_locked(self) -> None:
        """Under ``_sync_lock``: sync the open file and record how far it is durable.

        A failure is recorded for good (see :meth:`_sync_through`) and raised.
        """
        covers = os.fstat(self._fd).st_size  # everything written so far, by anyone
        try:
            os.fdatasync(self._fd)
        except OSError as exc:
            self._sync_failed = exc
            raise LogError(
                f"{self.path}: sync failed ({exc}); appends since the last good sync may not be on disk. "
                "Reopen the log (it recovers its tail) and check it with ds verify"
            ) from exc
        self._durable = max(self._durable, covers)

    def _usable(self) -> None:
        """Refuse to append through a closed handle or one whose sync has failed."""
        if self._closed:
            raise LogError(f"log {self.path} is closed")
        self._refuse_after_failed_sync()

    def _refuse_after_failed_sync(self) -> None:
        if self._sync_failed is not None:
            raise LogError(f"{self.path}: an earlier sync failed ({self._sync_failed}); reopen the log")

    def _commit_locked(
        self, batches: list[list[Event]], *, sync: bool = True, may_scan: bool = True
    ) -> tuple[list[list[Event]], int]:
        """Under the lock and caught up: assign seqs, chain, write once, sync per policy.

        Returns the batches as stored and the offset the log must be synced through
        before they are durable: the end of the file if anything was written or an
        event was found already stored (its first append may still be syncing), else
        0. ``sync=False`` leaves that sync to the caller.
        ``may_scan=False`` raises :class:`_WouldScan`, having changed nothing, rather
        than read the whole log to build the id map an idempotency check needs.

        This is the hot path of every append (and of group commit, once per group), so
        it binds what it calls to locals. It notes every id it assigns, because the id
        map may be built from the file midway through a batch (by a preset id's check).
        """
        ts = utc_now()
        seq, prev, offset = self._last_seq, self._last_hash, self._size
        replace, enc, blake = msgspec.structs.replace, encode, hashlib.blake2b
        quest_id, actor = self.quest_id, self.actor
        next_id = iter(new_event_ids(sum(map(len, batches)))).__next__
        chunks: list[bytes] = []
        new_offsets: list[tuple[int, int]] = []
        new_ids: dict[str, int] = {}
        duplicates = False
        results: list[list[Event]] = []
        for events in batches:
            stored: list[Event] = []
            for event in events:
                event_id = event.id
                if event_id:
                    if self._ids is None and not may_scan:
                        raise _WouldScan
                    existing = new_ids.get(event_id) or self._id_seq(event_id)
                    if existing:
                        stored.append(self._stored_duplicate(existing, chunks))
                        duplicates = True
                        continue
                else:
                    event_id = next_id()
                seq += 1
                new_ids[event_id] = seq
                event = replace(
                    event,
                    seq=seq,
                    id=event_id,
                    ts=event.ts or ts,
                    quest_id=event.quest_id or quest_id,
                    actor=event.actor or actor,
                    prev=prev,
                )
                line = enc(event)
                prev = blake(line, digest_size=16).hexdigest()
                if not (seq - 1) % INDEX_EVERY:
                    new_offsets.append((seq, offset))
                offset += len(line) + 1
                chunks.append(line)
                stored.append(event)
            results.append(stored)
        if chunks:
            chunks.append(b"")
            _write_all(self._fd, b"\n".join(chunks))
            self._last_seq, self._last_hash, self._size = seq, prev, offset
            self._last_write_end = offset
            if new_offsets:
                self._add_offsets(new_offsets, persist=True)
            if self._ids is not None:
                self._ids.update(new_ids)
        sync_to = self._size if chunks or duplicates else 0
        if sync and sync_to and self.policy != "never":
            self._sync_through(sync_to)
        return results, sync_to

    def _stored_duplicate(self, seq: int, chunks: list[bytes]) -> Event:
        if seq > self._last_seq:  # duplicated inside the batch being written
            return decode_line(chunks[seq - self._last_seq - 1])
        found = self.get(seq)
        assert found is not None
        return found

    def _id_seq(self, event_id: str) -> int | None:
        if self._ids is None:
            ids: dict[str, int] = {}
            seq = 0
            for line, _ in self._scan(0, self._size):
                seq += 1
                found = _line_id(line)
                if found:
                    ids[found] = seq
            self._ids = ids
        return self._ids.get(event_id)

    def _wake_followers(self) -> None:
        for loop, wake in list(self._waiters):
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # that loop is closed: its follower is gone
                self._waiters.discard((loop, wake))

    # -- tail state, catch-up and recovery ------------------------------------------

    def _reset_state(self) -> None:
        self._size = 0
        self._last_seq = 0
        self._last_hash = ""
        self._offsets: list[int] = []  # _offsets[i] = byte offset of seq i*INDEX_EVERY + 1
        self._idx_persisted = 0

    def _locked(self) -> _FileLock:
        return _FileLock(self)

    def _load_tail(self, *, recover: bool) -> None:
        """Find the last complete line; under the lock, quarantine a torn one."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            self._reset_state()
            return
        last_start, last = _last_line(self._fd, size)
        torn: tuple[int, bytes, str] | None = None
        if not last.endswith(b"\n"):
            torn = (last_start, last, "torn last line (no newline)")
        else:
            try:
                decode_line(last[:-1])
            except EventDecodeError as exc:
                torn = (last_start, last, f"undecodable last line: {exc}")
        if torn is not None:
            if not recover:
                raise LogError(f"{self.path}: {torn[2]} at byte {torn[0]}; open with recovery or run ds repair")
            self._quarantine_tail(*torn)
            size = torn[0]
            if size == 0:
                self._reset_state()
                return
            last_start, last = _last_line(self._fd, size)
        line = last.rstrip(b"\n")
        self._size = size
        self._last_seq = _line_seq(line)
        self._last_hash = line_hash(line)

    def _quarantine_tail(self, offset: int, data: bytes, reason: str) -> None:
        qdir = os.path.join(os.path.dirname(self.path), "quarantine")
        os.makedirs(qdir, exist_ok=True)
        qpath = os.path.join(qdir, f"{os.path.basename(self.path)}.{new_event_id()}.torn")
        with open(qpath, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.ftruncate(self._fd, offset)
        os.fsync(self._fd)
        self.recovered = LogRecovered(
            reason=reason, offset=offset, length=len(data), quarantine_path=os.path.relpath(qpath, os.path.dirname(self.path))
        )

    def _catch_up(self) -> None:
        """Under the lock: absorb other processes' appends (or a replaced file)."""
        if self._replaced(missing=True):  # ds repair replaced the file: reopen it
            with self._sync_lock:
                # Sync what we wrote to the old file, and keep its descriptor open: a
                # thread may be about to sync it (and must not hit a reused number).
                if self._sync_failed is None and self._last_write_end > self._durable:
                    self._fdatasync_locked()
                self._retired_fds.append(self._fd)
                self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                self._durable = self._last_write_end = 0
            self._reset_state()
            self._ids = None
            self._load_tail(recover=True)
            self._load_index()
            if self.recovered is not None:
                self.recovered = None
                raise LogError(f"{self.path} had a torn tail after a replace; reopen the log")
            return
        size = os.fstat(self._fd).st_size
        if size < self._size:  # truncated by recovery elsewhere
            with self._sync_lock:  # offsets from before the truncation mean nothing now
                self._durable = self._last_write_end = 0
            self._reset_state()
            self._ids = None
            self._load_tail(recover=False)
            self._load_index()
        elif size > self._size:
            self._advance(size)
            if self._size != size:  # a writer died mid-line since we last looked
                start, torn = self._size, os.pread(self._fd, size - self._size, self._size)
                self._quarantine_tail(start, torn, "torn last line (no newline)")
                recovered, self.recovered = self.recovered, None
                assert recovered is not None
                # Record it as part of this same append: it is the next seq.
                self._commit_recovered(recovered)

    def _commit_recovered(self, event: LogRecovered) -> None:
        event = msgspec.structs.replace(
            event,
            seq=self._last_seq + 1,
            id=new_event_id(),
            ts=utc_now(),
            quest_id=self.quest_id,
            actor=self.actor or "log",
            prev=self._last_hash,
        )
        line = encode(event)
        _write_all(self._fd, line + b"\n")
        self._add_offsets([(event.seq, self._size)], persist=True)
        self._last_seq, self._last_hash, self._size = event.seq, line_hash(line), self._size + len(line) + 1
        self._last_write_end = self._size
        self._sync_through(self._size)

    def _refresh(self) -> None:
        """Without the lock: see complete lines other processes appended."""
        if self._replaced():  # ds repair swapped the file: reopen under the lock
            with self._locked():
                self._catch_up()
            return
        size = os.fstat(self._fd).st_size
        if size > self._size:
            with self._tlock:
                self._advance(size)
        elif size < self._size:
            with self._locked():
                self._catch_up()

    def _replaced(self, *, missing: bool = False) -> bool:
        """Whether the path now names another file than the one we have open.

        ``missing`` is the answer when the path names no file at all.
        """
        named = _stat(self.path)
        return missing if named is None else named.st_ino != os.fstat(self._fd).st_ino

    def _advance(self, size: int) -> None:
        """Consume complete lines in ``[self._size, size)`` into the tail state and index."""
        seq, last, offset = self._last_seq, None, self._size
        new_offsets: list[tuple[int, int]] = []
        for line, end in self._scan(self._size, size):
            seq += 1
            if (seq - 1) % INDEX_EVERY == 0:
                new_offsets.append((seq, offset))
            if self._ids is not None:
                found = _line_id(line)
                if found:
                    self._ids[found] = seq
            last, offset = line, end
        if last is not None:
            self._last_seq = _line_seq(last)
            self._last_hash = line_hash(last)
            self._size = offset
            self._add_offsets(new_offsets, persist=False)

    # -- the sparse index -------------------------------------------------------------

    @property
    def _idx_path(self) -> str:
        return self.path + ".idx"

    def _load_index(self) -> None:
        """Under the lock: load ``.idx``, check it against the log, extend it to the tail."""
        offsets: list[int] = []
        try:
            with open(self._idx_path, "rb") as f:
                data = f.read()
            offsets = list(struct.unpack(f"<{len(data) // 8}Q", data[: len(data) // 8 * 8]))
        except FileNotFoundError:
            pass
        # Keep the longest prefix whose last entry really starts the expected seq.
        while offsets and not self._index_entry_ok(len(offsets) - 1, offsets[-1]):
            offsets = [] if len(offsets) < 8 else offsets[: len(offsets) // 2]
        self._offsets = offsets
        self._idx_persisted = len(offsets)
        if not offsets or self._size == 0:
            self._offsets, self._idx_persisted = [], 0
            _truncate_file(self._idx_path, 0)
            start_seq, start = 1, 0
        else:
            _truncate_file(self._idx_path, len(offsets) * 8)
            start_seq, start = (len(offsets) - 1) * INDEX_EVERY + 1, offsets[-1]
        new_offsets: list[tuple[int, int]] = [(1, 0)] if start_seq == 1 and self._size else []
        seq = start_seq
        for _line, end in self._scan(start, self._size):
            seq += 1
            if (seq - 1) % INDEX_EVERY == 0 and seq <= self._last_seq:
                new_offsets.append((seq, end))
        self._add_offsets(new_offsets, persist=True)

    def _index_entry_ok(self, i: int, offset: int) -> bool:
        if offset >= self._size:
            return False
        if offset > 0 and os.pread(self._fd, 1, offset - 1) != b"\n":
            return False
        head = os.pread(self._fd, 256, offset)
        try:
            return _line_seq(head.split(b"\n", 1)[0]) == i * INDEX_EVERY + 1
        except EventDecodeError:
            return False

    def _add_offsets(self, pairs: list[tuple[int, int]], *, persist: bool) -> None:
        for seq, offset in pairs:
            if (seq - 1) % INDEX_EVERY == 0 and (seq - 1) // INDEX_EVERY == len(self._offsets):
                self._offsets.append(offset)
        if persist and len(self._offsets) > self._idx_persisted:
            # Only appenders (under the lock) write the index file.
            on_disk = _file_size(self._idx_path) // 8
            if on_disk < len(self._offsets):
                start = max(on_disk, 0)
                data = struct.pack(f"<{len(self._offsets) - start}Q", *self._offsets[start:])
                with open(self._idx_path, "r+b" if on_disk else "wb") as f:
                    f.seek(start * 8)
                    f.write(data)
            self._idx_persisted = len(self._offsets)

    def _seek(self, seq: int) -> tuple[int, int]:
        """The nearest indexed ``(seq, offset)`` at or before ``seq``."""
        self._refresh_index()
        slot = min((max(seq, 1) - 1) // INDEX_EVERY, len(self._offsets) - 1)
        if slot < 0:
            return 1, 0
        return slot * INDEX_EVERY + 1, self._offsets[slot]

    def _refresh_index(self) -> None:
        """Pick up index entries that other processes' appends wrote."""
        on_disk = _file_size(self._idx_path) // 8
        if on_disk <= len(self._offsets):
            return
        with open(self._idx_path, "rb") as f:
            f.seek(len(self._offsets) * 8)
            data = f.read((on_disk - len(self._offsets)) * 8)
        for (offset,) in struct.iter_unpack("<Q", data[: len(data) // 8 * 8]):
            if offset >= os.fstat(self._fd).st_size:
                break
            self._offsets.append(offset)

    # -- raw scanning -----------------------------------------------------------------

    def _scan(self, offset: int, end: int | None = None) -> Iterator[tuple[bytes, int]]:
        """Complete lines from ``offset`` up to ``end`` (default: the file's end now).

        Yields ``(line without newline, offset after it)``. A final line without its
        newline is not yielded: it is a write in progress (or torn; recovery's job).
        """
        if end is None:
            end = os.fstat(self._fd).st_size
        carry = b""
        pos = offset
        while pos < end:
            chunk = os.pread(self._fd, min(_CHUNK, end - pos), pos)
            if not chunk:
                break
            base = pos - len(carry)
            pos += len(chunk)
            lines = (carry + chunk if carry else chunk).split(b"\n")
            carry = lines.pop()  # after the last newline: partial (or empty)
            for line in lines:
                base += len(line) + 1
                yield line, base


class Transaction:
    """Appends made while :meth:`EventLog.transaction` holds the lock."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self.appended: list[Event] = []

    @property
    def last_seq(self) -> int:
        return self._log._last_seq

    def append(self, events: Event | Sequence[Event]) -> list[Event]:
        """Write ``events`` now (one write, synced unless the policy is ``never``)."""
        batch = [events] if isinstance(events, Event) else list(events)
        results, _ = self._log._commit_locked([batch])
        self.appended.extend(results[0])
        return results[0]


_Written = list[tuple[asyncio.Future[list[Event]], list[Event]]]


class _LoopQueue:
    """The asyncio appends of one event loop waiting for that loop's flusher task."""

    __slots__ = ("pending", "flusher")

    def __init__(self) -> None:
        self.pending: list[tuple[list[Event], asyncio.Future[list[Event]]]] = []
        self.flusher: asyncio.Task[None] | None = None

    def take(self, most: int) -> list[tuple[list[Event], asyncio.Future[list[Event]]]]:
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

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, _Written, int]] = []  # (loop, appends, sync to)
        self._stopping = False
        self._rfd, self._wfd = os.pipe()
        self._thread = threading.Thread(target=self._run, name=f"ds-log-sync {log.path}", daemon=True)
        self._thread.start()

    def submit(self, loop: asyncio.AbstractEventLoop, written: _Written, sync_to: int) -> bool:
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
                    self._log._sync_through(max(sync_to for *_, sync_to in batch))
                except BaseException as exc:  # the appends may or may not be on disk: say so
                    error = exc
                self._acknowledge(batch, error)
            if b"q" in wake:
                return

    def _acknowledge(self, batch: list[tuple[asyncio.AbstractEventLoop, _Written, int]], error: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, _Written] = {}
        for loop, written, _sync_to in batch:
            by_loop.setdefault(loop, []).extend(written)
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, items, error, self._log)
            except RuntimeError:  # that loop is closed: nobody waits there any more
                pass


def _settle(items: _Written, error: BaseException | None, log: EventLog | None = None) -> None:
    """Resolve waiting appenders with their stored events, or fail them all with ``error``.

    With ``log``, also wake its followers once the appends are acknowledged.
    """
    for fut, stored in items:
        if not fut.done():
            if error is None:
                fut.set_result(stored)
            else:
                fut.set_exception(error)
    if log is not None and error is None:
        log._wake_followers()


def _flock(fd: int) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        except InterruptedError:  # pragma: no cover - signal during wait
            continue


@contextlib.contextmanager
def append_lock(path: str) -> Iterator[None]:
    """Hold the append lock of the log at ``path`` without opening the log, for a tool
    that rewrites the file (``ds repair``): every appender waits until it is released."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _flock(fd)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class _FileLock:
    """The log's thread lock plus an exclusive ``flock``: one appender across threads
    and processes. Re-entrant in the owning thread; the ``flock`` is taken once, on
    the way in, and released on the way out of the outermost use."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def __enter__(self) -> None:
        log = self._log
        log._tlock.acquire()
        if log._lock_depth == 0:
            try:
                _flock(log._lock_fd)
            except BaseException:
                log._tlock.release()
                raise
            log._lock_owner = threading.get_ident()
        log._lock_depth += 1

    def __exit__(self, *exc: object) -> None:
        log = self._log
        log._lock_depth -= 1
        try:
            if log._lock_depth == 0:
                log._lock_owner = None
                fcntl.flock(log._lock_fd, fcntl.LOCK_UN)
        finally:
            log._tlock.release()


def end_of_last_line(fd: int, end: int) -> int:
    """Offset just after the last newline in the first ``end`` bytes of ``fd`` (0 if none).

    Reads backwards in growing blocks, so it costs the length of the last line, not of
    the file. The log uses it to find its tail; session output logs to find their end.
    """
    step = 64 * 1024
    pos = end
    while pos > 0:
        start = max(0, pos - step)
        nl = os.pread(fd, pos - start, start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
        step *= 2
    return 0


def _last_line(fd: int, size: int) -> tuple[int, bytes]:
    """``(offset, bytes)`` of the last line of the first ``size`` bytes (newline kept)."""
    # A trailing newline belongs to the last line; look for the one before it.
    search_end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    start = end_of_last_line(fd, search_end)
    return start, os.pread(fd, size - start, start)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:  # pragma: no cover
            continue
        view = view[written:]


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # pragma: no cover
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _file_size(path: str) -> int:
    st = _stat(path)
    return st.st_size if st else 0


def _truncate_file(path: str, size: int) -> None:
    if _file_size(path) > size:
        os.truncate(path, size)
