"""Appending: assign seqs and chain a batch, write it with one ``write``, sync per policy.

An append takes the append lock, catches up with other processes (:mod:`.catchup`),
encodes the batches onto the tail (:mod:`.format`: seqs, ``prev`` hashes, idempotent
ids, the size limit), writes them in one ``write`` and releases the lock; the sync
(:mod:`.sync`) runs after it, so one sync can cover several writers. A failed write
cuts the partial batch off and makes the handle refuse further appends. The methods
here are part of :class:`~ds_events.log.eventlog.EventLog`; :class:`Transaction` is
what ``EventLog.transaction`` yields, and ``CommitTarget`` is the log as group commit
(:mod:`.group`) sees it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from ..errors import LogError, ServiceError
from ..events import Event
from ..fdio import stat_or_none, write_all
from .anchor import HeadAnchor
from .format import encode_batches, line_id
from .index import INDEX_EVERY, SparseIndex
from .lock import FileLock
from .scan import scan_lines
from .sync import DurableFile, as_log_error

if TYPE_CHECKING:
    from .eventlog import EventLog

__all__ = ["Appends", "Transaction", "CommitTarget", "Stored", "or_raise"]

# What one batch of an append became: its events as stored, or the refusal of the whole
# batch (an event over log.max_event_bytes), which the caller raises.
Stored = list[Event] | ServiceError
E = TypeVar("E", bound=Event)

_NEVER_ANCHOR_EVERY = 64  # policy never: writes between head anchor updates (and one on close)


class Appends:
    """The write side of :class:`~ds_events.log.eventlog.EventLog`."""

    path: str
    quest_id: str
    actor: str
    run_id: str | None
    policy: Literal["always", "group", "never"]
    max_event_bytes: int
    _file: DurableFile
    _lock: FileLock
    _index: SparseIndex
    _anchor: HeadAnchor
    _size: int
    _last_seq: int
    _last_hash: str
    _tail: tuple[int, int, str]
    _ids: dict[str, int] | None
    _unanchored: int

    if TYPE_CHECKING:

        def get(self, seq: int) -> Event | None: ...

        def _catch_up(self) -> None: ...

        def _wake_followers(self) -> None: ...

    def _commit(self, batches: list[list[Event]]) -> list[Stored]:
        """Write ``batches`` as one write, then sync per policy; each batch as stored."""
        results, sync_to = self._write(batches)
        if sync_to:
            if self.policy != "never":
                self._file.sync_through(sync_to)
            self._wake_followers()
        return results

    def _write(self, batches: Iterable[list[Event]]) -> tuple[list[Stored], int]:
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

    def _try_write(self, batches: list[list[Event]]) -> tuple[list[Stored], int] | None:
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
    ) -> tuple[list[Stored], int]:
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


class Transaction:
    """Appends made while :meth:`EventLog.transaction` holds the lock."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self.appended: list[Event] = []

    @property
    def last_seq(self) -> int:
        return self._log._last_seq

    @overload
    def append(self, events: E) -> E: ...
    @overload
    def append(self, events: Sequence[Event]) -> list[Event]: ...
    def append(self, events: Event | Sequence[Event]) -> Event | list[Event]:
        """Write ``events`` now (one write, synced unless the policy is ``never``): one
        event in, that event as stored; a batch in, the batch as stored."""
        batch: list[Event] = [events] if isinstance(events, Event) else list(events)
        results, _ = self._log._commit_locked([batch])
        stored = or_raise(results[0])
        self.appended.extend(stored)
        return stored[0] if isinstance(events, Event) else stored



def or_raise(result: list[Event] | ServiceError) -> list[Event]:
    """An append's events as stored, or raise the error that refused it."""
    if isinstance(result, ServiceError):
        raise result
    return result



class _WouldScan(Exception):
    """A commit on the loop thread would have to read the whole log first."""



class CommitTarget:
    """The log as group commit sees it (:class:`ds_events.log.group.CommitTarget`)."""

    __slots__ = ("_log", "path", "policy")

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self.path: str = log.path
        self.policy: str = log.policy

    def write(self, batches: list[list[Event]]) -> tuple[list[Stored], int]:
        return self._log._write(batches)

    def try_write(self, batches: list[list[Event]]) -> tuple[list[Stored], int] | None:
        return self._log._try_write(batches)

    def sync_through(self, end: int) -> None:
        self._log._file.sync_through(end)

    def acknowledged(self) -> None:
        self._log._wake_followers()
