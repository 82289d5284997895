"""One quest's search index shared by several processes: busy is waited out, a broken
file is replaced without unlinking anything in use, and a landed write is never
reported failed because of the index."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ds_events.errors import ServiceError
from ds_events.home import Home, Quest
from ds_events.memory.store import INDEX_FILE, MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import ListRecent, SearchCards, WriteCard
from tests.helpers import wait_until

# The race's size; raise them from the environment for a longer stress run.
WORKERS = int(os.environ.get("DS_TEST_RACE_WORKERS", "4"))
ROUNDS = int(os.environ.get("DS_TEST_RACE_ROUNDS", "20"))
CARDS_EACH = int(os.environ.get("DS_TEST_RACE_CARDS", "4"))


def _words(tag: str, n: int = 8) -> str:
    # Words unique to ``tag``: no two cards of the race are near-duplicates.
    return " ".join(f"{tag}w{k}" for k in range(n))


def _race_worker(home_root: str, quest_id: str, worker: int, results: Any, barrier: Any) -> None:
    """A real process, new for each round (as the MCP servers of a turn are): open the
    quest, meet the others, then write distinct cards through the memory service at
    once (the first write opens the index, which nobody has created yet) and search
    for each of them."""
    out: dict[str, Any] = {"ids": {}, "errors": []}
    try:
        quest = Home(Path(home_root)).open_quest(quest_id, actor=f"w{worker}")
        mem = MemoryContext(quest, actor=f"w{worker}")
        barrier.wait(timeout=120)
        try:
            for i in range(CARDS_EACH):
                tag = f"{quest_id}x{worker}x{i}"
                try:
                    r = svc.write(mem, WriteCard(kind="episodes", title=f"Run {tag} finished", body=_words(tag), force=True))
                    if r.status != "written":
                        out["errors"].append(f"write {tag}: {r}")
                    else:
                        out["ids"][r.id] = tag
                except Exception as exc:  # every failure is reported, none hidden
                    out["errors"].append(f"write {tag}: {type(exc).__name__}: {exc}")
            for card_id, tag in out["ids"].items():
                try:
                    found = [h.id for h in svc.search(mem, SearchCards(query=f"{tag}w3 {tag}w5", limit=3)).results]
                    if card_id not in found:
                        out["errors"].append(f"search {tag}: {card_id} not in {found}")
                except Exception as exc:
                    out["errors"].append(f"search {tag}: {type(exc).__name__}: {exc}")
            out["busy_waits"] = mem.store("quest").index.busy_waits
        finally:
            mem.close()
            quest.close()
    except Exception:
        out["errors"].append(traceback.format_exc())
    results.put(out)


@pytest.mark.slow
def test_processes_opening_and_writing_one_fresh_quests_memory_at_once_lose_nothing(home: Home):
    # fork: a new process per worker and round costs milliseconds, so many rounds fit.
    ctx = multiprocessing.get_context("fork")
    failures: list[str] = []
    written: dict[str, dict[str, str]] = {}
    busy_waits = 0
    for r in range(ROUNDS):
        quest_id = f"race{r}"
        home.create_quest(f"Race {r}", quest_id=quest_id).close()  # fresh: no index file yet
        results, barrier = ctx.Queue(), ctx.Barrier(WORKERS)
        procs = [ctx.Process(target=_race_worker, args=(str(home.root), quest_id, w, results, barrier)) for w in range(WORKERS)]
        for p in procs:
            p.start()
        for _ in procs:
            out = results.get(timeout=180)
            failures += [f"round {r}: {e}" for e in out["errors"]]
            written.setdefault(quest_id, {}).update(out["ids"])
            busy_waits += out.get("busy_waits", 0)
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
    print(f"index race: {ROUNDS} rounds x {WORKERS} processes x {CARDS_EACH} cards, {len(failures)} failures, "
          f"{busy_waits} busy answers waited out")  # fmt: skip
    assert failures == []
    assert sum(len(ids) for ids in written.values()) == ROUNDS * WORKERS * CARDS_EACH
    for quest_id, ids in written.items():  # every card is searchable afterwards, by a new reader
        with home.open_quest(quest_id) as quest:
            mem = MemoryContext(quest)
            try:
                for card_id, tag in ids.items():
                    assert [h.id for h in svc.search(mem, SearchCards(query=f"{tag}w1", limit=1)).results] == [card_id]
                assert len(svc.list_recent(mem, ListRecent(limit=100)).results) == WORKERS * CARDS_EACH
            finally:
                mem.close()


_CREATOR = """
import sqlite3, sys, os
path = sys.argv[1]
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
print(os.stat(path).st_ino, flush=True)
sys.stdin.readline()
conn.execute("INSERT INTO meta VALUES('creator', 'here')")
conn.execute("COMMIT")
conn.close()
print("committed", flush=True)
"""


def test_an_index_another_process_is_creating_is_waited_for_never_deleted(quest: Quest, mem: MemoryContext):
    # Another process has just created the index file and holds its write lock: opening
    # it now gets "database is locked" at once (SQLite skips the busy handler where
    # waiting could deadlock). That is no corruption: the opener waits, and the file
    # the other process is writing stays the index.
    path = quest.root / ".ds" / INDEX_FILE
    creator = subprocess.Popen([sys.executable, "-c", _CREATOR, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        inode = int(creator.stdout.readline())  # type: ignore[union-attr]
        index = mem.store("quest").index
        outcome: dict[str, Any] = {}

        def search() -> None:
            try:
                outcome["hits"] = svc.search(mem, SearchCards(query="anything")).results
            except BaseException as exc:
                outcome["error"] = exc

        reader = threading.Thread(target=search)
        reader.start()
        # Let the creator finish only once the reader has met its lock (or has given up).
        wait_until(lambda: getattr(index, "busy_waits", 0) > 0 or not reader.is_alive(), what="the reader to meet the lock")
        creator.stdin.write("go\n")  # type: ignore[union-attr]
        creator.stdin.flush()  # type: ignore[union-attr]
        assert creator.stdout.readline().strip() == "committed"  # type: ignore[union-attr]
        reader.join(60)
    finally:
        creator.kill()
        creator.communicate(timeout=30)  # waits, and closes its pipes
    assert "error" not in outcome and outcome["hits"] == []
    assert os.stat(path).st_ino == inode  # the file was never unlinked under its creator
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='creator'").fetchone() == ("here",)
    written = svc.write(mem, WriteCard(kind="knowledge", title="Warm up the learning rate for ViT", body="loss diverged without warmup"))
    assert [h.id for h in svc.search(mem, SearchCards(query="warmup diverged")).results] == [written.id]


def _garble(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        f = Path(f"{path}{suffix}")
        if f.exists():
            size = f.stat().st_size
            with open(f, "r+b") as fh:  # in place, as a stray `dd` would: open handles see it
                fh.write(os.urandom(max(size, 4096)))


def test_a_garbled_index_is_replaced_and_refilled_and_every_open_handle_recovers(home: Home, quest: Quest, mem: MemoryContext):
    ids = [svc.write(mem, WriteCard(kind="episodes", title=f"Run {i} finished", body=_words(f"g{i}"))).id for i in range(12)]
    assert len(svc.search(mem, SearchCards(query="g3w1 g7w2", limit=5)).results) == 2
    other_quest = home.open_quest("q1", actor="other")  # a second handle, as another process has
    other = MemoryContext(other_quest)
    try:
        assert len(svc.search(other, SearchCards(query="g3w1", limit=5)).results) == 1
        index = mem.store("quest").index
        broken = index.file
        _garble(broken)
        # The handle whose file went bad recovers by itself on its next call...
        assert [h.id for h in svc.search(mem, SearchCards(query="g5w4")).results] == [ids[5]]
        assert index.file != broken  # a new generation, built aside
        more = svc.write(mem, WriteCard(kind="episodes", title="Run 12 finished", body=_words("g12"))).id
        # ...and so does the other one, which moves to the new file and sees everything.
        assert [h.id for h in svc.search(other, SearchCards(query="g12w0")).results] == [more]
        found = svc.search(other, SearchCards(query=" ".join(f"g{i}w2" for i in range(13)), limit=20)).results
        assert {h.id for h in found} == {*ids, more}
        assert other.store("quest").index.file == index.file
    finally:
        other.close()
        other_quest.close()
    # A newcomer finds the same, and nothing was lost from the log.
    fresh = MemoryContext(quest)
    try:
        found = svc.search(fresh, SearchCards(query=" ".join(f"g{i}w6" for i in range(13)), limit=20)).results
        assert {h.id for h in found} == {*ids, more}
    finally:
        fresh.close()


def test_a_garbled_index_file_is_rebuilt_on_open_without_losing_anything(quest: Quest, mem: MemoryContext):
    ids = [svc.write(mem, WriteCard(kind="ideas", title=f"Idea {i}", body=_words(f"i{i}"))).id for i in range(8)]
    mem.store("quest").synced_index()
    path = mem.store("quest").index.file
    mem.close()
    _garble(path)
    fresh = MemoryContext(quest)
    try:
        assert {h.id for h in svc.search(fresh, SearchCards(query=" ".join(f"i{i}w0" for i in range(8)), limit=20)).results} == set(ids)
    finally:
        fresh.close()


@contextlib.contextmanager
def _index_locked_by_another_process(path: Path) -> Iterator[None]:
    """Another process holds the index's write lock (BEGIN IMMEDIATE) until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"  # type: ignore[union-attr]
        yield
    finally:
        holder.stdin.write("done\n")  # type: ignore[union-attr]
        holder.stdin.flush()  # type: ignore[union-attr]
        holder.communicate(timeout=30)  # waits, and closes its pipes


_HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def test_an_index_made_without_the_merge_setting_is_replaced_and_every_open_handle_moves_on(
    home: Home, quest: Quest, mem: MemoryContext
):
    """An index file an older version made lacks FTS5's merge setting. Writing it into the
    file in use would fail the next query of every process that has the file open, so a
    fresh generation takes its place, refilled from the log, and the others follow."""
    ids = [svc.write(mem, WriteCard(kind="episodes", title=f"Run {i} finished", body=_words(f"m{i}"))).id for i in range(6)]
    old = mem.store("quest").synced_index().file
    with contextlib.closing(sqlite3.connect(old)) as conn:
        conn.execute("DELETE FROM fts_config WHERE k = 'crisismerge'")  # as an older version made it
        conn.commit()
    assert [h.id for h in svc.search(mem, SearchCards(query="m2w1")).results] == [ids[2]]  # open handle: checked already
    newcomer_quest = home.open_quest("q1", actor="newcomer")
    newcomer = MemoryContext(newcomer_quest)
    try:
        query = " ".join(f"m{i}w3" for i in range(6))
        assert {h.id for h in svc.search(newcomer, SearchCards(query=query, limit=10)).results} == set(ids)
        index = newcomer.store("quest").index
        assert index.file != old  # a new generation, refilled from the log
        with contextlib.closing(sqlite3.connect(index.file)) as conn:
            assert conn.execute("SELECT v FROM fts_config WHERE k = 'crisismerge'").fetchone() == (4,)
        # The handle that had the old file open moves to the new one without an error.
        more = svc.write(mem, WriteCard(kind="episodes", title="Run 6 finished", body=_words("m6"))).id
        assert [h.id for h in svc.search(newcomer, SearchCards(query="m6w0")).results] == [more]
        assert mem.store("quest").index.file == index.file
    finally:
        newcomer.close()
        newcomer_quest.close()


def test_a_write_whose_event_landed_is_never_reported_failed_because_of_the_index(quest: Quest, mem: MemoryContext):
    # Another process holds the index's write lock for as long as it likes. The write
    # needs only to read the (up to date) index for its duplicate check; the index
    # catches up with the new card on the next read, not inside the write.
    svc.search(mem, SearchCards(query="warm the index up"))
    path = mem.store("quest").index.file
    outcome: dict[str, Any] = {}
    with _index_locked_by_another_process(path):

        def write() -> None:
            try:
                outcome["result"] = svc.write(
                    mem, WriteCard(kind="knowledge", title="Cache tokenizers per vocabulary", body="rebuild on change")
                )
            except BaseException as exc:
                outcome["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        wait_until(lambda: not writer.is_alive(), timeout=30, what="the write to return while the index is locked")
        assert "error" not in outcome, outcome.get("error")
        assert outcome["result"].status == "written"
        assert quest.state("memory").cards[outcome["result"].id].active
    assert [h.id for h in svc.search(mem, SearchCards(query="tokenizers vocabulary")).results] == [outcome["result"].id]


def test_an_index_that_stays_busy_answers_with_a_structured_error_and_recovers(quest: Quest, mem: MemoryContext, monkeypatch):
    from ds_events.memory import sqlite_file

    svc.write(mem, WriteCard(kind="knowledge", title="Seed variance is large", body="5 seeds"))
    path = mem.store("quest").index.file
    with _index_locked_by_another_process(path):
        monkeypatch.setattr(sqlite_file, "BUSY_DEADLINE", 0.0)  # give up at the first busy answer
        monkeypatch.setattr(sqlite_file, "_BUSY_HANDLER_SECONDS", 0.0)
        mem.store("quest").index.close()  # reopen with the short busy handler
        with pytest.raises(ServiceError) as err:
            svc.search(mem, SearchCards(query="seed variance"))  # the index must apply the write: needs the lock
        assert err.value.code == "index_busy" and "busy" in err.value.message
    assert len(svc.search(mem, SearchCards(query="seed variance")).results) == 1  # the next call simply works


_APPENDER = """
import sys
from pathlib import Path
from ds_events.home import Home
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import WriteCard
quest = Home(Path(sys.argv[1])).open_quest("q1", actor="appender")
mem = MemoryContext(quest)
for i in range(int(sys.argv[2])):
    body = " ".join(f"ap{i}w{k}" for k in range(8))
    svc.write(mem, WriteCard(kind="episodes", title=f"Appender run {i} finished", body=body, force=True))
mem.close()
quest.close()
print("done", flush=True)
"""


def test_threads_sharing_one_index_while_another_process_appends_neither_deadlock_nor_fail(home: Home, quest: Quest, mem: MemoryContext):
    # MCP tools run in worker threads over one MemoryContext: one thread may hold the
    # log's lock (a write checking duplicates) while another catches the index up with
    # lines a third process just appended.
    n_threads, each, appended = 4, 8, 15
    appender = subprocess.Popen([sys.executable, "-c", _APPENDER, str(home.root), str(appended)], stdout=subprocess.PIPE, text=True)
    errors: list[str] = []
    ids: list[str] = []

    def work(t: int) -> None:
        for i in range(each):
            try:
                r = svc.write(mem, WriteCard(kind="episodes", title=f"Thread {t} run {i}", body=_words(f"t{t}x{i}"), force=True))
                ids.append(r.id)
                svc.search(mem, SearchCards(query=f"t{t}x{i}w2 ap{i}w3", limit=5))
            except Exception as exc:
                errors.append(f"{t}/{i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    wait_until(lambda: not any(t.is_alive() for t in threads), timeout=120, what="the threads to finish")
    assert appender.stdout.readline().strip() == "done"  # type: ignore[union-attr]
    appender.communicate(timeout=30)  # waits, and closes its pipe
    assert errors == []
    assert len(ids) == n_threads * each
    found = {
        h.id
        for h in svc.search(
            mem, SearchCards(query=" ".join(f"t{t}x{i}w5" for t in range(n_threads) for i in range(each)), limit=100)
        ).results
    }
    assert found == set(ids)
    assert len(svc.list_recent(mem, ListRecent(limit=100)).results) == n_threads * each + appended


def test_the_duplicate_check_sees_cards_the_index_has_not_caught_up_with(quest: Quest, mem: MemoryContext):
    from ds_events.events.memory import CardWritten

    svc.search(mem, SearchCards(query="warm the index up"))
    store = mem.store("quest")
    # Appended by someone else after this handle last synced the index.
    quest.log.append(CardWritten(card_id="knowledge-0000beef", kind="knowledge", title="Cache the tokenizer per vocabulary",
                                 body="rebuild it when the vocabulary changes", source_quest="q1"))  # fmt: skip
    assert store.index.applied_seq < quest.log.last_seq
    found = svc.near_duplicates(store, store.state(), "knowledge", "Cache the tokenizer per vocabulary size",
                                "rebuild it when the vocabulary changes")  # fmt: skip
    assert [c.id for c in found] == ["knowledge-0000beef"]


def test_a_write_never_holds_the_logs_lock_while_the_index_is_busy(quest: Quest, mem: MemoryContext, monkeypatch):
    from ds_events.events.memory import CardWritten
    from ds_events.memory import sqlite_file
    from ds_events.memory.store import INDEX_LAG

    svc.search(mem, SearchCards(query="warm the index up"))
    # The index is now behind by more than a write lets it lag: the write must fold them in.
    quest.log.append([CardWritten(card_id=f"knowledge-0000be{i:02x}", kind="knowledge", title=f"Seeds matter {i}",
                                  body=f"{i} seeds", source_quest="q1") for i in range(INDEX_LAG + 1)])  # fmt: skip
    monkeypatch.setattr(sqlite_file, "_BUSY_HANDLER_SECONDS", 0.01)  # report busy quickly, so we can see it
    index = mem.store("quest").index
    index.close()
    path = index.file
    outcome: dict[str, Any] = {}
    with _index_locked_by_another_process(path):

        def write() -> None:
            try:
                outcome["result"] = svc.write(mem, WriteCard(kind="knowledge", title="Warm up the learning rate for ViT", body="diverged"))
            except BaseException as exc:
                outcome["error"] = exc

        writer = threading.Thread(target=write)
        writer.start()
        wait_until(lambda: index.busy_waits > 0, what="the write to find the index busy")
        # Meanwhile every other appender of the quest goes ahead.
        other = home_quest = quest.home.open_quest("q1", actor="other")
        try:
            appended: dict[str, Any] = {}
            t = threading.Thread(target=lambda: appended.setdefault("e", other.log.append(
                CardWritten(card_id="knowledge-0000cafe", kind="knowledge", title="Label smoothing", body="ECE", source_quest="q1"))))
            t.start()
            wait_until(lambda: "e" in appended, timeout=20, what="another append while the index is busy")
            assert writer.is_alive()  # still waiting for the index, outside the log's lock
        finally:
            t.join(30)
            home_quest.close()
    writer.join(60)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].status == "written"
