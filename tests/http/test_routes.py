"""Every route answers, and every bad input gets a structured error with the right status."""

from __future__ import annotations

from typing import Any

import pytest

from ds_events.home import Home, Quest
from ds_events.services.interactions import mailbox as interaction_service
from ds_events.services.quest.lifecycle import PostMessage, post_message
from tests.stores import home  # noqa: F401 - every route is served from either store


async def _error(resp: Any, status: int, code: str) -> dict[str, Any]:
    body = await resp.json()
    assert resp.status == status, body
    assert body["error"] == code, body
    assert body["message"]
    return body


async def test_health_and_quest_list_and_show(client: Any) -> None:
    resp = await client.get("/api/health")
    assert resp.status == 200 and (await resp.json())["status"] == "ok"
    listed = await (await client.get("/api/quests")).json()
    assert [q["quest_id"] for q in listed["quests"]] == ["q1"]
    shown = await (await client.get("/api/quests/q1")).json()
    assert shown["quest_id"] == "q1" and shown["title"] == "Test quest"


async def test_create_quest_then_it_is_listed_and_a_duplicate_id_is_a_conflict(client: Any, home: Home) -> None:
    resp = await client.post("/api/quests", json={"title": "Second", "id": "q2", "brief": "b"})
    assert resp.status == 201, await resp.text()
    assert (await resp.json())["quest_id"] == "q2"
    assert "q2" in home.quest_ids()
    await _error(await client.post("/api/quests", json={"title": "Again", "id": "q2"}), 409, "quest_exists")
    await _error(await client.post("/api/quests", json={"id": "q3"}), 400, "missing_argument")
    await _error(await client.post("/api/quests", json={"title": "x", "colour": 1}), 400, "unknown_argument")
    assert "q3" not in home.quest_ids()


async def test_unknown_quest_is_404_on_every_quest_route(client: Any) -> None:
    for path in ["", "/events", "/workflow", "/node-traces", "/artifacts", "/memory", "/bash/sessions",
                 "/git/branches", "/canvas?view=branch", "/interactions"]:
        await _error(await client.get(f"/api/quests/nope{path}"), 404, "unknown_quest")
    await _error(await client.post("/api/quests/nope/messages", json={"text": "hi"}), 404, "unknown_quest")


async def test_unknown_route_is_a_structured_404(client: Any) -> None:
    await _error(await client.get("/api/nothing-here"), 404, "not_found")


async def test_post_message_appends_through_the_service_and_bad_input_changes_nothing(client: Any, quest: Quest) -> None:
    before = quest.log.last_seq
    resp = await client.post("/api/quests/q1/messages", json={"text": "try a smaller lr"})
    assert resp.status == 201
    seq = (await resp.json())["seq"]
    assert seq == before + 1
    event = quest.log.get(seq)
    assert event is not None and event.type == "conversation.message" and event.content == "try a smaller lr"
    await _error(await client.post("/api/quests/q1/messages", json={"text": "  "}), 400, "empty_message")
    await _error(await client.post("/api/quests/q1/messages", data=b"{not json", headers={"Content-Type": "application/json"}), 400, "invalid_json")
    await _error(await client.post("/api/quests/q1/messages", json=["a"]), 400, "invalid_argument")
    assert quest.log.last_seq == seq


async def test_oversized_body_is_413_and_appends_nothing(make_client: Any, quest: Quest) -> None:
    client = await make_client(max_body=1024)
    before = quest.log.last_seq
    await _error(await client.post("/api/quests/q1/messages", json={"text": "x" * 5000}), 413, "body_too_large")
    assert quest.log.last_seq == before


async def test_control_pauses_and_resumes_and_refuses_an_unknown_action(client: Any) -> None:
    resp = await client.post("/api/quests/q1/control", json={"action": "pause", "reason": "lunch"})
    assert resp.status == 200 and (await resp.json())["status"] == "paused"
    resp = await client.post("/api/quests/q1/control", json={"action": "resume"})
    assert (await resp.json())["status"] != "paused"
    await _error(await client.post("/api/quests/q1/control", json={"action": "explode"}), 400, "invalid_action")


async def test_the_quest_runner_is_set_and_a_bad_one_refused_like_the_cli(client: Any, quest: Any) -> None:
    resp = await client.post("/api/quests/q1/runner", json={"runner": "claude", "model": "m-1"})
    assert resp.status == 200 and (await resp.json())["runner"] == "claude"
    shown = await (await client.get("/api/quests/q1")).json()
    assert (shown["runner"], shown["model"]) == ("claude", "m-1")
    before = quest.log.last_seq
    await _error(await client.post("/api/quests/q1/runner", json={"runner": "gpt"}), 400, "unknown_runner")
    await _error(await client.post("/api/quests/q1/runner", json={"runner": "codex", "modell": "x"}), 400, "unknown_argument")
    await _error(await client.post("/api/quests/nope/runner", json={"runner": "codex"}), 404, "unknown_quest")
    assert quest.log.last_seq == before


async def test_token_required_on_every_route_when_configured(make_client: Any) -> None:
    client = await make_client(token="s3cret")
    await _error(await client.get("/api/health"), 401, "unauthorized")
    await _error(await client.get("/api/quests", headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    await _error(await client.post("/api/quests/q1/messages", json={"text": "hi"}), 401, "unauthorized")
    ok = await client.get("/api/quests", headers={"Authorization": "Bearer s3cret"})
    assert ok.status == 200


async def test_artifacts_route_and_a_bad_kind_filter(client: Any) -> None:
    body = await (await client.get("/api/quests/q1/artifacts")).json()
    assert body["quest_id"] == "q1" and isinstance(body["records"], list)
    await _error(await client.get("/api/quests/q1/artifacts?kind=nonsense"), 400, "invalid_filter")
    await _error(await client.get("/api/quests/q1/artifacts?limit=abc"), 400, "invalid_limit")


async def test_memory_routes_list_search_read_and_errors(client: Any, quest: Quest) -> None:
    from ds_events.memory.store import MemoryContext
    from ds_events.services.memory import cards as memory_service
    from ds_events.services.memory.commands import WriteCard

    written = memory_service.write(MemoryContext(quest=quest, actor="test"), WriteCard(kind="knowledge", title="Warmup stops early divergence", body="Use 500 warmup steps."))
    listed = await (await client.get("/api/quests/q1/memory")).json()
    assert [c["id"] for c in listed["items"]] == [written.id]
    found = await (await client.get("/api/quests/q1/memory?q=warmup+divergence&limit=5")).json()
    assert found["items"][0]["id"] == written.id
    card = await (await client.get(f"/api/quests/q1/memory/{written.id}")).json()
    assert card["body"].strip() == "Use 500 warmup steps."
    await _error(await client.get("/api/quests/q1/memory/knowledge-00000000"), 404, "unknown_card")
    await _error(await client.get("/api/quests/q1/memory?limit=0"), 400, "invalid_limit")


async def test_bash_routes_and_unknown_session(client: Any) -> None:
    body = await (await client.get("/api/quests/q1/bash/sessions?include_ended=1")).json()
    assert body["sessions"] == []
    resp = await client.get("/api/quests/q1/bash/sessions/bash-999")
    assert resp.status == 404
    resp = await client.get("/api/quests/q1/bash/sessions/bash-999/log?tail=x")
    await _error(resp, 400, "invalid_cursor")


async def test_git_branches_lists_main(client: Any) -> None:
    body = await (await client.get("/api/quests/q1/git/branches")).json()
    assert [b["name"] for b in body["branches"]] == ["main"]
    assert body["active_branch"] == "main"


async def test_interactions_open_request_then_reply_through_the_service(client: Any, quest: Quest) -> None:
    sent = interaction_service.interact(quest, interaction_service.Interact(kind="decision_request", message="Which baseline?", reply_mode="blocking", options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]))
    iid = sent.interaction_id
    body = await (await client.get("/api/quests/q1/interactions")).json()
    assert [r["interaction_id"] for r in body["open_requests"]] == [iid]
    resp = await client.post(f"/api/quests/q1/interactions/{iid}/reply", json={"text": "A please", "option_id": "a"})
    assert resp.status == 201, await resp.text()
    body = await (await client.get("/api/quests/q1/interactions")).json()
    assert body["open_requests"] == []
    await _error(await client.post("/api/quests/q1/interactions/ia-nope/reply", json={"text": "x"}), 404, "unknown_interaction")


async def test_event_page_filters_and_cursors(client: Any, quest: Quest) -> None:
    for i in range(5):
        post_message(quest, PostMessage(text=f"m{i}"))
    last = quest.log.last_seq
    page = await (await client.get("/api/quests/q1/events?after=0&limit=2")).json()
    assert [e["seq"] for e in page["events"]] == [1, 2] and page["next_after"] == 2 and page["has_more"]
    page = await (await client.get(f"/api/quests/q1/events?after={last - 1}")).json()
    assert [e["seq"] for e in page["events"]] == [last] and not page["has_more"]
    page = await (await client.get("/api/quests/q1/events?types=conversation.message&limit=10")).json()
    assert [e["content"] for e in page["events"]] == [f"m{i}" for i in range(5)]
    page = await (await client.get("/api/quests/q1/events?tail=1&limit=2")).json()
    assert [e["seq"] for e in page["events"]] == [last - 1, last] and page["has_more"]
    page = await (await client.get(f"/api/quests/q1/events?before={last}&limit=2")).json()
    assert [e["seq"] for e in page["events"]] == [last - 2, last - 1]
    acp = await (await client.get("/api/quests/q1/events?format=acp&types=conversation.message&limit=1")).json()
    note = acp["events"][0]
    assert note["jsonrpc"] == "2.0" and note["method"] == "session/update" and note["params"]["sessionId"] == "q1"
    assert note["params"]["update"]["sessionUpdate"] == "user_message_chunk"


@pytest.mark.parametrize("query, code", [
    ("after=-1", "invalid_cursor"), ("after=abc", "invalid_cursor"), ("before=0", "invalid_cursor"),
    ("limit=0", "invalid_limit"), ("limit=100000", "invalid_limit"), ("format=xml", "invalid_format"),
    ("types=", "invalid_filter"), ("types=bad%20type", "invalid_filter"), ("tail=1&after=3", "invalid_cursor"),
    ("stream=1&before=3", "invalid_cursor"),
])
async def test_bad_event_query_is_400_with_a_code(client: Any, query: str, code: str) -> None:
    await _error(await client.get(f"/api/quests/q1/events?{query}"), 400, code)
