"""The PostgreSQL store passes the store contract, has the protocol's shape, and keeps
the file log's chain; verify finds a row edited by SQL."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import psycopg
import pytest

from ds_events.errors import LogError
from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog, line_hash
from ds_events.log.postgres import PostgresStore

from .store_contract import StoreContract, msg

WRITER = str(Path(__file__).with_name("log_writer.py"))


class TestPostgresStore(StoreContract):
    @pytest.fixture
    def open_store(self, pg_database):
        def factory(actor: str = "test") -> PostgresStore:
            return PostgresStore(pg_database, quest_id="q", actor=actor)

        return factory


def test_quests_in_one_database_keep_their_own_seqs_chains_and_ids(pg_database):
    with PostgresStore(pg_database, quest_id="a") as a, PostgresStore(pg_database, quest_id="b") as b:
        first = a.append(msg(1, id="SAME"))
        assert b.append(msg(2, id="SAME")).seq == 1  # ids are unique within a quest
        a.append(msg(3))
        assert [e.content for e in a.read()] == ["m1", "m3"] and [e.content for e in b.read()] == ["m2"]
        assert a.get(2).prev == line_hash(encode(first))


def test_rows_hold_the_encoded_lines_byte_for_byte(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        stored = store.append([msg(i) for i in range(3)])
        with psycopg.connect(pg_database) as conn:
            rows = conn.execute("SELECT seq, line, hash FROM ds_events WHERE quest_id = 'q' ORDER BY seq").fetchall()
        assert [(s, bytes(line), h) for s, line, h in rows] == [(e.seq, encode(e), line_hash(encode(e))) for e in stored]
        assert store.verify().ok and store.verify().last_seq == 3


def test_verify_reports_a_row_edited_by_sql_at_its_seq(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append([msg(i) for i in range(6)])
        with psycopg.connect(pg_database) as conn:
            conn.execute(
                "UPDATE ds_events SET line = convert_to(replace(convert_from(line, 'UTF8'), '\"m3\"', '\"mX\"'), 'UTF8') "
                "WHERE quest_id = 'q' AND seq = 4"
            )
        assert store.get(4).content == "mX"
        report = store.verify()
        assert not report.ok
        assert [p.reason.split(":")[0] for p in report.problems] == ["seq 4", "seq 5"]
        assert "edited" in report.problems[0].reason and "broken hash chain" in report.problems[1].reason


def test_verify_reports_a_row_whose_columns_were_edited_by_sql(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append([msg(i) for i in range(3)])
        with psycopg.connect(pg_database) as conn:
            conn.execute("UPDATE ds_events SET id = 'forged' WHERE quest_id = 'q' AND seq = 2")
            conn.execute("UPDATE ds_events SET type = 'quest.control' WHERE quest_id = 'q' AND seq = 3")
        reasons = [p.reason for p in store.verify().problems]
        assert len(reasons) == 2 and reasons[0].startswith("seq 2: ") and reasons[1].startswith("seq 3: ")
        assert "'forged'" in reasons[0] and "'quest.control'" in reasons[1] and all("edited" in r for r in reasons)


def test_verify_reports_a_removed_row_as_a_gap_and_a_broken_chain(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append([msg(i) for i in range(5)])
        with psycopg.connect(pg_database) as conn:
            conn.execute("DELETE FROM ds_events WHERE quest_id = 'q' AND seq = 2")
        reasons = [p.reason for p in store.verify().problems]
        assert len(reasons) == 2 and all(r.startswith("seq 3: ") for r in reasons)
        assert "expected seq 2" in reasons[0] and "broken hash chain" in reasons[1]


def test_verify_reports_a_batch_whose_last_rows_are_gone(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append(msg(0))
        store.append([msg(i) for i in range(1, 4)])
        with psycopg.connect(pg_database) as conn:
            conn.execute("DELETE FROM ds_events WHERE quest_id = 'q' AND seq = 4")
        report = store.verify()
        assert [p.reason for p in report.problems] == ["seq 2: incomplete batch at the end: its last line is missing"]
        assert report.last_seq == 3


def test_a_too_large_event_is_refused_and_nothing_is_stored(pg_database):
    from ds_events.errors import ServiceError

    with PostgresStore(pg_database, quest_id="q", max_event_bytes=500) as store:
        store.append(msg(1))
        with pytest.raises(ServiceError) as caught:
            store.append([msg(2), ConversationMessage(role="user", content="x" * 1000)])
        assert caught.value.code == "event_too_large"
        assert store.last_seq == 1


def test_a_read_only_handle_reads_and_refuses_appends(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append(msg(1))
    with PostgresStore(pg_database, quest_id="q", read_only=True) as ro:
        assert [e.content for e in ro.read()] == ["m1"]
        with pytest.raises(LogError, match="read-only"):
            ro.append(msg(2))
        assert ro.last_seq == 1


async def until(condition) -> None:  # type: ignore[no-untyped-def]
    while not condition():
        await asyncio.sleep(0.01)


async def test_follow_is_woken_by_another_process_append_through_its_notification(pg_database):
    # The poll never fires within the test: only the appender's NOTIFY can wake it.
    with PostgresStore(pg_database, quest_id="q") as store, PostgresStore(pg_database, quest_id="other") as other:
        store.append(msg(0))
        got: list[str] = []
        follower = store.follow(poll_interval=3600)
        got.append((await anext(follower)).content)  # listening now, and waiting
        other.append(msg(99))  # another quest's notification wakes it, for nothing
        writer = await asyncio.create_subprocess_exec(
            sys.executable, WRITER, f"pg:q:{pg_database}", "w", "5", "group", stdout=asyncio.subprocess.PIPE
        )
        try:
            while len(got) < 6:
                got.append((await asyncio.wait_for(anext(follower), 60)).content)
        finally:
            await writer.communicate()
            await follower.aclose()
        assert got == ["m0", "w-0", "w-1", "w-2", "w-3", "w-4"]


async def test_follow_still_sees_events_whose_notification_never_came(pg_database):
    # Rows written without a NOTIFY (as if the notification was lost): the follower's
    # poll reads them by seq, in order, and then the next notified append.
    with PostgresStore(pg_database, quest_id="q") as store, PostgresStore(pg_database, quest_id="src") as src:
        src.append([ConversationMessage(role="user", content=f"silent{i}", quest_id="q") for i in range(3)])
        got: list[int] = []

        async def consume() -> None:
            async for event in store.follow(poll_interval=0.05):
                got.append(event.seq)
                if event.seq == 4:
                    return

        task = asyncio.create_task(consume())
        await asyncio.sleep(0)  # let it start listening
        with psycopg.connect(pg_database) as conn:
            conn.execute(
                "INSERT INTO ds_events SELECT 'q', seq, id, type, hash, line FROM ds_events WHERE quest_id = 'src'"
            )
        await asyncio.wait_for(until(lambda: len(got) >= 3), 30)  # before any notified append
        assert store.append(msg(4)).seq == 4  # chained onto the silent rows
        await asyncio.wait_for(task, 30)
        assert got == [1, 2, 3, 4]
        assert store.verify().ok


def test_a_store_that_cannot_be_reached_fails_to_open_with_a_log_error(pg_dsn):
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from tests.pg import free_port

    nowhere = make_conninfo(**{**conninfo_to_dict(pg_dsn), "port": str(free_port())})
    with pytest.raises(LogError, match="opening quest q of the PostgreSQL store"):
        PostgresStore(nowhere, quest_id="q")
    with pytest.raises(ValueError, match="quest_id"):
        PostgresStore(pg_dsn, quest_id="")


def test_a_plain_append_inside_this_thread_transaction_goes_through_its_lock(pg_database):
    with PostgresStore(pg_database, quest_id="q") as store:
        with store.transaction() as txn:
            txn.append(msg(1))
            assert store.append(msg(2)).seq == 2  # not a deadlock on the lock txn holds
            with store.transaction() as inner:  # nested: the same lock
                inner.append(msg(3))
            assert txn.last_seq == 3
        assert [e.seq for e in txn.appended] == [1]
        assert [e.content for e in store.read()] == ["m1", "m2", "m3"]


def test_a_transaction_keeps_other_handles_appends_waiting_until_it_ends(pg_database):
    import threading

    with PostgresStore(pg_database, quest_id="q") as store, PostgresStore(pg_database, quest_id="q") as other:
        done = threading.Event()
        seqs: list[int] = []

        def append_from_other() -> None:
            seqs.append(other.append(msg(9)).seq)  # type: ignore[union-attr]
            done.set()

        with store.transaction() as txn:
            txn.append(msg(1))
            worker = threading.Thread(target=append_from_other)
            worker.start()
            done.wait(0.3)  # room to try: without the lock it would take seq 2 now
            txn.append(msg(2))
        worker.join(30)
        assert seqs == [3] and [e.content for e in store.read()] == ["m1", "m2", "m9"]


def test_the_same_events_make_the_same_bytes_in_the_file_log_and_the_postgres_store(pg_database, tmp_path):
    def events(k: int) -> list:
        return [
            ConversationMessage(role="user", content=f"é{i}", id=f"id-{k}-{i}", ts="2026-12-01T00:00:00.000000Z", actor="a")
            for i in range(3)
        ]

    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", policy="always") as log, PostgresStore(pg_database, quest_id="q") as store:
        for k in range(4):
            log.append(events(k))
            store.append(events(k))
        assert list(store.iter_lines()) == list(log.iter_lines())
        assert store.head() == log.head()
    assert path.read_bytes() == b"".join(line + b"\n" for _, line in store_lines(pg_database, "q"))


def store_lines(dsn: str, quest_id: str) -> list[tuple[int, bytes]]:
    with PostgresStore(dsn, quest_id=quest_id, read_only=True) as store:
        return list(store.iter_lines())


def terminate_connections(admin_dsn: str, dsn: str) -> int:
    """End every session connected to the database ``dsn`` names, as a restarting server would."""
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
            (psycopg.conninfo.conninfo_to_dict(dsn)["dbname"],),
        ).fetchone()
    return row[0] if row else 0


def test_the_store_goes_on_after_the_server_drops_every_pooled_connection(pg_database, pg_dsn):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append(msg(1))
        assert terminate_connections(pg_dsn, pg_database) >= 1  # (the pool's idle ones)
        assert store.append(msg(2)).seq == 2  # a dead connection is replaced, not reported
        assert terminate_connections(pg_dsn, pg_database) >= 1  # (the pool's idle ones)
        with store.transaction() as txn:
            txn.append(msg(3))
        assert terminate_connections(pg_dsn, pg_database) >= 1  # (the pool's idle ones)
        assert [e.content for e in store.read()] == ["m1", "m2", "m3"] and store.verify().ok


async def test_a_follower_whose_connection_dies_listens_again_and_misses_nothing(pg_database, pg_dsn):
    with PostgresStore(pg_database, quest_id="q") as store:
        store.append(msg(0))
        follower = store.follow(poll_interval=3600)  # only notifications wake it
        assert (await anext(follower)).seq == 1
        waiting = asyncio.ensure_future(anext(follower))
        await asyncio.sleep(0.2)  # (it is waiting on its notifications now)
        assert terminate_connections(pg_dsn, pg_database) >= 1
        store.append(msg(1))  # lands while it has no connection, or just after it listens again
        store.append(msg(2))
        try:
            assert (await asyncio.wait_for(waiting, 30)).seq == 2
            assert (await asyncio.wait_for(anext(follower), 30)).seq == 3
        finally:
            await follower.aclose()
