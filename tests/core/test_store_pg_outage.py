"""The PostgreSQL store when its server goes away: only our errors, bounded waits, and
retries with the same ids that land exactly once.

Each test that stops a server runs on a cluster of its own (``pg_cluster``), so the
session's cluster stays up for every other test. Waits are bounded by a generous
multiple of the configured ``connection_wait`` (1 s here) that is still below the
driver pool's own 30 s, so a wait that is not bounded by the setting fails the test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from ds_events.errors import LogConnectionLost, LogError, LogTimeout, LogUnavailable
from ds_events.events import ConversationMessage
from ds_events.log.postgres import LOCK_CLASS, PostgresStore
from tests.pg import Cluster, fresh_database

from .test_store_pg import terminate_connections

WAIT = 1.0  # connection_wait of the stores here, in seconds
BOUND = 25.0  # the most any failing call may take: well past WAIT, short of the pool's 30 s


def msg(i: int, *, id: str | None = None) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}", id=id or "")


class Outcome:
    """``call()`` on a thread of its own; :meth:`result` is what it returned or raised,
    and it must be done within ``bound`` seconds (else the wait was not bounded by the
    configuration)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._box: list[Any] = []
        self._worker = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._worker.start()

    def result(self, bound: float = BOUND) -> Any:
        self._worker.join(bound)
        assert not self._worker.is_alive(), f"still waiting after {bound} s with connection_wait={WAIT}"
        return self._box[0]

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._box.append(call())
        except BaseException as exc:
            self._box.append(exc)


def outcome(call: Callable[[], Any], *, bound: float = BOUND) -> Any:
    """What ``call()`` returned or raised, within ``bound`` seconds (see :class:`Outcome`)."""
    return Outcome(call).result(bound)


def until_stored(store: PostgresStore, events: list[ConversationMessage], *, attempts: int = 60) -> list[Any]:
    """Append ``events`` (the same ids each time) until the server takes them; each try
    fails within the store's bounded wait while it is still coming back."""
    for _attempt in range(attempts):
        found = outcome(lambda: store.append(events))
        if not isinstance(found, LogUnavailable):
            break
    assert isinstance(found, list), found
    return found


def waiting_on_the_quest_lock(admin: psycopg.Connection[Any], dbname: str) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
        (dbname,),
    ).fetchone()
    return bool(row and row[0])


def test_an_append_cut_off_by_a_server_stop_is_our_error_within_the_wait_and_retries_land_once(pg_cluster: Cluster) -> None:
    from tests.helpers import wait_until

    dsn = fresh_database(pg_cluster.dsn("postgres"))
    dbname = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    first = [msg(1, id="ev-a1"), msg(2, id="ev-a2")]
    second = [msg(3, id="ev-b1")]
    with PostgresStore(dsn, quest_id="q", connection_wait=WAIT) as store:
        store.append(msg(0, id="ev-0"))
        # Another session holds the quest's lock, so the append below is inside its
        # database transaction (BEGIN sent, waiting on the lock) when the server stops.
        holder = psycopg.connect(dsn, autocommit=True)
        try:
            holder.execute("SELECT pg_advisory_lock(%s, hashtext('q'))", (LOCK_CLASS,))
            appender = Outcome(lambda: store.append(first))
            wait_until(lambda: waiting_on_the_quest_lock(holder, dbname), timeout=30, what="the append to wait on the lock")
            pg_cluster.stop_server("fast")  # ends every session: the append's, mid-transaction
        finally:
            holder.close()
        cut = appender.result()
        assert isinstance(cut, LogConnectionLost) and isinstance(cut, LogUnavailable) and isinstance(cut, LogError), cut
        assert not isinstance(cut, psycopg.Error) and cut.code == "log_connection_lost"
        assert cut.to_dict()["error"] == "log_unavailable" and cut.to_dict()["reason"] == "log_connection_lost"
        assert "same event ids" in str(cut)

        # While the server is down, an append waits for a connection for the configured
        # time at most, then says so; so does a read.
        down = outcome(lambda: store.append(second))
        assert isinstance(down, LogTimeout) and down.code == "log_timeout", down
        assert f"within {WAIT:g} s" in str(down)
        read = outcome(store.read)
        assert isinstance(read, LogUnavailable) and read.code in ("log_timeout", "log_connection_lost"), read

        pg_cluster.start_server()
        assert [e.id for e in until_stored(store, first)] == ["ev-a1", "ev-a2"]
        assert [e.seq for e in store.append(first)] == [2, 3]  # a second retry finds them stored
        assert [e.seq for e in until_stored(store, second)] == [4]
        events = store.read()
        assert [(e.seq, e.id) for e in events] == [(1, "ev-0"), (2, "ev-a1"), (3, "ev-a2"), (4, "ev-b1")]
        assert store.verify().ok
    with psycopg.connect(dsn) as conn:  # each id once in the table itself
        rows = conn.execute("SELECT id, count(*) FROM ds_events WHERE quest_id = 'q' GROUP BY id ORDER BY id").fetchall()
    assert rows == [("ev-0", 1), ("ev-a1", 1), ("ev-a2", 1), ("ev-b1", 1)]


def test_a_store_opened_while_the_server_is_down_is_log_unavailable_and_works_once_it_is_back(pg_cluster: Cluster) -> None:
    dsn = fresh_database(pg_cluster.dsn("postgres"))
    pg_cluster.stop_server("fast")
    refused = outcome(lambda: PostgresStore(dsn, quest_id="q", connection_wait=WAIT))
    assert type(refused) is LogUnavailable and refused.code == "log_unavailable", refused
    assert refused.to_dict() == {"error": "log_unavailable", "reason": "log_unavailable", "message": str(refused)}
    pg_cluster.start_server()
    with PostgresStore(dsn, quest_id="q", connection_wait=WAIT) as store:
        assert store.append(msg(1)).seq == 1  # type: ignore[union-attr]


def test_a_connection_lost_inside_a_transaction_is_log_connection_lost_and_the_block_says_nothing_else(
    pg_database: str, pg_dsn: str
) -> None:
    with PostgresStore(pg_database, quest_id="q", connection_wait=WAIT) as store:
        with pytest.raises(LogConnectionLost) as caught:
            with store.transaction() as txn:
                txn.append(msg(1, id="t1"))
                assert terminate_connections(pg_dsn, pg_database) >= 1  # the lock's session among them
                txn.append(msg(2, id="t2"))
        assert caught.value.code == "log_connection_lost" and "lock went with it" in str(caught.value)
        assert not isinstance(caught.value.__context__, psycopg.Error) or caught.value.__cause__ is caught.value.__context__
        # The lock went with the session: the next transaction takes it at once.
        with store.transaction() as txn:
            assert txn.last_seq == 1
            txn.append(msg(2, id="t2"))
        assert [(e.seq, e.id) for e in store.read()] == [(1, "t1"), (2, "t2")]


def test_a_transaction_whose_connection_died_after_its_last_append_ends_cleanly(pg_database: str, pg_dsn: str) -> None:
    with PostgresStore(pg_database, quest_id="q", connection_wait=WAIT) as store:
        with store.transaction() as txn:
            txn.append(msg(1, id="t1"))
            assert terminate_connections(pg_dsn, pg_database) >= 1
        # (ending the block released nothing: the server ended the session and its lock)
        with store.transaction() as txn:
            txn.append(msg(2))
        assert [e.seq for e in store.read()] == [1, 2]


def test_a_dead_transaction_session_reads_its_head_as_our_error(pg_database: str, pg_dsn: str) -> None:
    with PostgresStore(pg_database, quest_id="q", connection_wait=WAIT) as store:
        with store.transaction() as txn:
            assert terminate_connections(pg_dsn, pg_database) >= 1
            with pytest.raises(LogConnectionLost):
                txn.last_seq  # noqa: B018 - the property reads the database


def test_what_else_the_database_refuses_is_log_database_error_not_a_driver_error(pg_database: str) -> None:
    with PostgresStore(pg_database, quest_id="q", connection_wait=WAIT) as store:
        store.append(msg(1))
        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute("ALTER TABLE ds_events RENAME TO ds_events_moved")  # an operator's mistake
        for call in (store.read, lambda: store.append(msg(2))):
            refused = outcome(call)
            assert isinstance(refused, LogUnavailable) and refused.code == "log_database_error", refused
            assert refused.to_dict()["reason"] == "log_database_error" and "UndefinedTable" in str(refused)
