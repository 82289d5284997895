"""The quest list at ``/`` in a real browser over a real daemon."""

from __future__ import annotations

import re
import uuid
from typing import Any

from ds_events.home import Home

from .harness import Server


def test_the_page_lists_the_demo_quest_with_its_status_anchor_and_activity(page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    status, listing = server.api("/api/quests")
    assert status == 200
    (summary,) = [q for q in listing["quests"] if q["quest_id"] == quest_id]
    row = page.locator(f'.quest-row[data-quest="{quest_id}"]')
    expect(row.locator(".q-title")).to_have_text(summary["title"])
    expect(row.locator(".q-status")).to_have_text(summary["status"])
    expect(row.locator(".q-anchor")).to_have_text(summary["anchor"])
    expect(row.locator(".q-activity time")).to_have_attribute("datetime", summary["updated_at"])
    expect(row.locator(".q-requests")).to_have_attribute("data-open", str(summary["open_requests"]))

    row.click()  # opens the quest's view; back returns to the list
    expect(page).to_have_url(re.compile(rf"#/q/{re.escape(quest_id)}$"))
    expect(page.locator(".quest-title")).to_have_text(summary["title"])
    expect(page.locator("#trace")).to_be_attached()
    expect(page.locator("#steer")).to_be_attached()
    page.go_back()
    expect(page.locator(f'.quest-row[data-quest="{quest_id}"]')).to_be_visible()


def test_the_list_follows_new_quests_and_their_open_decision_requests_live(page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    from ds_events.home import Quest
    from ds_events.services.interactions import mailbox as interactions

    expect(page.locator(f'.quest-row[data-quest="{demo[1]}"]')).to_be_visible()
    quest_id = f"web-list-{uuid.uuid4().hex[:8]}"
    status, body = server.api("/api/quests", "POST", {"title": "A quest made while the list is open", "id": quest_id})
    assert status == 201, body
    row = page.locator(f'.quest-row[data-quest="{quest_id}"]')
    expect(row.locator(".q-title")).to_have_text("A quest made while the list is open")  # no reload
    expect(row.locator(".q-requests")).to_have_attribute("data-open", "0")

    with Quest(server.home, quest_id, actor="mcp:artifact") as quest:  # the agent's side, another process than the daemon
        interactions.interact(quest, interactions.Interact(
            message="Sweep first?", kind="decision_request", options=[{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
        ))  # fmt: skip
    expect(row.locator(".q-requests")).to_have_attribute("data-open", "1")
    expect(row.locator(".q-requests")).to_have_text("1 open request")


def test_an_unknown_quest_shows_the_daemons_error_code(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    page = open_page(server, "/q/no-such-quest")
    expect(page.locator(".quest .problem .error code")).to_have_text("unknown_quest")
    expect(page.locator("#canvas .error code")).to_have_text("unknown_quest")
    page.locator("#crumbs a").click()  # and the way back to the list
    expect(page.locator(".list-view")).to_be_visible()
