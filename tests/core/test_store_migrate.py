"""``ds store migrate``: file → PostgreSQL → file gives a byte-identical events.jsonl;
a re-run is a no-op; a cut-short copy resumes; a different history in the target is
refused with ``history_differs`` and nothing written; the copy verifies on both sides."""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.home import Home
from ds_events.log import line_hash
from ds_events.log.format import line_id, line_seq, line_type
from ds_events.log.postgres import PostgresStore
from ds_events.memory.store import MemoryContext
from ds_events.migrate import migrate_log
from ds_events.services import quest as quests
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import WriteCard
from ds_events.stores import close_pool
from tests.helpers import DS, ds_env
from tests.stores import pg_url, use_store


@pytest.fixture
def url(pg_database: str):
    found = pg_url(pg_database)
    yield found
    close_pool(found)


def ds(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *args], env=ds_env(home), capture_output=True, text=True, timeout=120)


def fill(home: Home, quest_id: str = "q1", n: int = 5) -> bytes:
    """A quest on ``home``'s store with real events of several kinds; its log's lines."""
    with home.create_quest("Migrating", quest_id=quest_id, brief="Moves between stores.") as quest:
        for i in range(n):
            quests.post_message(quest, quests.PostMessage(text=f"note {i} — ünïcode"), source="cli")
        mem = MemoryContext(quest=quest, actor="test")
        try:
            memory_service.write(mem, WriteCard(kind="knowledge", title="Cache per vocab", body="rebuild it"))
        finally:
            mem.close()
        return b"".join(line + b"\n" for _seq, line in quest.log.iter_lines())


def rows(url: str, quest_id: str = "q1") -> list[tuple[int, bytes]]:
    with psycopg.connect(url) as conn:
        return [(s, bytes(line)) for s, line in conn.execute("SELECT seq, line FROM ds_events WHERE quest_id = %s ORDER BY seq", (quest_id,))]


def test_file_to_postgresql_to_file_gives_a_byte_identical_log_that_verifies(home: Home, url: str, tmp_path) -> None:
    original = fill(home)
    moved = ds(home, "store", "migrate", "q1", "--to", url, "--json")
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    n = original.count(b"\n")
    assert report["copied"] == report["events"] == report["last_seq"] == n
    assert b"".join(line + b"\n" for _s, line in rows(url)) == original

    again = ds(home, "store", "migrate", "q1", "--to", url)
    assert again.returncode == 0 and "nothing to do" in again.stdout  # a re-run is a no-op
    assert len(rows(url)) == n

    # Another machine's home on that database takes the log back into a file.
    other = Home(tmp_path / "home-b")
    other.init()
    use_store(other, url)
    verify_pg = ds(other, "verify", "q1", "--json")
    assert verify_pg.returncode == 0 and json.loads(verify_pg.stdout)["last_seq"] == n
    back = ds(other, "store", "migrate", "q1", "--to", "file")
    assert back.returncode == 0, back.stderr
    assert (other.quests_dir / "q1" / ".ds" / "events.jsonl").read_bytes() == original
    use_store(other, "file")
    verify_file = ds(other, "verify", "q1", "--json")  # the head anchor is signed with home-b's key
    assert verify_file.returncode == 0, verify_file.stdout
    assert any(a.startswith("head anchor") for a in json.loads(verify_file.stdout)["anchors"])
    replay = ds(other, "replay", "q1", "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout)["last_seq"] == n
    assert (other.quests_dir / "q1" / "memory").is_dir()


def test_a_different_history_in_the_target_is_refused_and_nothing_is_written(home: Home, url: str, tmp_path) -> None:
    fill(home, n=3)
    elsewhere = Home(tmp_path / "home-c")
    elsewhere.init()
    theirs = fill(elsewhere, n=4)  # the same quest id, another history
    assert ds(elsewhere, "store", "migrate", "q1", "--to", url).returncode == 0
    before = rows(url)
    refused = ds(home, "store", "migrate", "q1", "--to", url)
    assert refused.returncode == 1 and "different history" in refused.stderr
    assert rows(url) == before
    with pytest.raises(Conflict) as caught:
        migrate_log(home, "q1", source="file", target=url)
    assert caught.value.code == "history_differs" and caught.value.details["seq"] == 1

    # And into a file: home's own log is not the database's history.
    path = home.quests_dir / "q1" / ".ds" / "events.jsonl"
    mine = path.read_bytes()
    with pytest.raises(Conflict):
        migrate_log(home, "q1", source=url, target="file")
    assert path.read_bytes() == mine and theirs != mine


def test_a_copy_cut_short_resumes_and_a_longer_target_is_refused(home: Home, url: str) -> None:
    original = fill(home, n=6)
    lines = original.splitlines()
    PostgresStore(url, quest_id="q1").close()  # the schema
    with psycopg.connect(url) as conn:  # the first three rows, as if copied by an earlier migration
        for line in lines[:3]:
            conn.execute(
                "INSERT INTO ds_events (quest_id, seq, id, type, hash, line) VALUES ('q1', %s, %s, %s, %s, %s)",
                (line_seq(line), line_id(line), line_type(line).decode(), line_hash(line), line),
            )
    result = migrate_log(home, "q1", source="file", target=url)
    assert (result.copied, result.events) == (len(lines) - 3, len(lines))
    assert [line for _s, line in rows(url)] == lines

    # The database loses its last row: the file now holds more than it, and copying
    # the database's log over the file is refused (never truncates the file).
    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM ds_events WHERE quest_id = 'q1' AND seq = %s", (len(lines),))
    path = home.quests_dir / "q1" / ".ds" / "events.jsonl"
    with pytest.raises(Conflict) as caught:
        migrate_log(home, "q1", source=url, target="file")
    assert "more of this log" in caught.value.message and path.read_bytes() == original


def test_migrate_refuses_the_same_store_an_unknown_quest_and_a_bad_target(home: Home, url: str) -> None:
    fill(home, n=1)
    with pytest.raises(Invalid) as same:
        migrate_log(home, "q1", source="file", target="file")
    assert same.value.code == "same_store"
    with pytest.raises(NotFound):
        migrate_log(home, "q9", source="file", target=url)
    with pytest.raises(NotFound):
        migrate_log(home, "q9", source=url, target="file")
    bad = ds(home, "store", "migrate", "q1", "--to", "mysql://x")
    assert bad.returncode == 1 and "--to" in bad.stderr
    usage = ds(home, "store", "migrate", "--to", url)
    assert usage.returncode == 2
    assert not rows(url, "q9") and not rows(url)


def test_the_global_memory_log_moves_too_and_the_other_home_reads_its_cards(home: Home, url: str, tmp_path) -> None:
    with home.create_quest("G", quest_id="q1") as quest:
        mem = MemoryContext(quest=quest, actor="test")
        try:
            card = memory_service.write(mem, WriteCard(kind="knowledge", title="Global lesson", body="seeds matter", scope="global")).id
        finally:
            mem.close()
    assert ds(home, "store", "migrate", "q1", "--to", url).returncode == 0
    moved = ds(home, "store", "migrate", "--global", "--to", url, "--json")
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["log"] == "global"
    glines = (home.global_memory_dir / ".ds" / "events.jsonl").read_bytes()
    assert b"".join(line + b"\n" for _s, line in rows(url, "global")) == glines
    other = Home(tmp_path / "home-b")
    other.init()
    use_store(other, url)
    with other.open_quest("q1") as there:
        mem = MemoryContext(quest=there, actor="test")
        try:
            assert mem.store("global").state().cards[card].title == "Global lesson"
            assert (other.global_memory_dir / "knowledge" / f"{card}.md").read_bytes() == (
                home.global_memory_dir / "knowledge" / f"{card}.md"
            ).read_bytes()
        finally:
            mem.close()
