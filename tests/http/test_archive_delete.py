"""Archive, unarchive and delete over HTTP: the list hides archived quests unless asked,
every refusal is a structured error that changes nothing, a deletion removes the quest
(directory, witness) and the daemon lets go of it."""

from __future__ import annotations

from typing import Any

import pytest

from ds_events.home import Home, Quest
from ds_events.services import quest as quest_service
from ds_events.services.runtime import turns
from ds_events.services.runtime.commands import Action

JSON = {"Content-Type": "application/json"}


async def _ids(client: Any, query: str = "") -> list[str]:
    resp = await client.get("/api/quests" + query)
    assert resp.status == 200
    return [q["quest_id"] for q in (await resp.json())["quests"]]


async def _refused(client: Any, method: str, path: str, status: int, code: str, quest: Quest, **kw: Any) -> dict[str, Any]:
    before = quest.log.last_seq
    resp = await client.request(method, path, **kw)
    body = await resp.json()
    assert (resp.status, body["error"]) == (status, code), body
    assert body["message"]
    with quest.home.open_quest(quest.id, read_only=True) as again:  # a fresh read: nothing was appended
        assert again.log.last_seq == before
    return body


async def test_an_archived_quest_leaves_the_list_until_asked_for_and_comes_back(client: Any, quest: Quest) -> None:
    assert await _ids(client) == ["q1"]
    resp = await client.post("/api/quests/q1/archive", json={"reason": "shelved"})
    body = await resp.json()
    assert resp.status == 200 and body["archived"] is True and body["quest_id"] == "q1"
    event = quest.log.get(body["seq"])
    assert event is not None and event.type == "quest.archived" and event.reason == "shelved"
    assert await _ids(client) == []
    rows = (await (await client.get("/api/quests?archived=true")).json())["quests"]
    assert [(r["quest_id"], r["archived"]) for r in rows] == [("q1", True)]
    assert (await (await client.get("/api/quests/q1")).json())["archived"] is True  # the log is kept, still shown
    resp = await client.post("/api/quests/q1/unarchive", json={})
    assert resp.status == 200 and (await resp.json())["archived"] is False
    assert await _ids(client) == ["q1"]


async def test_archive_refusals_change_nothing(client: Any, quest: Quest) -> None:
    await _refused(client, "POST", "/api/quests/q1/unarchive", 409, "quest_not_archived", quest, json={})
    await _refused(client, "POST", "/api/quests/q1/archive", 400, "invalid_argument", quest, json={"reason": 3})
    await _refused(client, "POST", "/api/quests/q1/archive", 400, "unknown_argument", quest, json={"why": "x"})
    await _refused(client, "POST", "/api/quests/nope/archive", 404, "unknown_quest", quest, json={})
    assert (await client.post("/api/quests/q1/archive", json={})).status == 200
    await _refused(client, "POST", "/api/quests/q1/archive", 409, "quest_archived", quest, json={})
    # An archived quest takes no message (it would start a turn once unarchived).
    await _refused(client, "POST", "/api/quests/q1/messages", 409, "quest_archived", quest, json={"text": "hi"})


async def test_archive_and_delete_are_refused_while_a_turn_runs(client: Any, quest: Quest) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text="go"))
    spec = turns.claim_turn(
        quest, runner="scripted", model="", host=turns.Host.this_process(),
        build_prompt=lambda q, r: "prompt", action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    body = await _refused(client, "POST", "/api/quests/q1/archive", 409, "turn_running", quest, json={})
    assert body["run_id"] == spec.run_id
    await _refused(client, "DELETE", "/api/quests/q1?confirm=true", 409, "turn_running", quest, headers=JSON)
    assert quest.root.is_dir()


async def test_delete_needs_a_confirmation_and_says_what_it_would_remove(client: Any, quest: Quest) -> None:
    body = await _refused(client, "DELETE", "/api/quests/q1", 400, "confirm_required", quest, json={})
    plan = body["plan"]
    assert plan["deleted"] is False and plan["quest_id"] == "q1" and plan["root"] == str(quest.root)
    assert plan["events"] == quest.log.last_seq and plan["git_repo"] is True and plan["bash_sessions"] == 0
    assert plan["witness"] == str(quest.home.log_witness("q1"))
    await _refused(client, "DELETE", "/api/quests/q1", 400, "confirm_required", quest, json={"confirm": False})
    await _refused(client, "DELETE", "/api/quests/q1", 400, "invalid_argument", quest, json={"confirm": "yes"})
    await _refused(client, "DELETE", "/api/quests/q1?confirm=maybe", 400, "invalid_argument", quest, headers=JSON)
    # The guard wants application/json of every DELETE, with a body or without.
    await _refused(client, "DELETE", "/api/quests/q1?confirm=true", 415, "unsupported_media_type", quest)
    assert quest.root.is_dir() and await _ids(client) == ["q1"]


@pytest.mark.parametrize("how", ["body", "query"])
async def test_a_confirmed_delete_removes_the_quest_and_its_witness(client: Any, home: Home, quest: Quest, how: str) -> None:
    assert (await client.get("/api/quests/q1")).status == 200  # the daemon holds it open
    witness = home.log_witness("q1")
    assert witness.exists()
    if how == "body":
        resp = await client.delete("/api/quests/q1", json={"confirm": True})
    else:
        resp = await client.delete("/api/quests/q1?confirm=true", headers=JSON)
    body = await resp.json()
    assert resp.status == 200 and body["deleted"] is True and body["quest_id"] == "q1", body
    assert not quest.root.exists() and not witness.exists()
    assert home.quest_ids() == [] and await _ids(client, "?archived=true") == []
    resp = await client.get("/api/quests/q1")
    assert resp.status == 404 and (await resp.json())["error"] == "unknown_quest"
    resp = await client.delete("/api/quests/q1?confirm=true", headers=JSON)
    assert resp.status == 404 and (await resp.json())["error"] == "unknown_quest"
    # The id is free again.
    assert (await client.post("/api/quests", json={"title": "again", "id": "q1"})).status == 201


def test_a_daemon_hosting_turns_lets_go_of_a_deleted_quest_and_goes_on(home: Home, quest: Quest, tmp_path) -> None:
    """A real ``ds serve`` with its scheduler: after DELETE the quest's scheduler stops
    quietly and the daemon keeps hosting turns (a quest made again under the same id)."""
    import json
    import signal
    import urllib.request

    from tests.helpers import start_serve, wait_until
    from tests.runtime.test_scheduler import trajectory

    traj = trajectory(tmp_path, [{"say": "hello"}])
    quest.close()
    log = tmp_path / "serve.log"
    proc, port = start_serve(home, "--runner", "scripted", "--trajectory", traj, log=log)

    def call(method: str, path: str, body: object = None) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers=JSON,
                                         data=None if body is None else json.dumps(body).encode())  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            with e:
                return e.code, json.loads(e.read())

    def finished(quest_id: str) -> list[Any]:
        with home.open_quest(quest_id, read_only=True) as q:
            return [e for e in q.log.read() if e.type == "runner.turn_finished"]

    try:
        assert call("POST", "/api/quests/q1/messages", {"text": "hi"})[0] == 201
        wait_until(lambda: finished("q1"), timeout=120, what="the first turn")
        status, body = call("DELETE", "/api/quests/q1", {"confirm": True})
        assert status == 200 and body["deleted"] is True, body
        assert call("GET", "/api/quests")[1]["quests"] == []
        assert call("POST", "/api/quests", {"title": "again", "id": "q1"})[0] == 201
        assert call("POST", "/api/quests/q1/messages", {"text": "hi again"})[0] == 201
        [end] = wait_until(lambda: finished("q1"), timeout=120, what="a turn of the quest made again")
        assert end.outcome == "completed"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    output = log.read_text()
    assert "Traceback" not in output and "scheduler q1:" not in output, output
