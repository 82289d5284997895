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

This module is the facade: the handle's state, opening, the public append calls and
closing. Its methods live by job beside it, each a part of :class:`EventLog`:
:mod:`.append` (seqs, one write, the sync, :class:`Transaction`), :mod:`.reads` (reads
by position and ``follow``), :mod:`.opening` (the tail, the anchor's word and a torn
tail on open) and :mod:`.catchup` (other processes' appends, a replaced or changed file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from ..errors import DiskFull
from ..events import Event, LogRecovered
from ..fdio import fsync_dir
from ..store import Head
from .anchor import HeadAnchor
from .append import Appends, CommitTarget, Transaction, or_raise
from .catchup import CatchUp
from .group import AsyncGroupCommit, ThreadGroupCommit
from .index import SparseIndex
from .lock import FileLock
from .opening import Opening
from .reads import Reads
from .recovery import Torn
from .sync import DISK_FULL_ERRNOS, DurableFile, as_log_error

if TYPE_CHECKING:
    import asyncio  # at run time only the async methods need it, and they run on a loop

__all__ = ["EventLog", "Transaction", "Policy", "MAX_EVENT_BYTES"]

E = TypeVar("E", bound=Event)

Policy = Literal["always", "group", "never"]
MAX_EVENT_BYTES = 8 << 20  # the largest stored line an append accepts (config log.max_event_bytes)


class EventLog(Appends, Reads, Opening, CatchUp):
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
    ``witness``: where the home keeps this log's head witness (see :mod:`.anchor`).
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
        witness: str | os.PathLike[str] | None = None,
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
        self._anchor = HeadAnchor(
            self.path, key, witness=None if witness is None else os.fspath(witness), sync=policy != "never"
        )
        self._file = DurableFile(
            self.path, intact=lambda: self._tail, anchor=None if read_only else self._anchor, read_only=read_only
        )
        try:
            self._lock = FileLock(None if read_only else self.path + ".lock")
        except BaseException:
            self._file.close(sync=False)
            raise
        self._index = SparseIndex(self.path + ".idx")
        target = CommitTarget(self)
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
                if created:
                    self._anchor.drop_witness()  # an earlier log of this name's: says nothing of this one
                anchored = self._trusted_anchor()
                torn = self._load_tail(recover=recover and not read_only, anchored=anchored[-1] if anchored else None)
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

    @overload
    def append(self, event: E) -> E: ...
    @overload
    def append(self, event: Sequence[Event]) -> list[Event]: ...
    def append(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Append one event (returns it as stored) or a batch atomically (returns a list).

        An event that carries an ``id`` already in the log is not appended again; the
        stored one is returned, so a retried append is idempotent.
        """
        single = isinstance(event, Event)
        events: list[Event] = [event] if isinstance(event, Event) else list(event)
        if not events:
            return []
        stored: list[Event]
        if self.policy == "group" and not self._lock.held_by_me():
            stored = self._threads.append(events)
        else:  # (inside this thread's own transaction a group could never form)
            stored = or_raise(self._commit([events])[0])  # refused (too large): nothing written
        return stored[0] if single else stored

    @overload
    async def append_async(self, event: E) -> E: ...
    @overload
    async def append_async(self, event: Sequence[Event]) -> list[Event]: ...
    async def append_async(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Like :meth:`append` without blocking the loop.

        Under ``group`` (and ``never``) concurrent calls share one write, and one sync
        covers every group written while the previous sync was in flight.
        """
        single = isinstance(event, Event)
        events: list[Event] = [event] if isinstance(event, Event) else list(event)
        if not events:
            return []
        if self.policy == "always":
            import asyncio  # loaded already: we run on its loop

            loop = asyncio.get_running_loop()
            stored = or_raise((await loop.run_in_executor(None, self._commit, [events]))[0])
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
