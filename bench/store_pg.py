"""The PostgreSQL store vs the file store, in the same run, on the same disk.

Measured, each store next to the other (and, where one exists, next to a raw baseline
of the same work without our code):

1. single durable append: one event per call, acknowledged only once durable
   (file: ``policy always``, one ``fdatasync`` each; PostgreSQL: one commit each,
   ``synchronous_commit on``); raw baselines: ``os.write`` + ``fdatasync`` of the same
   bytes, and a plain ``INSERT`` + ``COMMIT`` of the same row;
2. 32 concurrent appenders: 32 threads of one process appending to one quest
   (file: ``policy group``, which shares writes and syncs; PostgreSQL: a 32-connection
   pool, one transaction per append);
3. replay of a 1,000,000-event log through the status projection, and the raw read +
   typed decode of the same lines (file: reading the file; PostgreSQL: one
   server-side cursor over the rows);
4. a tail read near the end of that log (``read(after_seq=N-10)``);
5. appends/s with 1, 4 and 16 writer processes, all on one quest, and each on its own
   quest (of 16).

Without ``--dsn`` a throw-away cluster is started (tests/pg.py's, as the tests use).
Every figure is a median over ``--rounds`` interleaved rounds with its spread.

Usage: python3 bench/store_pg.py [--dsn DSN] [--events 1000000] [--appends 200] [--seconds 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _util  # noqa: F401 - puts the repository on sys.path
import msgspec
from _rounds import ratios, run_rounds, spread, timed
from _util import append_in_batches

from ds_events.events import AnyEvent, ConversationMessage, QuestCreated, encode
from ds_events.log import EventLog
from ds_events.log.postgres import PostgresStore, configure_connection
from ds_events.views import Views
from projections.status import PROJECTION as STATUS

BODY = "a note about the run: loss 0.4312 at step 1200, lr 3e-4, batch 256, tokens/s 91,200"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="an empty PostgreSQL database (default: start a throw-away cluster)")
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the long log (replay, tail read)")
    parser.add_argument("--appends", type=int, default=200, help="single durable appends per round")
    parser.add_argument("--seconds", type=float, default=3.0, help="how long each writer-process run lasts")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cluster = None
    if args.dsn is None:
        from tests.pg import Cluster, fresh_database

        cluster = Cluster()
        cluster.start()
        args.dsn = fresh_database(cluster.dsn("postgres"))
    try:
        with tempfile.TemporaryDirectory(prefix="ds-bench-pg-") as tmp:
            print(f"machine: {os.cpu_count()} cores; file store in {tmp}; PostgreSQL {_server_version(args.dsn)} "
                  f"(synchronous_commit on, fsync on) on the same disk; {args.rounds} rounds, interleaved, median (spread)")
            single_append(args, Path(tmp))
            concurrent_appenders(args, Path(tmp))
            long_log(args, Path(tmp))
            writer_processes(args, Path(tmp))
    finally:
        if cluster is not None:
            cluster.stop()


# -- 1. single durable append ---------------------------------------------------------------


def single_append(args: argparse.Namespace, tmp: Path) -> None:
    import psycopg

    n = args.appends
    line = encode(ConversationMessage(role="user", content=BODY, seq=1, id="x" * 26, quest_id="single")) + b"\n"
    with psycopg.connect(args.dsn) as conn:
        configure_connection(conn)
        conn.execute("CREATE TABLE IF NOT EXISTS raw_rows (quest_id text, seq bigint, id text, type text, hash text, "
                     "line bytea, PRIMARY KEY (quest_id, seq), UNIQUE (quest_id, id))")  # fmt: skip
        conn.commit()
    counter = iter(range(1, 1 << 62))

    def raw_file() -> float:
        path = tmp / f"raw-{next(counter)}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            return timed(lambda: [(os.write(fd, line), os.fdatasync(fd)) for _ in range(n)])
        finally:
            os.close(fd)

    def file_store() -> float:
        with EventLog(tmp / f"file-{next(counter)}.jsonl", quest_id="single", actor="bench", policy="always") as log:
            return timed(lambda: [log.append(ConversationMessage(role="user", content=BODY)) for _ in range(n)])

    def raw_pg() -> float:
        quest = f"raw-{next(counter)}"
        with psycopg.connect(args.dsn) as conn:
            configure_connection(conn)

            def run() -> None:
                for i in range(1, n + 1):
                    conn.execute("INSERT INTO raw_rows VALUES (%s, %s, %s, %s, %s, %s)", (quest, i, f"id{i}", "t", "h", line))
                    conn.commit()

            return timed(run)

    def pg_store() -> float:
        with PostgresStore(args.dsn, quest_id=f"single-{next(counter)}", actor="bench", pool_size=1) as log:
            return timed(lambda: [log.append(ConversationMessage(role="user", content=BODY)) for _ in range(n)])

    times = run_rounds({"raw_file": raw_file, "file": file_store, "raw_pg": raw_pg, "pg": pg_store}, args.rounds)
    rate = {k: [n / t for t in v] for k, v in times.items()}
    print(f"\n1. single durable append ({n} per round, one at a time)")
    print(f"   raw os.write + fdatasync:        {spread(rate['raw_file'], '{:,.0f}', ' appends/s')}")
    print(f"   file store (policy always):      {spread(rate['file'], '{:,.0f}', ' appends/s')}")
    print(f"   raw INSERT + COMMIT (one row):   {spread(rate['raw_pg'], '{:,.0f}', ' appends/s')}")
    print(f"   PostgreSQL store:                {spread(rate['pg'], '{:,.0f}', ' appends/s')}")
    print(f"   ratio file/raw file:             {spread(ratios(rate['file'], rate['raw_file']), '{:.2f}', 'x')}")
    print(f"   ratio PostgreSQL/raw INSERT:     {spread(ratios(rate['pg'], rate['raw_pg']), '{:.2f}', 'x')}")
    print(f"   ratio PostgreSQL/file:           {spread(ratios(rate['pg'], rate['file']), '{:.2f}', 'x')}")


# -- 2. 32 concurrent appenders -------------------------------------------------------------


def concurrent_appenders(args: argparse.Namespace, tmp: Path) -> None:
    threads, each = 32, max(5, args.appends // 8)
    counter = iter(range(1, 1 << 62))

    def run(log: Any) -> float:
        start = threading.Barrier(threads + 1)

        def worker() -> None:
            start.wait()
            for _ in range(each):
                log.append(ConversationMessage(role="user", content=BODY))

        workers = [threading.Thread(target=worker) for _ in range(threads)]
        for w in workers:
            w.start()
        began = time.perf_counter()
        start.wait()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - began
        assert log.last_seq == threads * each
        return elapsed

    def file_store() -> float:
        with EventLog(tmp / f"conc-{next(counter)}.jsonl", quest_id="conc", actor="bench", policy="group") as log:
            return run(log)

    def pg_store() -> float:
        with PostgresStore(args.dsn, quest_id=f"conc-{next(counter)}", actor="bench", pool_size=threads) as log:
            log.head()  # the pool is open
            return run(log)

    times = run_rounds({"file": file_store, "pg": pg_store}, args.rounds)
    rate = {k: [threads * each / t for t in v] for k, v in times.items()}
    print(f"\n2. 32 concurrent appenders (threads of one process, one quest, {each} durable appends each)")
    print(f"   file store (policy group):       {spread(rate['file'], '{:,.0f}', ' appends/s')}")
    print(f"   PostgreSQL store (32 conns):     {spread(rate['pg'], '{:,.0f}', ' appends/s')}")
    print(f"   ratio PostgreSQL/file:           {spread(ratios(rate['pg'], rate['file']), '{:.2f}', 'x')}")


# -- 3 and 4. a long log: replay and tail read ---------------------------------------------


def long_log(args: argparse.Namespace, tmp: Path) -> None:
    import psycopg

    n = args.events
    path = tmp / "long.jsonl"

    def events() -> Any:
        yield QuestCreated(title="bench")
        for i in range(n - 1):
            yield ConversationMessage(role="user" if i % 2 else "assistant", content=f"message {i} {BODY}")

    began = time.perf_counter()
    with EventLog(path, quest_id="long", actor="bench", policy="never") as log:
        append_in_batches(log, events(), 10_000)
    built_file = time.perf_counter() - began
    began = time.perf_counter()
    with PostgresStore(args.dsn, quest_id="long", actor="bench") as store:
        append_in_batches(store, events(), 5_000)
        assert store.last_seq == n
    built_pg = time.perf_counter() - began
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE ds_events")
        table = conn.execute("SELECT pg_total_relation_size('ds_events')").fetchone()[0]  # type: ignore[index]
    print(f"\n3. replay of a {n:,}-event log through the status projection "
          f"(file {path.stat().st_size / 1e6:.0f} MB, built in {built_file:.0f} s; "
          f"table + indexes {table / 1e6:.0f} MB, built in {built_pg:.0f} s)")  # fmt: skip
    decoder = msgspec.json.Decoder(AnyEvent)

    def raw_file() -> None:
        with open(path, "rb") as f:
            for line in f:
                decoder.decode(line)

    def raw_pg() -> None:
        with psycopg.connect(args.dsn) as conn, conn.cursor(name="raw") as cur:
            cur.itersize = 5_000
            cur.execute("SELECT line FROM ds_events WHERE quest_id = 'long' ORDER BY seq")
            for (line,) in cur:
                decoder.decode(line)

    def replay(open_log: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with open_log() as log:
                views = Views(log, tmp, [STATUS], snapshot_dir=tmp / "no-snapshots")
                views.catch_up(keep=False)
                assert views.state("status").last_seq == n

        return run

    rounds = max(1, min(args.rounds, 3))  # each round reads the whole log four times
    times = run_rounds(
        {
            "raw_file": lambda: timed(raw_file),
            "file": lambda: timed(replay(lambda: EventLog(path, quest_id="long", read_only=True))),
            "raw_pg": lambda: timed(raw_pg),
            "pg": lambda: timed(replay(lambda: PostgresStore(args.dsn, quest_id="long", read_only=True))),
        },
        rounds,
    )
    rate = {k: [n / t for t in v] for k, v in times.items()}
    print(f"   raw read + typed decode, file:   {spread(rate['raw_file'], '{:,.0f}', ' events/s')}")
    print(f"   replay, file store:              {spread(rate['file'], '{:,.0f}', ' events/s')}")
    print(f"   raw cursor + typed decode, PG:   {spread(rate['raw_pg'], '{:,.0f}', ' events/s')}")
    print(f"   replay, PostgreSQL store:        {spread(rate['pg'], '{:,.0f}', ' events/s')}")
    print(f"   ratio file replay/raw file:      {spread(ratios(rate['file'], rate['raw_file']), '{:.2f}', 'x')}")
    print(f"   ratio PG replay/raw PG cursor:   {spread(ratios(rate['pg'], rate['raw_pg']), '{:.2f}', 'x')}")
    print(f"   ratio PostgreSQL/file replay:    {spread(ratios(rate['pg'], rate['file']), '{:.2f}', 'x')}")

    reads = 200
    with EventLog(path, quest_id="long", read_only=True) as flog, PostgresStore(args.dsn, quest_id="long", read_only=True) as plog:

        def tail(log: Any) -> float:
            def run() -> None:
                for i in range(reads):
                    got = log.read(after_seq=n - 10 - i % 50, limit=10)
                    assert len(got) == 10

            return timed(run) / reads

        times = run_rounds({"file": lambda: tail(flog), "pg": lambda: tail(plog)}, args.rounds)
    us = {k: [t * 1e6 for t in v] for k, v in times.items()}
    print(f"\n4. tail read near the end of {n:,} events (read 10 events after seq N-10-k; {reads} per round)")
    print(f"   file store (sparse index):       {spread(us['file'], '{:,.0f}', ' µs/read')}")
    print(f"   PostgreSQL store (primary key):  {spread(us['pg'], '{:,.0f}', ' µs/read')}")
    print(f"   ratio PostgreSQL/file time:      {spread(ratios(us['pg'], us['file']), '{:.2f}', 'x')}")


# -- 5. writer processes --------------------------------------------------------------------


def writer_processes(args: argparse.Namespace, tmp: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    print(f"\n5. writer processes, single durable appends for {args.seconds:g} s (file: policy group, one append at a "
          "time per process, so one fdatasync each; PostgreSQL: one commit each)")  # fmt: skip
    print("   writers  layout        file appends/s          PostgreSQL appends/s    ratio PG/file (median, min–max)")
    counter = iter(range(1, 1 << 62))
    rounds = max(1, min(args.rounds, 3))
    for writers in (1, 4, 16):
        for layout in ("one quest", "own quests"):

            def run(store: str) -> float:
                tag = f"w{writers}-{layout[0]}-{next(counter)}"
                quests = [f"{tag}-{i if layout == 'own quests' else 0}" for i in range(writers)]
                return _run_writers(ctx, store, args.dsn, tmp, quests, args.seconds)

            rates = run_rounds({"file": lambda: run("file"), "pg": lambda: run("pg")}, rounds)
            print(f"   {writers:>7}  {layout:<12}  {_short(rates['file']):<22}  {_short(rates['pg']):<22}  "
                  f"{_short(ratios(rates['pg'], rates['file']), '{:.2f}')}x")  # fmt: skip


def _short(values: list[float], fmt: str = "{:,.0f}") -> str:
    """``median (min–max)``: the table's cell."""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def _run_writers(ctx: Any, store: str, dsn: str, tmp: Path, quests: list[str], seconds: float) -> float:
    ready, go, counts = ctx.Barrier(len(quests) + 1), ctx.Event(), ctx.Array("q", len(quests))
    procs = [ctx.Process(target=_writer, args=(store, dsn, str(tmp), q, seconds, ready, go, counts, i)) for i, q in enumerate(quests)]
    for p in procs:
        p.start()
    ready.wait()  # every writer has its store open
    go.set()
    for p in procs:
        p.join()
        assert p.exitcode == 0, f"a writer failed ({p.exitcode})"
    return sum(counts) / seconds


def _writer(store: str, dsn: str, tmp: str, quest: str, seconds: float, ready: Any, go: Any, counts: Any, slot: int) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    if store == "file":
        log: Any = EventLog(os.path.join(tmp, f"{quest}.jsonl"), quest_id=quest, actor="bench", policy="group")
    else:
        log = PostgresStore(dsn, quest_id=quest, actor="bench", pool_size=1)
        log.head()
    try:
        ready.wait()
        go.wait()
        n, deadline = 0, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            log.append(ConversationMessage(role="user", content=BODY))
            n += 1
        counts[slot] = n
    finally:
        log.close()


def _server_version(dsn: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return str(conn.execute("SHOW server_version").fetchone()[0]).split()[0]  # type: ignore[index]


if __name__ == "__main__":
    main()
