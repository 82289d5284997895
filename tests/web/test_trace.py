"""The live trace in a real browser over a real daemon: events other processes append
appear as cards, tool calls and records render as structured cards, a long quest keeps
a bounded window of cards in the DOM, and a reconnect resumes without duplicates."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ds_events.cli.demo import DEMO_TRAJECTORY
from ds_events.home import Home

from ..helpers import start_serve
from .conftest import TOKEN
from .harness import Guard, Server, screenshot_path, serve
from .trace_support import card_keys, ds_message, log_events, new_quest, quest_page, run_agent_script

WINDOW = 200  # trace.js's default windowSize: the most cards the DOM holds


def test_an_event_appended_by_another_process_appears_in_the_trace(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Trace follows other processes")
    page = quest_page(open_page, server, quest_id)
    seq = ds_message(server.home, quest_id, "appended by the ds CLI in its own process")
    card = page.locator(f'#trace .card[data-key="e:{seq}"]')
    expect(card).to_have_count(1)
    expect(card).to_have_class("card bubble user")
    expect(card.locator(".text")).to_have_text("appended by the ds CLI in its own process")
    expect(page.locator("#trace")).to_have_attribute("data-last-seq", str(seq))


_RUNNER_TOOLS = """
import sys
from ds_events.events.runner import RunnerToolCall, RunnerToolResult
from ds_events.home import Home, Quest
home, quest_id = Home(sys.argv[1]), sys.argv[2]
with Quest(home, quest_id, actor="runner:codex") as quest:
    run = "run-web-1"
    for event in (
        RunnerToolCall(call_id="c1", tool="shell", arguments={"command": "pytest -q tests/test_model.py"}, run_id=run),
        RunnerToolCall(call_id="c2", tool="memory.search", arguments={"query": "x"}, server="memory", run_id=run),
        RunnerToolResult(call_id="c2", status="ok", output={"ok": True, "count": 0, "items": []}, run_id=run),
        RunnerToolResult(call_id="c1", status="error", output="1 failed, 12 passed", run_id=run),
    ):
        quest.emit(event)
"""


def test_the_agents_own_tool_calls_show_as_one_card_each(open_page: Any, server: Server) -> None:
    """A call of the agent's own tool (its shell) is one card, its result merged in; the
    runner's view of a call to our servers makes no card (the server's record does)."""
    from playwright.sync_api import expect

    quest_id = new_quest(server, "The agent's own tools")
    page = quest_page(open_page, server, quest_id)
    run_agent_script(server.home, quest_id, _RUNNER_TOOLS)
    shell = page.locator('#trace .card.tool[data-key="rtool:run-web-1:c1"]')
    expect(shell.locator(".badge")).to_have_text("error")
    expect(shell.locator("code.cmd")).to_have_text("pytest -q tests/test_model.py")
    shell.locator("summary").click()
    expect(shell.locator("pre.output")).to_have_text("1 failed, 12 passed")
    expect(page.locator("#trace")).to_have_attribute("data-last-seq", "5")
    assert page.locator("#trace .card.tool").count() == 1


_MEMORY_CALLS = """
import asyncio, os, sys
import mcp

async def main():
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", "memory"],
                                       env=dict(os.environ, DS_QUEST_ID=sys.argv[2]))
    card = {"kind": "knowledge", "title": "Five warmup epochs stop the early loss spikes of ResNet-20",
            "body": "Loss spikes in 4 of 4 runs without warmup, none in 4 runs with it.", "tags": ["optim"]}
    async with mcp.Client(params) as client:
        for args in (card, card, {"query": "warmup loss spikes", "scope": "quest"}):
            result = await client.call_tool("search" if "query" in args else "write", args)
            assert not result.is_error, result.content
            print(result.structured_content.get("status", "found"))
        result = await client.call_tool("read", {"card_id": "knowledge-00000000"})
        print("refused" if result.is_error else "read")

asyncio.run(main())
"""


def test_memory_tool_calls_render_as_structured_cards(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "Memory cards in the trace")
    page = quest_page(open_page, server, quest_id)
    # The agent's side: the real memory MCP server in its own process, as a runner starts it.
    said = run_agent_script(server.home, quest_id, _MEMORY_CALLS).split()
    assert said == ["written", "duplicate_candidates", "found", "refused"]

    writes = page.locator('#trace .card.memory[data-op="write"]')
    expect(writes).to_have_count(2)
    saved, refused = writes.nth(0), writes.nth(1)
    expect(saved.locator(".badge")).to_have_text("ok")
    expect(saved).to_contain_text("scope quest")
    expect(saved).to_contain_text("kind knowledge")
    expect(saved).to_contain_text("title Five warmup epochs stop the early loss spikes of ResNet-20")
    expect(saved.locator(".saved")).to_contain_text("saved knowledge-")
    expect(saved.locator(".summary")).to_have_text("Loss spikes in 4 of 4 runs without warmup, none in 4 runs with it.")
    card_id = saved.locator(".saved").inner_text().split()[1]
    expect(refused.locator(".badge")).to_have_text("duplicate candidates")
    expect(refused.locator(".field.refused")).to_contain_text("duplicate refused")
    expect(refused.locator(".cards-found li")).to_contain_text(card_id)

    search = page.locator('#trace .card.memory[data-op="search"]')
    expect(search).to_contain_text("query warmup loss spikes")
    expect(search).to_contain_text("1 found")
    expect(search.locator(".cards-found li")).to_contain_text(card_id)
    # A refused call shows the code and message its record carries.
    (refusal,) = [e for e in log_events(server.home, quest_id, "tool.call_finished") if e["status"] == "error"]
    read = page.locator('#trace .card.memory[data-op="read"]')
    expect(read.locator(".badge")).to_have_text("error")
    expect(read).to_contain_text("card knowledge-00000000")
    expect(read.locator(".failure code")).to_have_text(refusal["error_code"])
    expect(read.locator(".failure")).to_contain_text(refusal["error_message"])
    # The card's own memory.card_written event makes no card of its own.
    assert page.locator("#trace .card.memory").count() == 4


def test_the_demo_quest_shows_records_metrics_shell_sessions_messages_and_reasoning(open_page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page = quest_page(open_page, server, quest_id)
    _scroll_to_beginning(page)
    trace = page.locator("#trace")
    expect(trace.locator(".card.divider").first).to_contain_text("quest created")
    main_run = trace.locator(".card.artifact", has_text="main run ls-0.1")
    expect(main_run.locator(".metric.better")).to_have_text("top1 0.921 (+0.009 vs 0.912)")
    expect(trace.locator(".card.artifact", has_text="baseline rn20 confirmed")).to_contain_text("top1 0.912")
    expect(trace.locator(".card.artifact", has_text="decision decision-0001")).to_contain_text("baseline found")
    expect(trace.locator(".card.bubble.agent").first).to_be_visible()
    expect(trace.locator(".card.bubble.user").first).to_contain_text("Does label smoothing help")

    reasoning = trace.locator("details.card.reasoning").first
    expect(reasoning).not_to_have_attribute("open", "")  # reasoning starts collapsed
    reasoning.locator("summary").click()
    expect(reasoning.locator(".text")).to_be_visible()

    # The main run's shell session: status, progress, and its output when opened.
    shell = trace.locator(".card.bash", has_text="epoch")
    expect(shell.locator(".badge")).to_have_text("completed")
    expect(shell.locator(".progress")).to_contain_text("epoch 3 · top1 0.921")
    expect(shell.locator("pre.output")).not_to_be_visible()
    shell.locator("summary").click()
    expect(shell.locator("pre.output")).to_contain_text("epoch 1\n")
    expect(shell.locator("pre.output")).to_contain_text("epoch 3")
    keys = card_keys(page)
    assert len(keys) == len(set(keys))


_BULK = """
import sys
from ds_events.events import ConversationMessage
from ds_events.events.runner import AgentMessage
from ds_events.home import Home, Quest
home, quest_id, n = Home(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with Quest(home, quest_id, actor="cli") as quest:
    events = [ConversationMessage(role="user", content=f"question {i}", source="bulk") if i % 2 == 0
              else AgentMessage(text=f"answer {i}") for i in range(n)]
    for start in range(0, n, 500):
        quest.emit(events[start:start + 500])
    print(quest.log.last_seq)
"""


def test_the_trace_keeps_a_bounded_window_of_cards_over_thousands_of_events(open_page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(server, "A long quest")
    page = quest_page(open_page, server, quest_id, height=700)
    # 2,000 events from another process while the trace follows at the bottom: the
    # newest stay, the oldest leave.
    last = int(run_agent_script(server.home, quest_id, _BULK, "2000"))
    assert last == 2001
    trace = page.locator("#trace")
    expect(trace).to_have_attribute("data-last-seq", str(last))
    expect(trace.locator(".trace-list > .card").last).to_have_attribute("data-key", f"e:{last}")
    assert _cards(page) <= WINDOW

    # Scrolling up pages older events in and drops the far end: never more than WINDOW cards.
    lows = _scroll_to_beginning(page)
    assert len(lows) > 5, lows  # it took many pages
    expect(trace.locator(".trace-list > .card").first).to_have_attribute("data-seq", "1")
    assert _cards(page) <= WINDOW
    keys = card_keys(page)
    assert len(keys) == len(set(keys))

    # A live event while the reader is far up: counted, not added; "newer events" offered.
    seq = ds_message(server.home, quest_id, "the newest message")
    expect(trace).to_have_attribute("data-last-seq", str(seq))
    expect(trace.locator(".trace-jump")).to_be_visible()
    assert page.locator(f'#trace .card[data-key="e:{seq}"]').count() == 0

    # Scrolling back down pages newer events in, dropping the top, up to the live end.
    for _ in range(100):
        if page.locator("#trace .trace-jump").is_hidden():
            break
        previous = trace.get_attribute("data-high")
        page.eval_on_selector("#trace .trace-scroll", "el => { el.scrollTop = el.scrollHeight; }")
        page.wait_for_function(
            "prev => document.querySelector('#trace').dataset.high !== prev || document.querySelector('#trace .trace-jump').hidden",
            arg=previous,
        )
        assert _cards(page) <= WINDOW
    expect(trace.locator(".trace-jump")).to_be_hidden()
    expect(trace.locator(".trace-list > .card").last).to_have_attribute("data-key", f"e:{seq}")
    keys = card_keys(page)
    assert len(keys) == len(set(keys)) and _cards(page) <= WINDOW


def test_a_reconnect_after_the_daemon_restarts_resumes_without_a_duplicate_card(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    home = Home(tmp_path / "home")
    home.init()
    home.create_quest("Reconnect", quest_id="rq").close()
    port = _free_port()
    proc, _ = start_serve(home, "--no-turns", "--port", str(port), log=tmp_path / "serve-1.log")
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    page = context.new_page()
    guard = Guard()
    guard.watch(page)
    resumes: list[str | None] = []  # the Last-Event-ID of each trace stream request

    def on_request(request: Any) -> None:
        if request.url.endswith("/api/quests/rq/events") and "text/event-stream" in request.headers.get("accept", ""):
            resumes.append(request.headers.get("last-event-id"))

    page.on("request", on_request)
    try:
        page.goto(f"http://127.0.0.1:{port}/#/q/rq")
        state = page.locator("#trace .trace-state")
        expect(state).to_have_attribute("data-state", "live")
        first = ds_message(home, "rq", "before the restart")
        expect(page.locator(f'#trace .card[data-key="e:{first}"]')).to_have_count(1)

        connected = len(resumes)
        proc.terminate()  # the daemon ends its streams and goes away
        proc.wait(timeout=30)
        expect(state).to_have_attribute("data-state", "reconnecting")
        during = ds_message(home, "rq", "while the daemon was down")
        proc, _ = start_serve(home, "--no-turns", "--port", str(port), log=tmp_path / "serve-2.log")

        expect(state).to_have_attribute("data-state", "live", timeout=30_000)
        after = ds_message(home, "rq", "after the restart")
        for seq in (first, during, after):
            expect(page.locator(f'#trace .card[data-key="e:{seq}"]')).to_have_count(1)
        texts = page.locator("#trace .card.bubble.user .text").all_inner_texts()
        assert texts == ["before the restart", "while the daemon was down", "after the restart"]
        keys = card_keys(page)
        assert len(keys) == len(set(keys))
        seqs = [int(s) for s in page.eval_on_selector_all("#trace .trace-list > .card", "els => els.map(e => e.dataset.seq)")]
        assert seqs == sorted(seqs)
        # Every attempt to reconnect asked to resume after the last event the trace had.
        assert resumes[connected:] and set(resumes[connected:]) == {str(first)}, resumes
    finally:
        page.screenshot(path=str(screenshot_path("test_a_reconnect_after_the_daemon_restarts")), full_page=True)
        context.close()
        proc.terminate()
        proc.wait(timeout=30)
    # While the daemon was down the browser reported the refused connections; nothing else.
    assert not [p for p in guard.problems if "ERR_CONNECTION_REFUSED" not in p], guard.problems


def test_the_trace_follows_the_stream_of_a_daemon_that_requires_a_token(open_page: Any, token_server: Server) -> None:
    from playwright.sync_api import expect

    quest_id = new_quest(token_server, "Trace with a token")
    page = open_page(token_server, f"/q/{quest_id}")
    expect(page.locator("#token-dialog")).to_be_visible()  # asked once, on the first 401
    page.fill("#token-input", TOKEN)
    page.click("#token-submit")
    expect(page.locator("#trace .trace-state")).to_have_attribute("data-state", "live")
    seq = ds_message(token_server.home, quest_id, "seen through a stream that sent the token")
    expect(page.locator(f'#trace .card[data-key="e:{seq}"]')).to_contain_text("seen through a stream that sent the token")
    expect(page.locator("#token-dialog")).to_be_hidden()


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[Server]:
    """A daemon that runs turns: the demo's scripted agent through the real MCP servers,
    over a home of its own holding the quest ``live``. (Asked for before ``open_page``,
    it outlives the page, so the page's last screenshot still sees it.)"""
    home = Home(tmp_path / "home")
    home.init()
    home.create_quest("A live turn", quest_id="live").close()
    with serve(home, "--runner", "scripted", "--trajectory", str(DEMO_TRAJECTORY), log=tmp_path / "serve.log") as s:
        yield s


def test_a_turn_of_the_scripted_agent_streams_into_the_trace_live(live_server: Server, open_page: Any) -> None:
    """A message from the page starts a turn; the agent's reasoning, memory calls,
    record and answer appear while the turn runs."""
    from playwright.sync_api import expect

    page = quest_page(open_page, live_server, "live")
    page.fill("#steer textarea", "Find the comparator first.")
    page.click("#steer button.send")
    trace = page.locator("#trace")
    expect(trace.locator(".card.divider", has_text="turn started · scout")).to_have_count(1, timeout=60_000)
    expect(trace.locator("details.card.reasoning")).to_contain_text("Frame the task")
    expect(trace.locator('.card.memory[data-op="search"]')).to_contain_text("query cifar10 resnet label smoothing")
    expect(trace.locator('.card.memory[data-op="write"] .saved')).to_have_count(2)
    expect(trace.locator(".card.artifact", has_text="decision decision-0001")).to_contain_text("baseline found")
    expect(trace.locator(".card.bubble.agent", has_text="Scouting done")).to_have_count(1)
    expect(trace.locator(".card.divider", has_text="turn completed")).to_have_count(1, timeout=60_000)
    # Calls to our MCP servers show once (their own record), not again as the runner saw them.
    assert trace.locator(".card.tool", has_text="memory.").count() == 0
    keys = card_keys(page)
    assert len(keys) == len(set(keys))


_PARSE = """
async (chunks) => {
  const { parseFrames } = await import("/static/sse.js");
  const frames = [];
  let pending = "";
  for (const chunk of chunks) {
    const parsed = parseFrames(pending + chunk);
    pending = parsed.rest;
    frames.push(...parsed.frames);
  }
  return { frames, pending };
}
"""


def test_the_stream_parser_joins_frames_split_across_chunks(page: Any) -> None:
    stream = 'retry: 2000\r\n\r\n: keep-alive\n\nid: 7\nevent: event\ndata: {"a":\ndata: 1}\n\nid: 8\ndata:{"b": 2}\r\n\r\nid: 9\ndata: {"c'
    # Every way of cutting the text in two gives the same frames.
    for cut in range(len(stream) + 1):
        got = page.evaluate(_PARSE, [stream[:cut], stream[cut:]])
        assert got["frames"] == [
            {"retry": 2000},
            {},
            {"id": "7", "event": "event", "data": '{"a":\n1}'},
            {"id": "8", "data": '{"b": 2}'},
        ], cut
        assert got["pending"] == 'id: 9\ndata: {"c', cut


# -- helpers ------------------------------------------------------------------------------


def _cards(page: Any) -> int:
    return int(page.eval_on_selector_all("#trace .trace-list > .card", "els => els.length"))


def _scroll_to_beginning(page: Any) -> list[int]:
    """Scroll the trace to its top until the first event is in; the window's low seq
    after each page."""
    lows = []
    for _ in range(200):
        if page.locator("#trace .trace-older").inner_text() == "the beginning of the quest":
            return lows
        previous = page.locator("#trace").get_attribute("data-low")
        page.eval_on_selector("#trace .trace-scroll", "el => { el.scrollTop = 0; }")
        page.wait_for_function(
            "prev => { const t = document.querySelector('#trace'); return t.dataset.low !== prev"
            " || t.querySelector('.trace-older').textContent === 'the beginning of the quest'; }",
            arg=previous,
        )
        lows.append(int(page.locator("#trace").get_attribute("data-low")))
        assert _cards(page) <= WINDOW
    raise AssertionError("never reached the beginning of the quest")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
