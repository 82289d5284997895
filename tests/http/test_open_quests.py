"""The daemon keeps an open quest (its views) across requests and catches it up with
other processes' appends instead of reopening it."""

from __future__ import annotations

from typing import Any

from ds_events.home import Home, Quest
from ds_events.services.quest.lifecycle import PostMessage, post_message
from handlers.http.app import HUB


async def test_requests_share_one_open_quest_whose_views_catch_up(client: Any, home: Home, quest: Quest) -> None:
    hub = client.app[HUB]
    first = await (await client.get("/api/quests/q1")).json()
    opened = hub.quest("q1")
    with home.open_quest("q1", actor="other") as other:  # another handle: as another process
        post_message(other, PostMessage(text="from elsewhere"))
        seq = other.log.last_seq
    second = await (await client.get("/api/quests/q1")).json()
    assert hub.quest("q1") is opened  # not reopened
    assert opened.views.last_seq == seq  # caught up in place
    assert second["last_seq"] == seq == first["last_seq"] + 1
