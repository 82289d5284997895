"""``PostgresStore``: a quest's event log in PostgreSQL, for homes spread over machines.

An append is one database transaction: it takes the quest's advisory lock (so writers on
any machine take turns; never a sequence, which would leave gaps on rollback), reads
the head, inserts the new rows and notifies ``ds_events`` with the quest and its new
last seq, and commits. It returns once the commit returned: durability is the
database's (``synchronous_commit`` is set on for every connection this store opens).
A retried id is found under the lock and the stored event returned; the unique
constraint backs that up. ``transaction()`` holds the same lock at session level on one
connection for the whole block, and commits each ``txn.append`` at once, so that, as
with the file log, what a transaction appended is durable and readable by everyone the
moment ``append`` returns (services rely on that: git and worktree changes are kept once
their event is stored).

Readers never lock: they read rows by seq (:mod:`.follow` for a live follower).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import msgspec

from ...errors import LogError, ServiceError
from ...events import Event, LogRecovered, decode_line, new_event_ids
from ...store import Head, VerifyReport
from .. import MAX_EVENT_BYTES
from ..format import encode_batches
from .audit import audit_rows
from .errors import as_log_error, connection_lost
from .follow import follow_rows
from .pool import CONNECTION_WAIT, open_pool
from .schema import HEAD_SQL, KNOWN_SQL, LOCK_CLASS, PAGE, PAGE_SQL, insert_lines, read_event, read_head

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresStore", "PgTransaction"]

E = TypeVar("E", bound=Event)

T = TypeVar("T")


class PostgresStore:
    """The events of quest ``quest_id`` in the PostgreSQL database at ``dsn``.

    ``pool``: a pool from :func:`open_pool` to share between stores (several quests of
    one home): the schema exists and its connections commit durably; it stays open when
    this store closes. Without one the store opens its own (``pool_size`` connections
    at most). ``read_only``: appends are refused. Events whose stored line is longer
    than ``max_event_bytes`` are refused with :class:`ServiceError` ``event_too_large``,
    as by the file log.

    ``connection_wait``: the most seconds an append, a read or taking the lock waits
    for a connection (the server down or restarting, every pooled connection busy);
    then it fails with :class:`~ds_events.errors.LogTimeout`, or
    :class:`~ds_events.errors.LogConnectionLost` when the connection it was using
    broke. Every database failure is a :class:`LogError` (see :mod:`.errors`).
    """

    def __init__(
        self,
        dsn: str,
        *,
        quest_id: str,
        actor: str = "",
        pool: ConnectionPool | None = None,
        read_only: bool = False,
        max_event_bytes: int = MAX_EVENT_BYTES,
        pool_size: int = 8,
        connection_wait: float = CONNECTION_WAIT,
    ) -> None:
        if not quest_id:
            raise ValueError("a PostgreSQL store needs a quest_id: it names the quest's rows")
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be positive, not {max_event_bytes!r}")
        if not connection_wait > 0:
            raise ValueError(f"connection_wait must be a positive number of seconds, not {connection_wait!r}")
        self.dsn = dsn
        self.quest_id = quest_id
        self.actor = actor
        self.run_id: str | None = None  # stamped on appends that name no run (as EventLog.run_id)
        self.read_only = read_only
        self.max_event_bytes = max_event_bytes
        self.connection_wait = connection_wait
        self.location = f"quest {quest_id} of the PostgreSQL store"  # what errors and reports call it
        self.recovered: LogRecovered | None = None  # (the file log's recovery record and torn tail: a database
        self.torn = None  # commits whole transactions or none, so neither ever happens)
        self._own_pool = pool is None
        import psycopg

        try:
            if pool is None:
                pool = open_pool(dsn, max_size=pool_size, name=f"ds:{quest_id}", wait=connection_wait)
        except psycopg.Error as exc:
            raise as_log_error(exc, f"opening {self.location}", wait=connection_wait) from exc
        self._pool = pool
        self._closed = False
        self._local = threading.local()  # .txn: the transaction this thread holds

    @property
    def needs_reopen(self) -> bool:
        """Never: the pool replaces a broken connection by itself (as EventLog.needs_reopen)."""
        return False

    # -- appending --------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The highest seq stored, by any process."""
        return self.head().seq

    def head(self) -> Head:
        """The last seq and its chain hash (``(0, "")`` when empty)."""
        return self._run(lambda conn: read_head(conn, self.quest_id))

    @overload
    def append(self, event: E) -> E: ...
    @overload
    def append(self, event: Sequence[Event]) -> list[Event]: ...
    def append(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Append one event (returns it as stored) or a batch atomically (returns a list).

        An event that carries an ``id`` already stored is not appended again; the stored
        one is returned, so a retried append is idempotent.
        """
        single = isinstance(event, Event)
        events: list[Event] = [event] if isinstance(event, Event) else list(event)
        if not events:
            return []
        self._usable()
        txn: PgTransaction | None = getattr(self._local, "txn", None)
        if txn is not None:  # inside this thread's transaction: on its connection (the lock is ours)
            stored = txn._commit(events)
        else:
            ready = _with_ids(events)  # before the first try, so a retry is idempotent (see _run)
            stored = self._run(lambda conn: self._commit(conn, ready, locked=False))
        return stored[0] if single else stored

    @overload
    async def append_async(self, event: E) -> E: ...
    @overload
    async def append_async(self, event: Sequence[Event]) -> list[Event]: ...
    async def append_async(self, event: Event | Sequence[Event]) -> Event | list[Event]:
        """Like :meth:`append`, on a worker thread so the event loop keeps running."""
        import asyncio  # loaded already: we run on its loop

        return await asyncio.get_running_loop().run_in_executor(None, self.append, event)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PgTransaction]:
        """Hold the quest's lock across a read-decide-append sequence.

        Inside, no other process on any machine can append to this quest: reads see
        every event, and ``txn.append`` commits at once. Keep it short and synchronous,
        as with the file log. Nested in the same thread, it reuses the held lock.
        """
        self._usable()
        held: PgTransaction | None = getattr(self._local, "txn", None)
        if held is not None:
            yield PgTransaction(self, held._conn)
            return
        conn = self._run(self._lock_session, keep=True)
        txn = PgTransaction(self, conn)
        self._local.txn = txn
        try:
            yield txn
        finally:
            self._local.txn = None
            self._unlock(conn)

    # -- reading ----------------------------------------------------------------------

    def read(self, after_seq: int = 0, limit: int | None = None, types: Iterable[str] | None = None) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit``, optionally only ``types``."""
        query, params = self._select("seq > %s", after_seq, types, "ASC", limit)
        return self._run(lambda conn: [decode_line(line) for (line,) in conn.execute(query, params)])

    def get(self, seq: int) -> Event | None:
        """The event with this seq, or None."""
        return self._run(lambda conn: read_event(conn, self.quest_id, seq))

    def tail(self, n: int, types: Iterable[str] | None = None) -> list[Event]:
        """The last ``n`` events (of ``types`` if given) in order."""
        return self.read_reverse(limit=n, types=types)[::-1] if n > 0 else []

    def read_reverse(
        self, before_seq: int | None = None, limit: int = 100, types: Iterable[str] | None = None
    ) -> list[Event]:
        """Events with ``seq < before_seq`` (default: all), newest first."""
        before = (1 << 62) if before_seq is None else before_seq
        query, params = self._select("seq < %s", before, types, "DESC", limit)
        return self._run(lambda conn: [decode_line(line) for (line,) in conn.execute(query, params)])

    def iter_lines(self, after_seq: int = 0) -> Iterator[tuple[int, bytes]]:
        """``(seq, stored line)`` for every event after ``after_seq``, as stored, page by page."""
        for seq, line, *_columns in self._pages(after_seq):
            yield seq, line

    def follow(self, after_seq: int = 0, *, poll_interval: float = 0.05) -> AsyncGenerator[Event, None]:
        """Every event after ``after_seq`` as it is appended, by any process, forever.

        Listens for the appenders' notifications and reads by seq on each one for this
        quest; also reads every ``poll_interval`` seconds, so a notification missed only
        delays what follows. If its connection dies (a server restart), it connects and
        listens again and reads on from the last seq it yielded.
        """
        return follow_rows(self.dsn, self.quest_id, after_seq, poll_interval=poll_interval, location=self.location)

    # -- checking ---------------------------------------------------------------------

    def verify(self) -> VerifyReport:
        """Audit this quest's rows without changing them (``ds verify`` on this store):
        see :func:`.audit.audit_rows` for what is reported."""
        return audit_rows(self._pages(0), quest_id=self.quest_id, location=self.location)

    # -- closing ----------------------------------------------------------------------

    def close(self) -> None:
        """Release this handle (and its pool, if it opened one); later appends raise LogError."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        if self._own_pool:
            self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------

    def _usable(self) -> None:
        if self._closed:
            raise LogError(f"{self.location}: the store is closed")
        if self.read_only:
            raise LogError(f"{self.location}: this handle is read-only")

    def _run(self, work: Callable[[psycopg.Connection[Any]], T], *, keep: bool = False) -> T:
        """``work(conn)`` on a pooled connection, database errors as :class:`LogError`.

        If the connection turns out to be dead (the server restarted, or dropped it while
        it sat in the pool), ``work`` runs once more on a fresh one. That is safe for
        every caller: reads, taking the lock, and appends, whose events all have their
        ids before the first try, so if it committed and only the answer was lost, the
        retry finds them stored. A connection is waited for ``connection_wait`` seconds
        at most each time. ``keep``: the connection is the caller's to give back.
        """
        if getattr(self, "_closed", False):
            raise LogError(f"{self.location}: the store is closed")
        import psycopg

        lost: psycopg.Error | None = None  # what broke the first try's connection
        for attempt in (1, 2):
            conn = self._connection(lost)
            try:
                result = work(conn)
            except psycopg.Error as exc:
                broken = conn.broken
                self._pool.putconn(conn)
                if not broken:
                    raise as_log_error(exc, self.location) from exc
                if attempt == 2:
                    raise as_log_error(exc, self.location, lost=True) from exc
                lost = exc
                self._pool.check()  # the other idle connections likely died with it: drop them too
                continue
            except BaseException:
                self._pool.putconn(conn)
                raise
            if not keep:
                self._give_back(conn)
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _connection(self, lost: BaseException | None) -> psycopg.Connection[Any]:
        """A pooled connection within ``connection_wait`` seconds, else ``log_timeout``
        (``log_connection_lost`` if this is the retry after ``lost`` broke the first)."""
        import psycopg

        try:
            return self._pool.getconn(timeout=self.connection_wait)
        except psycopg.Error as exc:
            if lost is None:
                raise as_log_error(exc, self.location, wait=self.connection_wait) from exc
            raise connection_lost(
                self.location, lost, after=f", and no new connection came within {self.connection_wait:g} s"
            ) from exc

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        """Return ``conn`` to the pool, ending a transaction a read left open (a pool
        whose connections are not in autocommit, as a caller's pool may be). A rollback
        that fails leaves a broken connection, which the pool discards."""
        import psycopg
        from psycopg.pq import TransactionStatus

        if conn.info.transaction_status == TransactionStatus.INTRANS:
            with contextlib.suppress(psycopg.Error):
                conn.rollback()
        self._pool.putconn(conn)

    def _unlock(self, conn: psycopg.Connection[Any]) -> None:
        """End a transaction's session: roll back what the block left open (a failed
        statement), release the quest's lock, give the connection back.

        Never raises a database error: each ``txn.append`` committed on its own, so
        what the block appended stands, and a connection that cannot be unlocked is
        closed, which ends its session and so its lock (as when it broke: the server
        ends a dead session's locks itself)."""
        import psycopg

        try:
            if not conn.broken:
                conn.rollback()
                conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, self.quest_id))
                conn.commit()
        except psycopg.Error:
            conn.close()  # never hand a connection that may still hold the lock back to the pool
        except BaseException:
            conn.close()
            raise
        finally:
            self._give_back(conn)

    def _lock_session(self, conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
        conn.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", (LOCK_CLASS, self.quest_id))
        if not conn.autocommit:
            conn.commit()  # the session keeps the lock; each txn.append is its own commit
        return conn

    def _commit(self, conn: psycopg.Connection[Any], events: list[Event], *, locked: bool) -> list[Event]:
        """One database transaction: lock the quest (unless ``locked``: the session holds
        it), read the head, insert, notify, commit. Returns the events as stored."""
        qid = self.quest_id
        ids = [e.id for e in events if e.id]
        # Pipelined: BEGIN, the lock, the head and the id lookup go out together (one
        # round trip), then the insert, the notification and COMMIT (another). The head
        # is read by a statement after the lock, so its snapshot has every commit before.
        with conn.pipeline(), conn.transaction():
            if not locked:
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, qid))
            head = conn.execute(HEAD_SQL, (qid,))
            found = conn.execute(KNOWN_SQL, (qid, ids)) if ids else None
            row = head.fetchone()
            seq, prev = (0, "") if row is None else row
            known: dict[str, int] = dict(found.fetchall()) if found is not None else {}
            encoded = encode_batches(
                [events],
                seq=seq,
                prev=prev,
                offset=0,
                quest_id=qid,
                actor=self.actor,
                run_id=self.run_id,
                known=known.get,
                stored=lambda s: _stored(read_event(conn, qid, s), s),
                max_bytes=self.max_event_bytes,
            )
            result = encoded.results[0]
            if isinstance(result, ServiceError):  # too large: nothing of it is written
                raise result
            if encoded.lines:
                insert_lines(conn, qid, encoded.lines)
        return result

    def _select(
        self, where: str, bound: int, types: Iterable[str] | None, order: str, limit: int | None
    ) -> tuple[str, tuple[object, ...]]:
        query = f"SELECT line FROM ds_events WHERE quest_id = %s AND {where}"
        params: tuple[object, ...] = (self.quest_id, bound)
        if types is not None:
            query += " AND type = ANY(%s)"
            params += (list(types),)
        query += f" ORDER BY seq {order}"
        if limit is not None:
            query += " LIMIT %s"
            params += (max(0, limit),)
        return query, params

    def _pages(self, after_seq: int) -> Iterator[tuple[int, bytes, str, str, str]]:
        """``(seq, line, id, type, hash)`` of every row after ``after_seq``, a page per
        query (no connection is held between pages, however long the caller takes)."""
        while True:
            rows = self._run(
                lambda conn: conn.execute(PAGE_SQL, (self.quest_id, after_seq, PAGE)).fetchall()  # noqa: B023 - called at once
            )
            for seq, line, *columns in rows:
                yield (seq, bytes(line), *columns)
            if len(rows) < PAGE:
                return
            after_seq = rows[-1][0]


class PgTransaction:
    """Appends made while :meth:`PostgresStore.transaction` holds the quest's lock."""

    def __init__(self, store: PostgresStore, conn: psycopg.Connection[Any]) -> None:
        self._store = store
        self._conn = conn
        self.appended: list[Event] = []

    @property
    def last_seq(self) -> int:
        import psycopg

        try:
            with self._conn.transaction():
                return read_head(self._conn, self._store.quest_id).seq
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    @overload
    def append(self, events: E) -> E: ...
    @overload
    def append(self, events: Sequence[Event]) -> list[Event]: ...
    def append(self, events: Event | Sequence[Event]) -> Event | list[Event]:
        """Append and commit ``events`` now (the lock stays held): one event in, that
        event as stored; a batch in, the batch as stored."""
        batch: list[Event] = [events] if isinstance(events, Event) else list(events)
        if not batch:
            return []
        self._store._usable()
        stored = self._commit(batch)
        self.appended.extend(stored)
        return stored[0] if isinstance(events, Event) else stored

    def _commit(self, events: list[Event]) -> list[Event]:
        import psycopg

        try:
            return self._store._commit(self._conn, events, locked=True)
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: BaseException) -> BaseException:
        # No retry on another connection: the quest's lock went with this one, so the
        # block's read-decide-append premise no longer holds (another writer may be in).
        return as_log_error(
            exc,
            self._store.location,
            lost=self._conn.broken,
            after=": the transaction's lock went with it, so nothing more can be appended in it (run it again)",
        )


def _with_ids(events: list[Event]) -> list[Event]:
    """``events`` with an id each (new ones for those without), as encode_batches would give."""
    missing = sum(1 for e in events if not e.id)
    if not missing:
        return events
    fresh = iter(new_event_ids(missing))
    return [e if e.id else msgspec.structs.replace(e, id=next(fresh)) for e in events]


def _stored(event: Event | None, seq: int) -> Event:
    """The stored event a known id points at (its row was read under the lock, so it is
    there unless the table was edited meanwhile)."""
    if event is None:
        raise LogError(f"the row of seq {seq} went away while appending: run `ds verify`")
    return event
