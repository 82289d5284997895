"""With a token configured the page loads, asks for the token once (on the first 401),
keeps it for the tab (a reload does not ask again), and asks again when it is wrong."""

from __future__ import annotations

from typing import Any

from ds_events.home import Home

from .conftest import TOKEN
from .harness import Server


def test_the_page_asks_for_the_token_once_and_keeps_it_for_the_tab(open_page: Any, token_server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page = open_page(token_server)
    dialog = page.locator("#token-dialog")
    expect(dialog).to_be_visible()  # the list route answered 401
    expect(page.locator(".quest-row")).to_have_count(0)

    page.fill("#token-input", "wrong")
    page.click("#token-submit")
    expect(page.locator("#token-reason")).to_contain_text("refused")  # asked again, saying why
    expect(dialog).to_be_visible()

    page.fill("#token-input", TOKEN)
    page.click("#token-submit")
    expect(dialog).to_be_hidden()
    expect(page.locator(f'.quest-row[data-quest="{quest_id}"]')).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('ds-events.token')") == TOKEN

    page.reload()  # the same tab: no second question
    page.locator(f'.quest-row[data-quest="{quest_id}"]').click()
    expect(page.locator("#canvas .node").first).to_be_visible()
    expect(dialog).to_be_hidden()
