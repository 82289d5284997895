"""``EventLog``: the append-only, typed, hash-chained log of one quest (or global memory).

Several processes append to one log (the daemon, MCP servers, the CLI). An append takes
the append lock (:mod:`.lock`), catches up with whatever other processes appended since
it last looked, assigns the next ``seq`` and the ``prev`` hash (:mod:`.format`), writes
the whole batch with one ``write``, releases the lock, and syncs per the durability
policy before returning (:mod:`.sync`). Syncing outside the lock is safe because a sync
covers every byte written to the file before it, whoever wrote it: what is durable is
always a prefix of the log. Readers never take the lock: they only consume complete
lines (:mod:`.scan`), seeking through the sparse index (:mod:`.index`).

Policy ``group`` shares writes and syncs between appends in flight in one process
(:mod:`.group`). A batch is all or nothing: readers see only complete batches, and the
torn tail a crashed writer leaves (a partial line, or part of a batch) is quarantined
on open or by the next appender (:mod:`.recovery`). After each sync the head anchor
(:mod:`.anchor`) records the durable head outside the log; an appender refuses a log
that lost or changed that head, or that changed under it, rather than bury the
evidence. A read-only handle never recovers, truncates, appends or creates a file.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from ..errors import DiskFull, LogError, ServiceError
from ..events import Event, LogRecovered, decode_line, encode, new_event_id, utc_now
from ..fdio import fsync_dir, stat_or_none, write_all
from ..store import Head
from .format import encode_batches, line_hash, line_id, line_prev, line_seq, line_type
from .group import AsyncGroupCommit, ThreadGroupCommit
from .index import INDEX_EVERY, SparseIndex
from .lock import FileLock
from .recovery import Torn, find_tail, quarantine, torn_after
from .scan import scan_lines
from .anchor import Anchor, HeadAnchor
from .sync import DISK_FULL_ERRNOS, DurableFile, as_log_error

if TYPE_CHECKING:
    import asyncio  # at run time only the async methods need it, and they run on a loop

__all__ = ["EventLog", "Transaction", "Policy", "MAX_EVENT_BYTES"]

Policy = Literal["always", "group", "never"]
MAX_EVENT_BYTES = 8 << 20  # the largest stored line an append accepts (config log.max_event_bytes)
_NEVER_ANCHOR_EVERY = 64  # policy never: writes between head anchor updates (and one on close)


class EventLog:
    """One quest's (or global memory's) event log at ``path``.

    ``policy``: ``always`` syncs every append call; ``group`` lets appends that are in
    flight at the same time in this process share one write and one sync; ``never``
    leaves syncing to the OS. Every policy returns only after the write completed and,
    unless ``never``, the data reached the disk. If a write or a sync fails, the appends
    it covered raise :class:`LogError` (:class:`DiskFull` for a full disk) and this
    handle refuses further appends: reopen the log.

    An event whose stored line would be longer than ``max_event_bytes`` is refused
    with :class:`ServiceError` ``event_too_large``, and nothing of its append is written.

    ``read_only``: read, never write (a torn tail is left in place and reported as
    :attr:`torn`). ``key``: the home's log key, which signs the head anchor (and
    without which a signed anchor cannot be trusted, nor is it overwritten).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        quest_id: str = "",
        actor: str = "",
        policy: Policy = "group",
        recover: bool = True,
        max_event_bytes: int = MAX_EVENT_BYTES,
        read_only: bool = False,
        key: bytes | None = None,
    ) -> None:
        if policy not in ("always", "group", "never"):
            raise ValueError(f"unknown durability policy {policy!r}: use always, group or never")
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be positive, not {max_event_bytes!r}")
        self.max_event_bytes = max_event_bytes
        self.path = os.fspath(path)
        self.quest_id = quest_id
        self.actor = actor
        # Stamped on every event appended through this handle that names no run of its
        # own: an MCP server started for a turn (DS_RUN_ID) ties its events to the turn.
        self.run_id: str | None = None
        self.policy: Policy = policy
        self.read_only = read_only
        self.recovered: LogRecovered | None = None
        # A torn tail this handle found and left in place (read-only, or a full disk, or
        # the file shrank below its anchored head): reads stop before it.
        self.torn: Torn | None = None
        self._torn_size = 0  # the file's size when it was found
        parent = os.path.dirname(self.path) or "."
        if not read_only:
            os.makedirs(parent, exist_ok=True)
        created = not read_only and not os.path.exists(self.path)
        self._set_tail(0, 0, "")
        self._anchor = HeadAnchor(self.path, key)
        self._file = DurableFile(
            self.path, intact=lambda: self._tail, anchor=None if read_only else self._anchor, read_only=read_only
        )
        try:
            self._lock = FileLock(None if read_only else self.path + ".lock")
        except BaseException:
            self._file.close(sync=False)
            raise
        self._index = SparseIndex(self.path + ".idx")
        target = _CommitTarget(self)
        self._threads = ThreadGroupCommit(target)
        self._async = AsyncGroupCommit(target)
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._ids: dict[str, int] | None = None  # event id -> seq, built on first need
        self._generation = 0  # +1 whenever offsets from before stop meaning anything
        self._unanchored = 0  # policy never: writes since the anchor was told (see _anchor_now)
        try:
            if created:
                fsync_dir(parent)
            with self._lock:
                anchored = self._trusted_anchor()
                torn = self._load_tail(recover=recover and not read_only, anchored=anchored)
                self._load_index()
                if not read_only:
                    self._check_head(anchored)  # before anything is cut: a refusal keeps all
                if torn is not None:
                    self._recover(torn)
            if self.recovered is not None:
                try:
                    self.recovered = self.append(self.recovered)
                except DiskFull:  # the tail is in quarantine; readable, appends refused
                    self.recovered = None
        except OSError as exc:
            self.close()
            if exc.errno in DISK_FULL_ERRNOS:
                raise as_log_error(self.path, exc, "opening the log") from exc
            raise
        except BaseException:
            self.close()
            raise

    # -- public API -----------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The highest seq in the log, including other processes' appends."""
        self._refresh()
        return self._last_seq

    @property
    def needs_reopen(self) -> bool:
        """A write through this handle failed: it refuses appends until a new handle is
        opened (what it knows of the file's end may be wrong). A sync failure is final
        in another way (the data it covered may be lost) and is reported by every append."""
        return self._file.write_failed is not None and not self._file.closed

    def head(self) -> Head:
        """The last seq and the chain hash of its line, including other processes' appends."""
        self._refresh()
        with self._lock.threads:  # both from the same moment
            return Head(self._last_seq, self._last_hash)

    def append(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Append one event (returns it as stored) or a batch atomically (returns a list).

        An event that carries an ``id`` already in the log is not appended again; the
        stored one is returned, so a retried append is idempotent.
        """
        single = isinstance(event, Event)
        events = [event] if single else list(event)  # type: ignore[list-item, arg-type]
        if not events:
            return []
        if self.policy == "group" and not self._lock.held_by_me():
            stored = self._threads.append(events)
        else:  # (inside this thread's own transaction a group could never form)
            stored = self._commit([events])[0]
            if isinstance(stored, ServiceError):  # refused (too large): nothing written
                raise stored
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
        if self.policy == "always":
            import asyncio  # loaded already: we run on its loop

            loop = asyncio.get_running_loop()
            stored = _or_raise((await loop.run_in_executor(None, self._commit, [events]))[0])
        else:
            stored = await self._async.append(events)
        return stored[0] if single else stored

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
        self._file.usable()
        with self._lock:
            self._catch_up()
            self._file.usable()  # catching up may have found the log damaged
            yield Transaction(self)
        self._wake_followers()

    def read(self, after_seq: int = 0, limit: int | None = None, types: Iterable[str] | None = None) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit``, optionally only ``types``."""
        wanted = {t.encode() for t in types} if types is not None else None
        out: list[Event] = []
        for _seq, line in self.iter_lines(after_seq):
            if wanted is not None and line_type(line) not in wanted:
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
        end = self._size  # complete batches end here (what lies beyond is a write in progress)
        seq, offset = self._index.seek(self._file.fd, after_seq + 1, end)
        for line, _off in scan_lines(self._file.fd, offset, end):
            if seq > after_seq:
                yield seq, line
            seq += 1

    async def follow(self, after_seq: int = 0, *, poll_interval: float = 0.05) -> AsyncIterator[Event]:
        """Yield every event after ``after_seq`` as it is appended, by any process, forever.

        Keeps a byte cursor, so each wake reads only the new bytes. Appends in this
        process wake followers at once; other processes' appends are seen within
        ``poll_interval``.
        """
        import asyncio  # loaded already: we run on its loop

        self._refresh()
        generation = self._generation
        seq, offset = self._index.seek(self._file.fd, after_seq + 1, self._size)
        wake = asyncio.Event()
        waiter = (asyncio.get_running_loop(), wake)
        self._waiters.add(waiter)
        try:
            while True:
                progressed = False
                self._refresh()  # up to where complete batches end: a batch is seen whole
                if self._generation != generation:  # our byte cursor means nothing in it
                    raise LogError("the log was repaired or truncated under a follower: follow again from a seq")
                for line, end in scan_lines(self._file.fd, offset, max(offset, self._size)):
                    offset = end
                    if seq > after_seq:
                        yield decode_line(line)
                    seq += 1
                    progressed = True
                if not progressed:
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
        if self._file.closed:
            return
        self._async.close()  # syncs and acknowledges every group handed to its sync thread
        with self._lock.threads:  # no write of ours is in progress
            if self.policy == "never" and self._unanchored and not self._file.closed:
                self._anchor_now()
            if self._file.close(sync=self.policy != "never"):
                self._lock.close()
                self._anchor.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- appending ------------------------------------------------------------------

    def _commit(self, batches: list[list[Event]]) -> list[list[Event]]:
        """Write ``batches`` as one write, then sync per policy; each batch as stored."""
        results, sync_to = self._write(batches)
        if sync_to:
            if self.policy != "never":
                self._file.sync_through(sync_to)
            self._wake_followers()
        return results

    def _write(self, batches: Iterable[list[Event]]) -> tuple[list[list[Event]], int]:
        """Under the lock: catch up and write ``batches`` with one write, not synced.

        Returns the batches as stored and the offset the log must be synced through
        before they may be acknowledged (0 if nothing needs it). The sync comes after
        the lock is released, so other processes and the next group can write
        meanwhile.
        """
        if self._file.blocked:
            self._file.usable()  # raises why
        with self._lock:
            self._catch_up()
            if self._file.blocked:  # catching up may have found the log damaged
                self._file.usable()
            return self._commit_locked(list(batches), sync=False)

    def _try_write(self, batches: list[list[Event]]) -> tuple[list[list[Event]], int] | None:
        """Write ``batches`` (unsynced) if that needs no waiting and no catch-up, else None."""
        self._file.usable()
        if not self._lock.try_acquire():
            return None
        try:
            st = os.fstat(self._file.fd)
            named = stat_or_none(self.path)
            if st.st_size != self._size or named is None or named.st_ino != st.st_ino:
                return None  # another process appended or repaired: catch up off the loop
            return self._commit_locked(batches, sync=False, may_scan=False)
        except _WouldScan:  # an idempotency check must first read the whole log
            return None
        finally:
            self._lock.release()

    def _commit_locked(
        self, batches: list[list[Event]], *, sync: bool = True, may_scan: bool = True
    ) -> tuple[list[list[Event]], int]:
        """Under the lock and caught up: assign seqs, chain, write once, sync per policy.

        Returns the batches as stored and the offset the log must be synced through
        before they are durable: the end of the file if anything was written or an
        event was found already stored (its first append may still be syncing), else
        0. ``sync=False`` leaves that sync to the caller. ``may_scan=False`` raises
        :class:`_WouldScan`, having changed nothing, rather than read the whole log to
        build the id map an idempotency check needs.
        """
        encoded = encode_batches(
            batches,
            seq=self._last_seq,
            prev=self._last_hash,
            offset=self._size,
            quest_id=self.quest_id,
            actor=self.actor,
            run_id=self.run_id,
            known=self._id_seq if may_scan else self._id_seq_if_known,
            stored=self._stored,
            max_bytes=self.max_event_bytes,
        )
        if encoded.lines:
            first = self._last_seq + 1
            data = encoded.data()
            try:
                written = os.write(self._file.fd, data)  # (write_all's common case, inlined)
                if written != len(data):  # a short write: the rest (or the error, ENOSPC) follows
                    write_all(self._file.fd, data[written:])
            except OSError as exc:
                raise self._write_failed(exc, "a write") from exc
            # The tail, also as one tuple (read in one step by a sync thread): _set_tail, inlined.
            self._size, self._last_seq, self._last_hash = encoded.end, encoded.seq, encoded.prev
            self._tail = (encoded.end, encoded.seq, encoded.prev)
            self._file.written_end = encoded.end
            if (-(first - 1)) % INDEX_EVERY < len(encoded.starts):  # an indexed seq among them
                self._index.add_lines(first, encoded.starts, persist=True)
            if self._ids is not None:
                self._ids.update(encoded.ids)
            if self.policy == "never":  # no sync will tell the anchor
                self._unanchored += 1
                if self._unanchored >= _NEVER_ANCHOR_EVERY:
                    self._anchor_now()
        sync_to = self._size if encoded.lines or encoded.duplicates else 0
        if sync and sync_to and self.policy != "never":
            self._file.sync_through(sync_to)
        return encoded.results, sync_to

    def _write_failed(self, exc: OSError, what: str, *, cut: bool = True) -> LogError:
        """Under the lock, after a failed write: cut the file back to the end of the
        last complete batch we know (a partial batch must not stay), refuse further
        appends through this handle, and return the error to raise.

        If even the cut fails, the partial batch stays at the tail, where readers do
        not see it (its last line is missing) and the next opener's recovery drops it.
        ``cut=False`` (a recovery that failed) leaves the torn bytes for the next one.
        """
        if cut:
            try:
                if os.fstat(self._file.fd).st_size > self._size:
                    os.ftruncate(self._file.fd, self._size)
            except OSError:
                pass
        self._file.fail_write(exc)
        return as_log_error(self.path, exc, what)

    def _anchor_now(self) -> None:
        """Record the head in the anchor. Policy ``never`` (no syncs, no durability
        promised) does this every ``_NEVER_ANCHOR_EVERY`` writes and on close rather
        than after every write, which would cost more than the write itself."""
        _size, seq, line_hash_ = self._tail
        if seq:
            self._anchor.write(seq, line_hash_, self._file.fd)
        self._unanchored = 0

    def _stored(self, seq: int) -> Event:
        found = self.get(seq)
        assert found is not None
        return found

    def _id_seq(self, event_id: str) -> int | None:
        if self._ids is None:
            ids: dict[str, int] = {}
            seq = 0
            for line, _ in scan_lines(self._file.fd, 0, self._size):
                seq += 1
                found = line_id(line)
                if found:
                    ids[found] = seq
            self._ids = ids
        return self._ids.get(event_id)

    def _id_seq_if_known(self, event_id: str) -> int | None:
        if self._ids is None:
            raise _WouldScan
        return self._ids.get(event_id)

    def _wake_followers(self) -> None:
        for loop, wake in list(self._waiters):
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # that loop is closed: its follower is gone
                self._waiters.discard((loop, wake))

    # -- tail state, catch-up and recovery ------------------------------------------

    def _reset_state(self) -> None:
        self._set_tail(0, 0, "")
        self._index.reset()

    def _set_tail(self, size: int, seq: int, line_hash_: str) -> None:
        """Where complete batches end, and the seq and line hash of the last one's last
        line; also as one tuple, which a sync thread reads in one step."""
        self._size, self._last_seq, self._last_hash = size, seq, line_hash_
        self._tail = (size, seq, line_hash_)

    def _load_tail(self, *, recover: bool, anchored: Anchor | None = None, keep: bool = False) -> Torn | None:
        """Find the end of the last complete batch. Returns what follows it if that is
        to be recovered (the caller quarantines it with :meth:`_recover`): only if asked
        to recover and it can be a crashed write, which it cannot if the anchor names a
        later seq (the file then shrank below a head it once had, and only ``ds
        repair`` may cut it). Otherwise a torn tail is kept in place (read-only,
        ``keep``, or below the anchored head) or refused."""
        tail, torn = find_tail(self._file.fd)
        self.torn = None
        self._set_tail(tail.size, tail.last_seq, tail.last_hash)
        if torn is None:
            return None
        if self.read_only or (keep and not recover):
            self._keep_torn(torn)
        elif not recover:
            raise LogError(f"{self.path}: {torn.reason} at byte {torn.offset}; open with recovery or run ds repair")
        elif anchored is not None and anchored.seq > tail.last_seq:
            self._keep_torn(torn)
            self._file.refuse(
                LogError(
                    f"{self.path}: the log ends in a torn tail at byte {torn.offset} after seq {tail.last_seq}, "
                    f"but its head anchor names seq {anchored.seq}: it shrank below a head it had, which a crashed "
                    "write cannot do. Nothing was recovered or appended: check it with `ds verify`, then `ds repair`"
                )
            )
        else:
            return torn
        return None

    def _recover(self, torn: Torn) -> None:
        """Under the lock: quarantine ``torn`` (sets :attr:`recovered`, the event to
        append), unless the handle refuses to append: then it stays where it is. On a
        full disk it stays too, and appends are refused (DiskFull) until reopened."""
        if self._file.refusal is not None:
            self._keep_torn(torn)
            return
        try:
            self.recovered = quarantine(self._file.fd, self.path, torn)
        except OSError as exc:
            if exc.errno not in DISK_FULL_ERRNOS:
                raise
            self._keep_torn(torn)
            self._file.fail_write(exc)

    def _keep_torn(self, torn: Torn) -> None:
        """Leave ``torn`` where it is: reads stop before it."""
        self.torn = torn
        self._torn_size = torn.offset + len(torn.data)

    def _trusted_anchor(self) -> Anchor | None:
        """The head anchor if it can be trusted (its MAC checks with our key, or no key
        is in play); a garbled or forged one makes this handle refuse to append."""
        try:
            anchor = self._anchor.read()
        except ValueError as exc:
            if not self.read_only:
                self._file.refuse(LogError(f"{self.path}: {exc}: check the log with `ds verify`, then `ds repair`"))
            return None
        if anchor is None or self._anchor.key is None or anchor.verified_by(self._anchor.key):
            return anchor
        if anchor.mac and not self.read_only:
            self._file.refuse(
                LogError(
                    f"{self.path}: the head anchor's MAC does not match this home's key (the anchor was edited, or "
                    "the log comes from another home): nothing will be appended; check it with `ds verify`"
                )
            )
        return None

    def _check_head(self, anchored: Anchor | None) -> None:
        """Under the lock: refuse to append to a log that lost or changed the head its
        anchor names (a truncated or rewritten end); appending would bury the evidence."""
        if anchored is None or self._file.refusal is not None:
            return
        problem = ""
        if anchored.seq > self._last_seq:
            problem = f"it ends at seq {self._last_seq} but its head anchor names seq {anchored.seq}: lines were removed"
        else:
            line = self._line_at(anchored.seq)
            if line is None or line_hash(line) != anchored.hash:
                problem = f"its line for seq {anchored.seq} is not the one its head anchor names: the log was rewritten"
        if problem:
            self._file.refuse(
                LogError(f"{self.path}: {problem}. Nothing will be appended: check it with `ds verify`, then `ds repair`")
            )

    def _line_at(self, seq: int) -> bytes | None:
        """The stored line of ``seq`` among the complete lines this handle knows (no
        catching up: what lies beyond may be a torn tail not yet recovered)."""
        start, offset = self._index.seek(self._file.fd, seq, self._size)
        for line, _end in scan_lines(self._file.fd, offset, self._size):
            if start == seq:
                return line
            start += 1
        return None

    def _load_index(self) -> None:
        """Under the lock: load ``.idx``, check it against the log, extend it to the tail."""
        self._index.load(self._file.fd, self._size, self._last_seq, persist=not self.read_only)

    def _catch_up(self) -> None:
        """Under the lock: absorb other processes' appends (or a replaced file)."""
        if self._replaced(missing=True):  # ds repair replaced the file: reopen it
            self._file.reopen()
            self._anchor.forget()
            self._generation += 1
            self._reset_state()
            self._ids = None
            torn = self._load_tail(recover=not self.read_only)
            self._load_index()
            if torn is not None:
                self._recover(torn)
                self.recovered = None
                raise LogError(f"{self.path} had a torn tail after a replace; reopen the log")
            return
        size = os.fstat(self._file.fd).st_size
        if self.torn is not None and size == self._torn_size:
            return  # the torn tail we keep: nothing new
        if size < self._size:  # lines this handle had seen are gone
            self._reload(f"it shrank to {size:,} bytes, below the {self._size:,} this handle had read")
        elif size > self._size:
            if not self._advance(size):
                self._reload(f"the bytes at offset {self._size:,} no longer continue the chain this handle had read")
                return
            if self._size != size and not self.read_only:  # a writer died mid-batch since we last looked
                torn = torn_after(self._file.fd, self._size, size)
                try:
                    recovered = quarantine(self._file.fd, self.path, torn)
                except OSError as exc:
                    raise self._write_failed(exc, "recovery of a torn tail", cut=False) from exc
                self._file.forget()  # the file shrank: sync the next append whatever it covers
                # Record it as part of this same append: it is the next seq.
                self._commit_recovered(recovered)

    def _reload(self, what: str) -> None:
        """Under the lock: the file is not what this handle last saw (``what``): read
        its tail afresh and trust no offset from before, the durable one included.

        Recovery never cuts lines that anyone has read, so this is not a crashed write:
        a writing handle refuses to append from now on (appending would bury the
        evidence) until ``ds repair``; reads go on, of what the file holds now.
        """
        self._file.forget()
        self._generation += 1
        self._reset_state()
        self._ids = None
        self._load_tail(recover=False, keep=True)
        self._load_index()
        if not self.read_only:
            self._file.refuse(
                LogError(
                    f"{self.path} changed under this handle: {what}. Nothing will be appended: "
                    "check it with `ds verify`, then `ds repair`"
                )
            )

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
        try:
            write_all(self._file.fd, line + b"\n")
        except OSError as exc:
            raise self._write_failed(exc, "recording a recovery") from exc
        self._index.add([(event.seq, self._size)], persist=True)
        self._set_tail(self._size + len(line) + 1, event.seq, line_hash(line))
        self._file.note_written(self._size)
        self._file.sync_through(self._size)

    def _refresh(self) -> None:
        """Without the lock: see complete lines other processes appended."""
        if self._replaced():  # ds repair swapped the file: reopen under the lock
            with self._lock:
                self._catch_up()
            return
        size = os.fstat(self._file.fd).st_size
        if self.torn is not None:
            if size == self._torn_size:
                return  # the torn tail we know of, still there: nothing to read beyond
            self.torn = None  # someone recovered it: look again
        if size > self._size:
            with self._lock.threads:
                if self._advance(size):
                    return
        elif size == self._size:
            return
        with self._lock:  # it shrank or was rewritten: look again under the lock
            self._catch_up()

    def _replaced(self, *, missing: bool = False) -> bool:
        """Whether the path now names another file than the one we have open.

        ``missing`` is the answer when the path names no file at all.
        """
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return missing
        return named.st_ino != os.fstat(self._file.fd).st_ino

    def _advance(self, size: int) -> bool:
        """Consume complete lines in ``[self._size, size)`` into the tail state and index.

        False, having consumed nothing, if the first of them does not chain onto the
        last line this handle knows: the file was rewritten under us.
        """
        seq, last, offset = self._last_seq, None, self._size
        new_offsets: list[tuple[int, int]] = []
        for line, end in scan_lines(self._file.fd, self._size, size, whole_batches=True):
            if last is None and seq and line_prev(line) != self._last_hash:
                return False
            seq += 1
            if (seq - 1) % INDEX_EVERY == 0:
                new_offsets.append((seq, offset))
            if self._ids is not None:
                found = line_id(line)
                if found:
                    self._ids[found] = seq
            last, offset = line, end
        if last is not None:
            self._set_tail(offset, line_seq(last), line_hash(last))
            self._index.add(new_offsets, persist=False)
        return True


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
        stored = _or_raise(results[0])
        self.appended.extend(stored)
        return stored


def _or_raise(result: list[Event] | ServiceError) -> list[Event]:
    """An append's events as stored, or raise the error that refused it."""
    if isinstance(result, ServiceError):
        raise result
    return result


class _WouldScan(Exception):
    """A commit on the loop thread would have to read the whole log first."""


class _CommitTarget:
    """The log as group commit sees it (:class:`ds_events.log.group.CommitTarget`)."""

    __slots__ = ("_log", "path", "policy")

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self.path = log.path
        self.policy = log.policy

    def write(self, batches: list[list[Event]]) -> tuple[list[list[Event]], int]:
        return self._log._write(batches)

    def try_write(self, batches: list[list[Event]]) -> tuple[list[list[Event]], int] | None:
        return self._log._try_write(batches)

    def sync_through(self, end: int) -> None:
        self._log._file.sync_through(end)

    def acknowledged(self) -> None:
        self._log._wake_followers()
