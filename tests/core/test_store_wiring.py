"""Choosing the store by configuration: ``store:`` in config.yaml or ``DS_STORE``, one
factory for every log, ``ds verify`` / ``ds events tail`` / ``ds quest list`` on either
store, ``ds repair`` refused on PostgreSQL, and a quest created on one home opened by
another home on the same database (its files are that machine's projections)."""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.home import Home
from ds_events.log.postgres import PostgresStore
from ds_events.services import quest as quests
from ds_events.stores import close_pool, resolve_store
from tests.helpers import DS, ds_env
from tests.stores import pg_url, use_store


@pytest.fixture
def pg_home(home: Home, pg_database: str):
    url = pg_url(pg_database)
    use_store(home, url)
    yield home
    close_pool(url)


def second_home(tmp_path, url: str, name: str = "home-b") -> Home:
    other = Home(tmp_path / name)
    other.init()
    return use_store(other, url)


def ds(home: Home, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *args], env=ds_env(home, **env), capture_output=True, text=True, timeout=120)


def test_the_file_store_is_the_default_and_ds_store_in_the_environment_wins(home: Home, monkeypatch) -> None:
    assert home.store_url() == "file"
    monkeypatch.setenv("DS_STORE", "postgresql://ds@127.0.0.1:5/x")
    assert home.store_url() == "postgresql://ds@127.0.0.1:5/x"
    monkeypatch.setenv("DS_STORE", "sqlite:///x.db")
    with pytest.raises(Invalid) as caught:
        home.store_url()
    assert caught.value.code == "bad_config" and caught.value.details["key"] == "store" and "DS_STORE" in caught.value.message
    monkeypatch.delenv("DS_STORE")
    assert resolve_store("postgresql://ds@h/db") == "postgresql://ds@h/db"


def test_a_bad_ds_store_makes_every_command_refuse_and_write_nothing(home: Home) -> None:
    done = ds(home, "quest", "new", "--title", "T", "--id", "q2", DS_STORE="mysql://db")
    assert done.returncode == 1 and "DS_STORE" in done.stderr and "postgresql://" in done.stderr
    assert not (home.quests_dir / "q2").exists()


def test_a_database_nobody_answers_at_is_one_clear_error_and_nothing_is_written(home: Home) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = f"postgresql://ds@127.0.0.1:{port}/ds"
    for args in (["quest", "list"], ["quest", "new", "--title", "T", "--id", "q2"], ["verify", "q2"]):
        done = ds(home, *args, DS_STORE=down)
        assert done.returncode == 1 and "cannot use the store" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (home.quests_dir / "q2").exists()


@pytest.mark.parametrize("reserved", ["global", "baseline-registry"])
def test_a_quest_may_not_take_the_name_of_a_home_log(home: Home, reserved: str) -> None:
    with pytest.raises(Invalid) as caught:
        home.create_quest("T", quest_id=reserved)
    assert caught.value.code == "reserved_quest_id"
    assert not (home.quests_dir / reserved).exists()


def test_a_quest_on_postgresql_is_found_listed_tailed_and_verified_by_the_cli(pg_home: Home) -> None:
    quest = pg_home.create_quest("On the database", quest_id="q1")
    try:
        assert isinstance(quest.log, PostgresStore)
        quests.post_message(quest, quests.PostMessage(text="hello"), source="cli")
        assert (quest.root / "quest.yaml").is_file() and not (quest.root / ".ds" / "events.jsonl").exists()
    finally:
        quest.close()
    listed = ds(pg_home, "quest", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [r["quest_id"] for r in json.loads(listed.stdout)] == ["q1"]
    tail = ds(pg_home, "events", "tail", "q1", "--json")
    assert [json.loads(line)["type"] for line in tail.stdout.splitlines()] == ["quest.created", "conversation.message"]
    verify = ds(pg_home, "verify", "q1", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["ok"] and json.loads(verify.stdout)["last_seq"] == 2
    assert ds(pg_home, "quest", "show", "nope").returncode == 1


def test_verify_on_postgresql_reports_a_row_edited_by_sql_at_its_seq_and_repair_is_refused(pg_home: Home) -> None:
    with pg_home.create_quest("Tampered", quest_id="q1") as quest:
        for i in range(3):
            quests.post_message(quest, quests.PostMessage(text=f"m{i}"), source="cli")
    with psycopg.connect(pg_home.store_url()) as conn:
        edit = "convert_to(replace(convert_from(line, 'UTF8'), '\"m1\"', '\"mX\"'), 'UTF8')"
        conn.execute(f"UPDATE ds_events SET line = {edit} WHERE quest_id = 'q1' AND seq = 3")
        before = conn.execute("SELECT seq, line FROM ds_events WHERE quest_id = 'q1' ORDER BY seq").fetchall()
    verify = ds(pg_home, "verify", "q1", "--json")
    assert verify.returncode == 1
    problems = json.loads(verify.stdout)["problems"]
    assert problems and problems[0]["line"] == 3 and "edited" in problems[0]["reason"]
    text = ds(pg_home, "verify", "q1")
    assert "row 3" in text.stdout
    repair = ds(pg_home, "repair", "q1", "--yes")
    assert repair.returncode == 1 and "file only" in repair.stderr
    with psycopg.connect(pg_home.store_url()) as conn:
        assert conn.execute("SELECT seq, line FROM ds_events WHERE quest_id = 'q1' ORDER BY seq").fetchall() == before


def test_a_second_home_on_the_database_opens_the_quest_and_writes_its_own_files(pg_home: Home, tmp_path) -> None:
    with pg_home.create_quest("Shared", quest_id="q1", brief="Two machines.") as quest:
        quests.post_message(quest, quests.PostMessage(text="from a"), source="cli")
    other = second_home(tmp_path, pg_home.store_url())
    assert other.quest_ids() == ["q1"] and not (other.quests_dir / "q1").exists()
    with other.open_quest("q1", read_only=True) as peek:  # reading makes nothing
        assert peek.state("status").title == "Shared"
    assert not (other.quests_dir / "q1").exists()
    with other.open_quest("q1", actor="b") as there:
        quests.post_message(there, quests.PostMessage(text="from b"), source="cli")
        assert (there.root / ".git").is_dir()
    for name in ("quest.yaml", "brief.md", "status.md"):
        assert (other.quests_dir / "q1" / name).read_bytes() == (pg_home.quests_dir / "q1" / name).read_bytes() or name == "status.md"
    with pytest.raises(Conflict) as caught:
        other.create_quest("Again", quest_id="q1")
    assert caught.value.code == "quest_exists"
    with pytest.raises(NotFound):
        other.open_quest("q9")


def test_global_memory_and_the_registry_logs_live_in_the_database_too(pg_home: Home) -> None:
    from ds_events.memory.store import MemoryContext

    with pg_home.create_quest("Mem", quest_id="q1") as quest:
        mem = MemoryContext(quest=quest, actor="test")
        try:
            store = mem.store("global")
            assert isinstance(store.log, PostgresStore) and store.log.quest_id == "global"
        finally:
            mem.close()
    assert pg_home.quest_ids() == ["q1"]  # the home's own logs are not quests
    assert not (pg_home.global_memory_dir / ".ds" / "events.jsonl").exists()
