"""Steering from the page in a real browser over a real daemon: a message, an answer to
the agent's decision request and pause / resume land in the quest's log, and the page
shows each only once its event comes back on the stream; a refused action shows the
route's error code and changes nothing."""

from __future__ import annotations

from typing import Any

from .harness import Server
from .trace_support import card_keys, log_events, new_quest, open_decision_request, quest_page


def test_a_message_sent_from_the_page_lands_in_the_log_and_comes_back_as_a_card(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Steering: a message")
    page = quest_page(open_page, server, quest_id)
    page.fill("#steer textarea", "Try a cosine schedule before the sweep.")
    page.click("#steer button.send")
    bubble = page.locator("#trace .card.bubble.user", has_text="Try a cosine schedule before the sweep.")
    expect(bubble).to_have_count(1)
    expect(page.locator("#steer textarea")).to_have_value("")

    (message,) = [e for e in log_events(server.home, quest_id, "conversation.message") if e["content"] == "Try a cosine schedule before the sweep."]
    assert message["role"] == "user" and message["source"] == "http"
    expect(bubble).to_have_attribute("data-key", f"e:{message['seq']}")  # the card is the logged event


def test_answering_a_decision_request_by_its_option_lands_in_the_log(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Steering: a decision")
    page = quest_page(open_page, server, quest_id, width=390, height=844)  # a phone's width
    iid = open_decision_request(server.home, quest_id, "Write it up, or sweep the smoothing value first?")

    request = page.locator(f'#steer .request[data-interaction="{iid}"]')
    expect(request).to_contain_text("Write it up, or sweep the smoothing value first?")
    expect(request.locator("button.option")).to_have_text(["Write it up", "Sweep 0.05-0.2 first"])
    expect(page.locator("#trace .card.interaction-decision_request")).to_contain_text("Write it up, or sweep")
    request.locator('button[data-option="sweep"]').click()

    expect(request).to_have_count(0)  # closed once the reply is in the log and came back
    expect(page.locator("#trace .card.bubble.user", has_text="Sweep 0.05-0.2 first (sweep)")).to_have_count(1)
    (reply,) = log_events(server.home, quest_id, "interaction.replied")
    assert reply["interaction_id"] == iid and reply["option_id"] == "sweep" and reply["source"] == "http"
    status, inbox = server.api(f"/api/quests/{quest_id}/interactions")
    assert status == 200 and inbox["open_requests"] == []


def test_pause_shows_the_quest_paused_and_resume_active_again(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Steering: pause")
    streams: list[str] = []
    page = open_page(server, "/")  # the list first: then watch the quest view's requests
    page.on("request", lambda r: streams.append(r.url) if "text/event-stream" in r.headers.get("accept", "") else None)
    page.goto(server.page_url(f"/q/{quest_id}"))
    expect(page.locator("#trace .trace-state")).to_have_attribute("data-state", "live")
    expect(page.locator("#steer .steer-status")).to_have_text("active")
    page.click('#steer button[data-action="pause"]')
    expect(page.locator("#steer .steer-status")).to_have_text("paused")
    expect(page.locator("#trace .card.control.pause")).to_contain_text("paused")
    assert [e["action"] for e in log_events(server.home, quest_id, "quest.control")] == ["pause"]
    status, shown = server.api(f"/api/quests/{quest_id}")
    assert status == 200 and shown["status"] == "paused"

    page.click('#steer button[data-action="resume"]')
    expect(page.locator("#steer .steer-status")).to_have_text("active")
    expect(page.locator("#trace .card.control.resume")).to_contain_text("resumed")
    assert [e["action"] for e in log_events(server.home, quest_id, "quest.control")] == ["pause", "resume"]
    keys = card_keys(page)
    assert len(keys) == len(set(keys))
    # One stream for the quest's view: the steering panel heard the trace's.
    assert streams == [f"{server.url}/api/quests/{quest_id}/events"], streams


def test_the_steering_panel_alone_follows_a_stream_of_its_own(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Steering without a trace")
    page = open_page(server, "/")  # no trace of the quest on this page
    page.evaluate(
        """async (questId) => {
          const { mountSteering } = await import("/static/steer.js");
          const el = document.createElement("section");
          el.id = "steer-alone";
          document.body.append(el);
          mountSteering(el, { questId });
        }""",
        quest_id,
    )
    expect(page.locator("#steer-alone .steer-status")).to_have_text("active")
    page.click('#steer-alone button[data-action="pause"]')
    expect(page.locator("#steer-alone .steer-status")).to_have_text("paused")
    # The agent asks from another process: the panel's own stream brings the request.
    iid = open_decision_request(server.home, quest_id, "Keep the schedule?")
    expect(page.locator(f'#steer-alone .request[data-interaction="{iid}"] button.option')).to_have_count(2)


def test_a_refused_message_shows_the_routes_code_and_appends_nothing(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Steering: refused")
    page = quest_page(open_page, server, quest_id)
    before = log_events(server.home, quest_id)
    page.fill("#steer textarea", "   ")
    page.click("#steer button.send")
    error = page.locator("#steer .steer-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("empty_message: ")
    assert log_events(server.home, quest_id) == before
    expect(page.locator("#trace .card.bubble.user")).to_have_count(0)

    # The next accepted action clears the error.
    page.fill("#steer textarea", "now with words")
    page.click("#steer button.send")
    expect(page.locator("#trace .card.bubble.user", has_text="now with words")).to_have_count(1)
    expect(error).to_be_hidden()


def test_the_pages_posts_carry_its_own_origin_and_json_and_pass_the_guard_under_localhost_too(open_page: Any, server: Server) -> None:
    """What the daemon's guard admits (handlers/http/guard.py) is what a real browser sends
    from the page: its own Origin, Sec-Fetch-Site: same-origin and a JSON body; under the
    name ``localhost`` as under ``127.0.0.1``."""
    import dataclasses

    from playwright.sync_api import expect

    for name in ("127.0.0.1", "localhost"):
        at = dataclasses.replace(server, url=server.url.replace("127.0.0.1", name))
        quest_id = new_quest(server, f"Steering: the page at {name}")
        page = quest_page(open_page, at, quest_id)
        page.fill("#steer textarea", f"sent from the page at {name}")
        with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/messages")) as posted:
            page.click("#steer button.send")
        headers = posted.value.all_headers()
        assert headers.get("origin") == at.url, headers
        assert headers.get("content-type", "").startswith("application/json"), headers
        assert headers.get("sec-fetch-site") == "same-origin", headers
        expect(page.locator("#trace .card.bubble.user", has_text=f"sent from the page at {name}")).to_have_count(1)
        assert [e for e in log_events(server.home, quest_id, "conversation.message") if e["content"] == f"sent from the page at {name}"]
