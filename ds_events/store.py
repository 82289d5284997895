"""The store contract: what the services rely on from an event store.

The JSONL file log (:class:`ds_events.log.EventLog`) is one implementation; the
PostgreSQL store (:class:`ds_events.log.postgres.PostgresStore`) is the other. Both
keep the same hash chain, byte for byte: event ``n+1``'s ``prev`` is
:func:`ds_events.log.line_hash` of ``encode(event n)``, so a log can move between
stores and still verify. ``tests/core/store_contract.py`` is the suite every store
must pass; a store supplies only a factory.

The protocol is ``runtime_checkable``, so ``isinstance(store, EventStore)`` checks that
every member exists; ``tests/core/test_store_file.py`` also compares signatures.

What an audit of a log finds (:class:`VerifyReport`, a list of :class:`Problem`) is
part of the contract too: :mod:`ds_events.verify` fills one from a log's lines and
anchors, and a store that can see more than its lines (:class:`AuditedStore`: the
PostgreSQL store's rows) builds its own from these types, so no store imports the
auditor (``ds_events.verify`` imports the stores, never the other way).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeVar, overload, runtime_checkable

from .events import Event, LogRecovered

__all__ = ["EventStore", "StoreTransaction", "Head", "AuditedStore", "Problem", "VerifyReport"]

E = TypeVar("E", bound=Event)


class Head(NamedTuple):
    """The last event of a store: its seq and its chain hash (``(0, "")`` when empty)."""

    seq: int
    hash: str


@dataclass(frozen=True)
class Problem:
    """One thing an audit found wrong, where it is and, if an anchor caught it, which."""

    line: int  # 1-based line number in the file, or row in seq order (0: not about one line)
    offset: int  # byte offset of the line's start (-1: a store's row, no file)
    reason: str
    anchor: str = ""  # the anchor that caught it, if an anchor did

    def __str__(self) -> str:
        if self.offset < 0:
            where = f"row {self.line}" if self.line else "the store"
        else:
            where = f"line {self.line} (byte {self.offset})" if self.line else f"byte {self.offset}"
        return f"{where}: {self.reason}" + (f" [caught by the {self.anchor}]" if self.anchor else "")


@dataclass
class VerifyReport:
    """What an audit of one log found (``ds verify``): ``ok`` when nothing."""

    path: str
    lines: int = 0
    last_seq: int = 0
    problems: list[Problem] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)  # the anchors that were checked
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why

    @property
    def ok(self) -> bool:
        return not self.problems


@runtime_checkable
class StoreTransaction(Protocol):
    """Appends made while :meth:`EventStore.transaction` holds the store's append lock."""

    appended: list[Event]

    @property
    def last_seq(self) -> int: ...

    @overload
    def append(self, events: E) -> E: ...
    @overload
    def append(self, events: Sequence[Event]) -> list[Event]: ...
    def append(self, events: Event | Sequence[Event]) -> Event | list[Event]:
        """Append now (durably per the store's policy): one event in, that event as
        stored (its own type); a batch in, the batch as stored."""
        ...


@runtime_checkable
class EventStore(Protocol):
    """An append-only, hash-chained sequence of typed events with seqs 1, 2, 3 …

    Appends assign the envelope (seq, id, ts, quest_id, actor, prev). An event whose
    ``id`` is already stored is not appended again: the stored one is returned. A batch
    is all or nothing. An append returns only once it is durable under the store's
    policy. Failures raise :class:`ds_events.errors.LogError` (``DiskFull`` for a full
    disk); a store that refused a write refuses further appends until reopened.
    """

    quest_id: str
    # Who appends through this handle: stamped on every event it appends.
    actor: str
    # Stamped on every appended event that names no run itself (a turn's MCP servers).
    run_id: str | None
    # The ``log.recovered`` event opening this handle recorded (a torn tail cut off), or
    # None; the file store's alone (a database never has a torn tail).
    recovered: LogRecovered | None

    @property
    def last_seq(self) -> int:
        """The highest seq stored, including other processes' appends."""
        ...

    @property
    def needs_reopen(self) -> bool:
        """Whether this handle refuses appends until it is reopened (after a failed write)."""
        ...

    @overload
    def append(self, event: E) -> E: ...
    @overload
    def append(self, event: Sequence[Event]) -> list[Event]: ...
    def append(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Append one event (returns it as stored, its own type) or a batch atomically
        (returns a list)."""
        ...

    @overload
    async def append_async(self, event: E) -> E: ...
    @overload
    async def append_async(self, event: Sequence[Event]) -> list[Event]: ...
    async def append_async(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Like :meth:`append`, without blocking the event loop."""
        ...

    def transaction(self) -> AbstractContextManager[StoreTransaction]:
        """Hold the append lock across a read-decide-append sequence."""
        ...

    def read(self, after_seq: int = 0, limit: int | None = None, types: Iterable[str] | None = None) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit``, optionally only ``types``."""
        ...

    def get(self, seq: int) -> Event | None:
        """The event with this seq, or None."""
        ...

    def tail(self, n: int, types: Iterable[str] | None = None) -> list[Event]:
        """The last ``n`` events (of ``types`` if given) in order."""
        ...

    def read_reverse(
        self, before_seq: int | None = None, limit: int = 100, types: Iterable[str] | None = None
    ) -> list[Event]:
        """Events with ``seq < before_seq`` (default: all), newest first."""
        ...

    def iter_lines(self, after_seq: int = 0) -> Iterator[tuple[int, bytes]]:
        """``(seq, stored line)`` for every event after ``after_seq``, as stored."""
        ...

    def follow(self, after_seq: int = 0, *, poll_interval: float = 0.05) -> AsyncGenerator[Event, None]:
        """Every event after ``after_seq`` as it is appended, by any process, forever.
        Close it (``aclose``) when done: a database store's follower holds a connection."""
        ...

    def head(self) -> Head:
        """The last seq and its chain hash."""
        ...

    def close(self) -> None:
        """Sync what this handle wrote and release it; later appends raise LogError."""
        ...


@runtime_checkable
class AuditedStore(Protocol):
    """A store that can check more than its lines show (the PostgreSQL store: a row whose
    seq, id, type or hash column is not what its line says), without changing anything."""

    def verify(self) -> VerifyReport:
        """Every problem found, at the row (or line) in seq order where it is."""
        ...
