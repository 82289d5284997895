"""The page at a phone's width (stacked, no sideways scrolling of the page itself) and in
dark mode (``prefers-color-scheme``); the guard itself fails on what it must."""

from __future__ import annotations

from typing import Any

from ds_events.home import Home

from .harness import Guard, Server


def test_at_phone_width_the_canvas_and_trace_stack_and_nothing_overflows(open_page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}", width=390, height=844)
    expect(page.locator("#canvas .node").first).to_be_visible()
    canvas, trace = page.locator("#canvas").bounding_box(), page.locator("#trace").bounding_box()
    assert trace["y"] >= canvas["y"] + canvas["height"]  # stacked, the trace below
    assert canvas["width"] <= 390 and trace["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # the graph scrolls inside its pane
    page.goto(server.page_url("/"))  # the list at that width too
    expect(page.locator(f'.quest-row[data-quest="{quest_id}"]')).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_wide_screens_put_the_trace_beside_the_canvas(open_page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}", width=1440, height=900)
    expect(page.locator("#canvas .node").first).to_be_visible()
    canvas, trace = page.locator("#canvas").bounding_box(), page.locator("#trace").bounding_box()
    assert trace["x"] >= canvas["x"] + canvas["width"] and abs(trace["y"] - canvas["y"]) < 1


def test_dark_mode_follows_prefers_color_scheme(open_page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    light = open_page(server, "/", color_scheme="light")
    dark = open_page(server, "/", color_scheme="dark")
    for p in (light, dark):
        expect(p.locator(f'.quest-row[data-quest="{quest_id}"]')).to_be_visible()
    background = "getComputedStyle(document.body).backgroundColor"
    assert light.evaluate(background) != dark.evaluate(background)
    assert _luminance(dark.evaluate(background)) < 0.2 < _luminance(light.evaluate(background))


def test_the_guard_fails_on_a_server_error_a_page_error_and_a_console_error(browser: Any, server: Server) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        guard = Guard()
        guard.watch(page)
        page.goto(server.page_url("/"))
        assert page.evaluate("fetch('/api/quests/nope').then(r => r.status)") == 404  # an answer, not a fault
        page.evaluate("console.error('boom')")
        page.evaluate("setTimeout(() => { throw new Error('uncaught') })")
        page.route("**/api/broken", lambda route: route.fulfill(status=500, body="{}"))
        assert page.evaluate("fetch('/api/broken').then(r => r.status)") == 500
        for _ in range(500):  # events reach the guard while playwright talks to the page
            if len(guard.problems) >= 3:
                break
            page.wait_for_timeout(10)
    finally:
        context.close()
    joined = "\n".join(guard.problems)
    assert "console error: boom" in joined and "uncaught" in joined and "HTTP 500" in joined
    assert "nope" not in joined


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) / 255 for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
