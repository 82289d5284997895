"""Workflow, node traces and Canvas (JSON and SVG) through the daemon, with their errors."""

from __future__ import annotations

from typing import Any

from ds_events.home import Quest
from ds_events.services.quest.lifecycle import PostMessage, post_message


async def test_workflow_lists_entries_and_a_bad_limit_is_400(client: Any, quest: Quest) -> None:
    post_message(quest, PostMessage(text="hello"))
    body = await (await client.get("/api/quests/q1/workflow")).json()
    assert body["quest_id"] == "q1" and body["seq"] == quest.log.last_seq
    assert {"entries", "changed_files", "counts"} <= set(body)
    resp = await client.get("/api/quests/q1/workflow?limit=nope")
    assert resp.status == 400 and (await resp.json())["error"] == "invalid_limit"


async def test_node_traces_and_an_unknown_ref_is_404(client: Any, quest: Quest) -> None:
    body = await (await client.get("/api/quests/q1/node-traces")).json()
    assert body["quest_id"] == "q1" and isinstance(body["nodes"], list)
    for node in body["nodes"]:
        one = await client.get(f"/api/quests/q1/node-traces/{node['ref']}")
        assert one.status == 200, await one.text()
    resp = await client.get("/api/quests/q1/node-traces/no-such-node")
    assert resp.status == 404 and (await resp.json())["error"] == "unknown_node"


async def test_canvas_views_as_json_and_svg_and_a_bad_view_is_400(client: Any) -> None:
    for view in ("branch", "event", "stage"):
        body = await (await client.get(f"/api/quests/q1/canvas?view={view}")).json()
        assert body["view"] == view and {"nodes", "edges"} <= set(body)
        svg = await client.get(f"/api/quests/q1/canvas?view={view}&format=svg")
        assert svg.status == 200 and svg.content_type == "image/svg+xml"
        assert (await svg.text()).lstrip().startswith(("<svg", "<?xml"))
    resp = await client.get("/api/quests/q1/canvas?view=pie")
    assert resp.status == 400 and (await resp.json())["error"] == "invalid_view"
    resp = await client.get("/api/quests/q1/canvas?view=branch&format=png")
    assert resp.status == 400 and (await resp.json())["error"] == "invalid_format"
