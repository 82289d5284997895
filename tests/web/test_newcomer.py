"""What a newcomer found on the page (issue 24, parts 1 and 8), each in a real browser over
a real daemon: a quest's health in the list and the header (a failed quest stands out),
the controls enabled by the quest's state, node details without stray "null" lines and a
slice titled as itself, every stage of the stage view connected, event-view titles that
fit their nodes, an open call of an interrupted turn no longer "running", the steering
box within the first screen of a phone, and the actor of a message sent from the page."""

from __future__ import annotations

import urllib.parse
from typing import Any

from .harness import Server
from .trace_support import log_events, new_quest, quest_page, run_agent_script

# A turn that failed on a refused call and is held for the user (the record the
# scheduler leaves), appended by another process than the daemon, as the agent's host.
_FAIL = """
import sys
from ds_events.events.runner import TurnFailure, TurnFinished, TurnHeld, TurnStarted
from ds_events.home import Home, Quest
home, quest_id = Home(sys.argv[1]), sys.argv[2]
with Quest(home, quest_id, actor="scheduler") as quest:
    quest.emit(TurnStarted(run_id="run-f1", runner="scripted", skill="scout"))
    quest.emit(TurnFinished(run_id="run-f1", outcome="failed", reason="exit 1"))
    failure = TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record", call_id="call-3",
                          error="invalid_metrics")
    quest.emit(TurnHeld(run_id="run-f1", attempt=3, max_attempts=3, reason="artifact.record refused", failure=failure))
"""


def test_a_failed_quest_stands_out_in_the_list_and_its_header_with_its_summary(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    failed = new_quest(server, "Health: a failed quest")
    calm = new_quest(server, "Health: a calm quest")
    run_agent_script(server.home, failed, _FAIL)
    status, shown = server.api(f"/api/quests/{failed}")
    assert status == 200 and shown["health"]["state"] == "failed", shown
    summary = shown["health"]["summary"]
    assert "artifact.record refused" in summary

    page = open_page(server, "/")
    row = page.locator(f'.quest-row[data-quest="{failed}"]')
    expect(row).to_have_attribute("data-health", "failed")
    expect(row.locator(".q-health")).to_have_text("failed")
    expect(row.locator(".q-health-summary")).to_have_text(summary)
    calm_row = page.locator(f'.quest-row[data-quest="{calm}"]')
    expect(calm_row.locator(".q-health")).to_have_text("new")
    expect(calm_row.locator(".q-health-summary")).to_have_count(0)  # nothing to look at
    # It stands out: its own colours and border, not the calm row's.
    looks = page.evaluate(
        """([a, b]) => [a, b].map((id) => {
             const row = document.querySelector(`.quest-row[data-quest="${id}"]`);
             const badge = getComputedStyle(row.querySelector('.q-health'));
             return [getComputedStyle(row).borderLeftColor, getComputedStyle(row).borderLeftWidth, badge.backgroundColor];
           })""",
        [failed, calm],
    )
    assert looks[0] != looks[1] and looks[0][1] != looks[1][1], looks

    row.click()
    head = page.locator("section.quest .quest-head .badge.health")
    expect(head).to_have_text("failed")
    expect(page.locator("section.quest")).to_have_attribute("data-health", "failed")
    line = page.locator("section.quest .health-summary")
    expect(line).to_be_visible()
    expect(line).to_have_text(summary)
    expect(page.locator("#steer .steer-health")).to_have_text("failed")


def _enabled(page: Any) -> dict[str, bool]:
    return page.eval_on_selector_all("#steer button.control", "bs => Object.fromEntries(bs.map(b => [b.dataset.action, !b.disabled]))")


def test_the_controls_enabled_are_those_that_apply_to_the_quests_state(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Controls by state")
    page = quest_page(open_page, server, quest_id)
    steer = page.locator("#steer")
    buttons = {a: steer.locator(f'button.control[data-action="{a}"]') for a in ("pause", "stop", "resume")}
    expect(steer.locator(".steer-status")).to_have_text("active")
    expect(buttons["resume"]).to_be_disabled()
    assert _enabled(page) == {"pause": True, "stop": True, "resume": False}

    buttons["pause"].click()  # through the page: the quest is paused
    expect(steer.locator(".steer-status")).to_have_text("paused")
    expect(buttons["pause"]).to_be_disabled()
    assert _enabled(page) == {"pause": False, "stop": True, "resume": True}

    buttons["stop"].click()
    expect(steer.locator(".steer-status")).to_have_text("stopped")
    expect(buttons["stop"]).to_be_disabled()
    assert _enabled(page) == {"pause": False, "stop": False, "resume": True}

    buttons["resume"].click()
    expect(steer.locator(".steer-status")).to_have_text("active")
    expect(buttons["resume"]).to_be_disabled()
    assert _enabled(page) == {"pause": True, "stop": True, "resume": False}

    run_agent_script(server.home, quest_id, _COMPLETE)  # the agent completes it (another process)
    expect(steer.locator(".steer-status")).to_have_text("completed")
    for button in buttons.values():
        expect(button).to_be_hidden()
        expect(button).to_be_disabled()
    controls = [e["action"] for e in log_events(server.home, quest_id, "quest.control")]
    assert controls == ["pause", "stop", "resume"]  # one event per click, none refused


_COMPLETE = """
import sys
from ds_events.home import Home, Quest
from ds_events.services.quest import lifecycle
home, quest_id = Home(sys.argv[1]), sys.argv[2]
with Quest(home, quest_id, actor="mcp:artifact") as quest:
    lifecycle.complete(quest, lifecycle.Complete(summary="done"))
"""


def _details_of(page: Any, view: str, node_id: str) -> Any:
    from playwright.sync_api import expect

    page.click(f'.tab[data-view="{view}"]')
    node = page.locator(f'.board[data-view="{view}"] .node[data-id="{node_id}"]')
    node.click()
    body = page.locator(".details-body")
    expect(body.locator("h3.node-title")).to_be_visible()
    expect(body).not_to_contain_text("Loading")
    return body


def test_node_details_have_no_null_lines_and_a_slice_is_titled_as_itself(open_page: Any, server: Server, demo: Any) -> None:
    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}")
    page.wait_for_selector('.board[data-view="branch"] .node')
    branches = page.eval_on_selector_all('.board[data-view="branch"] .node', "ns => ns.map(n => n.dataset.id)")
    for view, node_id in [("branch", b) for b in branches] + [("stage", "stage:main:scout"), ("event", "decision:decision-0001")]:
        body = _details_of(page, view, node_id)
        # No text node of the body's own is "null": a section with nothing to show is left out.
        stray = body.evaluate("b => [...b.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent)")
        assert stray == [], (view, node_id, stray)
        assert "nullnull" not in body.inner_text()
    slice_branch = next(b for b in branches if b.startswith("analysis/"))
    body = _details_of(page, "branch", slice_branch)
    status, details = server.api(f"/api/quests/{quest_id}/nodes/{urllib.parse.quote('branch:' + slice_branch, safe='')}")
    assert status == 200 and details["artifact"]["kind"] == "slice"
    own = details["artifact"]["payload"]["title"]  # "without augmentation"
    title = body.locator("h3.node-title").inner_text()
    assert title.startswith(own), title  # the slice's title, not the run's (the idea's) it branched from
    assert "Label smoothing 0.1" not in title


def test_every_stage_of_the_stage_view_is_connected(open_page: Any, server: Server, demo: Any) -> None:
    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}")
    page.click('.tab[data-view="stage"]')
    page.wait_for_selector('.board[data-view="stage"] .node')
    nodes = set(page.eval_on_selector_all(".board .node", "ns => ns.map(n => n.dataset.id)"))
    ends = page.eval_on_selector_all(".board .edge", "es => es.flatMap(e => [e.dataset.source, e.dataset.target])")
    assert any(n.startswith("stage:analysis/") for n in nodes)
    assert nodes - set(ends) == set(), "stages drawn without an edge"


def test_event_view_titles_fit_their_nodes_and_are_not_cut_short(open_page: Any, server: Server, demo: Any) -> None:
    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}")
    page.click('.tab[data-view="event"]')
    page.wait_for_selector('.board[data-view="event"] .node')
    shown = page.evaluate(
        """() => [...document.querySelectorAll('.board .node')].map((n) => ({
             id: n.dataset.id,
             title: n.querySelector('title').textContent.split('\\n')[0],
             lines: [...n.querySelectorAll('text.n-label')].map((t) => t.textContent),
             widest: Math.max(...[...n.querySelectorAll('text')].map((t) => t.getComputedTextLength() + t.x.baseVal[0].value)),
             width: n.querySelector('rect').width.baseVal.value,
             bottom: Math.max(...[...n.querySelectorAll('text')].map((t) => t.getBBox().y + t.getBBox().height)),
             height: n.querySelector('rect').height.baseVal.value,
           }))"""
    )
    assert shown
    for n in shown:
        assert n["widest"] <= n["width"], n  # no text runs past its node
        assert n["bottom"] <= n["height"], n
    # The decisions' verdict → action and the report's title read whole (they were cut at 23 characters).
    whole = {n["id"]: " ".join(n["lines"]) for n in shown}
    titles = {n["id"]: n["title"] for n in shown}
    for node_id in ("decision:decision-0001", "decision:decision-0003", "report:report-0001"):
        assert whole[node_id] == titles[node_id], (whole[node_id], titles[node_id])


# A turn cut off by a pause while a shell await was open: the call started, the pause, the
# turn recorded interrupted and no finish of the call (the record a paused turn leaves).
_INTERRUPTED = """
import sys
from ds_events.events.runner import TurnFinished, TurnStarted
from ds_events.events.tool import ToolCallStarted
from ds_events.home import Home, Quest
from ds_events.services import quest as quest_service
home, quest_id, step = Home(sys.argv[1]), sys.argv[2], sys.argv[3]
if step == "start":
    with Quest(home, quest_id, actor="scheduler") as quest:
        quest.emit(TurnStarted(run_id="run-i1", runner="scripted", skill="experiment"))
    with Quest(home, quest_id, actor="mcp:bash_exec", run_id="run-i1") as quest:
        quest.emit(ToolCallStarted(call_id="tc-await-1", namespace="bash_exec", tool="bash_exec",
                                   arguments={"command": "sleep 600", "mode": "await"}))
else:
    with Quest(home, quest_id, actor="scheduler") as quest:
        quest_service.record_control(quest, quest_service.Control(action="pause"))
        quest.emit(TurnFinished(run_id="run-i1", outcome="interrupted", reason="paused"))
"""


def test_an_await_cut_off_by_a_pause_is_shown_interrupted_not_running(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "An await cut off by a pause")
    page = quest_page(open_page, server, quest_id)
    run_agent_script(server.home, quest_id, _INTERRUPTED, "start")
    card = page.locator('#trace .card[data-key="tool:tc-await-1"]')
    expect(card.locator(".badge")).to_have_text("running")  # live: the turn still runs
    run_agent_script(server.home, quest_id, _INTERRUPTED, "pause")
    expect(card.locator(".badge")).to_have_text("interrupted")
    page.reload()  # the same from a fresh read of the log
    expect(page.locator('#trace .card[data-key="tool:tc-await-1"] .badge')).to_have_text("interrupted")


def test_on_a_phone_the_steering_box_is_within_the_first_screen(open_page: Any, server: Server, demo: Any) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page = open_page(server, f"/q/{quest_id}", width=390, height=844)
    expect(page.locator("#steer textarea")).to_be_visible()
    page.wait_for_selector('.board[data-view="branch"] .node')
    page.wait_for_selector("#trace .card")
    box = page.locator("#steer").bounding_box()
    assert box is not None and box["y"] + box["height"] <= 844, box  # no scrolling to reach it
    assert page.evaluate("() => window.scrollY") == 0


def test_a_message_sent_from_the_page_is_recorded_as_the_users(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Who sent it")
    page = quest_page(open_page, server, quest_id)
    page.fill("#steer textarea", "Who am I?")
    page.click("#steer button.send")
    expect(page.locator("#trace .card.bubble.user", has_text="Who am I?")).to_have_count(1)
    (message,) = [e for e in log_events(server.home, quest_id, "conversation.message") if e["content"] == "Who am I?"]
    assert message["actor"] == "user:http" and message["source"] == "http", message


def test_closed_tabs_leave_no_traceback_in_the_daemons_log(browser: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Tabs that close")
    for n in range(3):  # each tab follows the quest's stream, then goes (page, then context)
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.page_url(f"/q/{quest_id}"))
        expect(page.locator("#trace .trace-state")).to_have_attribute("data-state", "live")
        if n % 2:
            page.close()
        context.close()
        status, _ = server.api(f"/api/quests/{quest_id}/messages", "POST", {"text": f"after tab {n}"})
        assert status == 201  # an event for the streams whose tab just went
    status, shown = server.api(f"/api/quests/{quest_id}")
    assert status == 200 and shown["last_seq"] >= 4
    text = server.log.read_text()
    assert "Traceback" not in text and "ClientConnectionResetError" not in text, text
