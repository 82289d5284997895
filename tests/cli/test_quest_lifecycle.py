"""``ds quest archive|unarchive|delete`` through the real CLI: reversible archive (an
event, the log kept), a deletion that says what it removes, kills the quest's shell
sessions first and leaves nothing of the quest in the home."""

from __future__ import annotations

import json

from ds_events.bash import procs
from ds_events.home import Home
from tests.bash_exec.support import start
from tests.cli.test_cli import fails, ok, run


def test_archive_hides_the_quest_from_the_list_and_unarchive_brings_it_back(home: Home, capsys) -> None:
    ok(capsys, "quest", "new", "--title", "Kept", "--id", "kept")
    ok(capsys, "quest", "new", "--title", "Shelved", "--id", "shelf")
    assert "archived" in ok(capsys, "quest", "archive", "shelf", "--reason", "done with it")
    assert [r["quest_id"] for r in json.loads(ok(capsys, "quest", "list", "--json"))] == ["kept"]
    rows = json.loads(ok(capsys, "quest", "list", "--all", "--json"))
    assert [(r["quest_id"], r["archived"]) for r in rows] == [("kept", False), ("shelf", True)]
    assert "(archived)" in ok(capsys, "quest", "list", "--all")
    with home.open_quest("shelf", read_only=True) as q:
        event = q.log.read()[-1]
        assert (event.type, event.reason) == ("quest.archived", "done with it")
    fails(capsys, "quest", "archive", "shelf", says="quest_archived")
    fails(capsys, "message", "shelf", "hello", says="quest_archived")
    done = json.loads(ok(capsys, "quest", "unarchive", "shelf", "--json"))
    assert done["archived"] is False
    fails(capsys, "quest", "unarchive", "shelf", says="quest_not_archived")
    assert [r["quest_id"] for r in json.loads(ok(capsys, "quest", "list", "--json"))] == ["kept", "shelf"]


def test_delete_without_yes_says_what_it_would_remove_and_removes_nothing(home: Home, capsys) -> None:
    ok(capsys, "quest", "new", "--title", "Doomed", "--id", "doomed")
    with home.open_quest("doomed") as q:
        start(q, "true")  # one finished shell session
        last = q.log.last_seq
    code, out, err = run(capsys, "quest", "delete", "doomed")
    assert code == 1 and err.startswith("error: confirm_required: "), err
    assert out.startswith("would remove: the quest directory ") and f"its log of {last} event(s)" in out
    assert "1 bash session(s)" in out and str(home.log_witness("doomed")) in out
    assert home.quest_root("doomed").is_dir() and home.log_witness("doomed").exists()
    with home.open_quest("doomed", read_only=True) as q:
        assert q.log.last_seq == last


def test_delete_kills_the_running_shell_session_then_removes_the_quest(home: Home, capsys) -> None:
    ok(capsys, "quest", "new", "--title", "Busy", "--id", "busy")
    ok(capsys, "quest", "new", "--title", "Other", "--id", "other")
    with home.open_quest("busy") as q:
        session = start(q, "sleep 300")
        assert session.status == "running" and procs.group_alive(session.pgid)
    done = json.loads(ok(capsys, "quest", "delete", "busy", "--yes", "--json"))
    assert done["deleted"] is True and done["running_bash_sessions"] == [session.id]
    assert not procs.group_alive(session.pgid)  # killed (and waited for) before the directory went
    assert not home.quest_root("busy").exists() and not home.log_witness("busy").exists()
    assert home.quest_ids() == ["other"]
    assert [r["quest_id"] for r in json.loads(ok(capsys, "quest", "list", "--all", "--json"))] == ["other"]
    fails(capsys, "quest", "show", "busy", says="unknown_quest")


def test_delete_on_a_database_store_removes_the_quests_rows_and_only_its(tmp_path, capsys, monkeypatch, pg_database) -> None:
    from ds_events.stores import close_pool, connection
    from tests.stores import pg_url, use_store

    url = pg_url(pg_database)
    home = Home(tmp_path / "pg-home")
    home.init()
    use_store(home, url)
    monkeypatch.setenv("DS_HOME", str(home.root))
    try:
        ok(capsys, "quest", "new", "--title", "Row quest", "--id", "rows")
        ok(capsys, "quest", "new", "--title", "Neighbour", "--id", "nb")
        ok(capsys, "message", "rows", "a note")
        done = json.loads(ok(capsys, "quest", "delete", "rows", "--yes", "--json"))
        assert done["deleted"] is True and done["store"] != "file" and done["events"] == 2
        with connection(url) as conn:
            counts = dict(conn.execute("SELECT quest_id, count(*) FROM ds_events GROUP BY quest_id").fetchall())
        assert counts == {"nb": 1}
        assert home.quest_ids() == ["nb"] and not home.quest_root("rows").exists()
        fails(capsys, "quest", "show", "rows", says="unknown_quest")
    finally:
        close_pool(url)
