"""The real Claude Code CLI (pinned, installed by fixtures/install_agent.sh) driving whole
turns through our ``claude`` runner and the real scheduler, against the scripted Anthropic
Messages server on loopback (fixtures/anthropic_server.py).

The scripted model works the way a model would through all three namespaces: it searches
memory, writes a card, records an idea, starts a shell job detached and awaits it, then
answers. It does so in both of Claude Code's tool layouts: every tool in full (classic),
and our tools deferred behind Claude Code's ToolSearch, where each has to be found before
it can be called. Meanwhile the in-process daemon's SSE stream of the quest, in ACP
format, is read live and every frame validated against the ACP SDK's schema. A pause
during a shell await ends Claude Code's whole process group (and the job)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from acp.schema import SessionNotification

from ds_events.home import Quest
from ds_events.runners import scheduler_for
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering
from handlers.http import make_app
from tests.helpers import wait_until_async
from tests.http.sse import frames

from .agents import group_members, processes_with
from .claude_support import anthropic_server, claude_env, claude_executable, write_claude_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

OURS = ["mcp__memory__search", "mcp__memory__write", "mcp__artifact__record", "mcp__bash_exec__bash_exec"]

SCRIPT = [
    {"items": [{"think": "Look for what the quest already knows about warmup."},
               {"call": "mcp__memory__search", "call_id": "toolu_search", "arguments": {"query": "warmup divergence"}}],
     "usage": {"input_tokens": 300, "output_tokens": 30}},
    {"items": [{"say": "Nothing on warmup yet; recording the finding."},
               {"call": "mcp__memory__write", "call_id": "toolu_write",
                "arguments": {"kind": "knowledge", "title": "Warmup avoids early divergence", "body": "500 steps kept the loss finite."}}],
     "usage": {"input_tokens": 400, "output_tokens": 40}},
    {"items": [{"call": "mcp__artifact__record", "call_id": "toolu_record",
                "arguments": {"payload": {"kind": "idea", "title": "Longer warmup", "summary": "Try 1000 warmup steps."}}}],
     "usage": {"input_tokens": 500, "output_tokens": 30}},
    {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "toolu_detach",
                "arguments": {"mode": "detach", "command": "echo warmup=500; echo warmup=1000"}}],
     "usage": {"input_tokens": 600, "output_tokens": 20}},
    {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "toolu_await",
                "arguments": {"mode": "await", "wait_timeout_seconds": 120}}],
     "usage": {"input_tokens": 700, "output_tokens": 20}},
    {"items": [{"say": "Card written, idea recorded, both warmups listed."}], "usage": {"input_tokens": 800, "output_tokens": 10}},
]  # fmt: skip
CALLS = {  # call_id -> (our tool, its namespace)
    "toolu_search": ("memory.search", "memory"), "toolu_write": ("memory.write", "memory"),
    "toolu_record": ("artifact.record", "artifact"), "toolu_detach": ("bash_exec.bash_exec", "bash_exec"),
    "toolu_await": ("bash_exec.bash_exec", "bash_exec"),
}  # fmt: skip


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Start-up of a real Claude Code turn: ``point(server, layout)`` sets the env that
    aims Claude Code at ``server`` in that layout (the runner passes ours on)."""
    executable = claude_executable()

    def point(quest: Quest, base_url: str, layout: str) -> None:
        for key, value in claude_env(base_url, tmp_path / "claude-config", layout).items():
            monkeypatch.setenv(key, value)
        write_claude_config(quest.home, claude=executable)

    return point


async def _acp_stream(client: Any, quest_id: str, out: list[dict[str, Any]]) -> None:
    """The quest's live ACP stream from its first event, until the turn's end is shown."""
    async with client.get(f"/api/quests/{quest_id}/events?stream=1&format=acp&after=0") as resp:
        assert resp.status == 200
        async for frame in frames(resp, timeout=300):
            out.append(frame)
            if frame["data"]["params"]["update"]["_meta"]["ds_events"]["type"] == "runner.turn_finished":
                return


@pytest.mark.parametrize("layout", ["classic", "deferred"])
async def test_real_claude_code_works_through_all_three_namespaces_in_a_scheduled_turn(
    quest: Quest, claude: Any, aiohttp_client: Any, layout: str
) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    module = anthropic_server()
    client = await aiohttp_client(make_app(quest.home))
    shown: list[dict[str, Any]] = []
    async with module.AnthropicServer(SCRIPT) as server:
        claude(quest, server.base_url, layout)
        stream = asyncio.create_task(_acp_stream(client, quest.id, shown))
        finished = await scheduler_for(quest).run_until_idle()
        await asyncio.wait_for(stream, timeout=120)
    assert [f.outcome for f in finished] == ["completed"], finished
    run_id = finished[0].run_id
    log = list(quest.log.read())
    turn = [e for e in log if e.run_id == run_id]
    types = [e.type for e in turn]
    assert types[:3] == ["runner.turn_started", "mailbox.delivered", "runner.process_started"]
    assert types[-1] == "runner.turn_finished"

    # Claude Code's view of each call, and our servers' record of it, carry the turn's run id.
    calls = {e.call_id: e for e in turn if e.type == "runner.tool_call"}
    results = {e.call_id: e for e in turn if e.type == "runner.tool_result"}
    assert {cid: (calls[cid].tool, calls[cid].server) for cid in CALLS} == CALLS
    assert all(results[cid].status == "ok" for cid in CALLS), {cid: results[cid].output for cid in CALLS}
    ours = [(e.namespace, e.tool, e.status) for e in turn if e.type == "tool.call_finished"]
    assert ours == [("memory", "search", "ok"), ("memory", "write", "ok"), ("artifact", "record", "ok"),
                    ("bash_exec", "bash_exec", "ok"), ("bash_exec", "bash_exec", "ok")]  # fmt: skip
    card = next(e for e in turn if e.type == "memory.card_written")
    idea = next(e for e in turn if e.type == "artifact.recorded")
    started = next(e for e in turn if e.type == "bash.session_started")
    assert card.title == "Warmup avoids early divergence" and results["toolu_write"].output["id"] == card.card_id
    assert results["toolu_record"].output["artifact_id"] == idea.artifact_id
    assert results["toolu_detach"].output["status"] == "running"
    awaited = results["toolu_await"].output
    assert awaited["done"] is True and awaited["id"] == started.session_id and awaited["exit_code"] == 0
    assert awaited["log"] == "warmup=500\nwarmup=1000"
    # The scripted model's own order: each call was asked for after the previous one ended.
    order = [types.index("runner.reasoning")] + [
        i for i, e in enumerate(turn) if e.type in ("runner.tool_call", "runner.tool_result") and e.call_id in CALLS
    ]
    assert order == sorted(order)
    said = [e.text for e in turn if e.type == "runner.agent_message"]
    assert said == ["Nothing on warmup yet; recording the finding.", "Card written, idea recorded, both warmups listed."]

    # The layout the model met, and what it took to call our tools in it.
    searches = [e for e in turn if e.type == "runner.tool_call" and e.tool == "ToolSearch"]
    assert set(server.layouts) == {layout}
    if layout == "deferred":
        assert server.searches == [f"select:{name}" for name in OURS]
        assert [e.arguments["query"] for e in searches] == server.searches
        # Found, then called: each search's result names the tool. Before, the request
        # named our tools only in a system message; after, it lists each with its schema
        # (``defer_loading`` kept, as the API's own tool search expects).
        for search in searches:
            name = search.arguments["query"].removeprefix("select:")
            assert results[search.call_id].status == "ok" and name in json.dumps(results[search.call_id].output)
        first, last = server.requests[0], server.requests[-1]
        assert not set(OURS) & ({tool.get("name") for tool in first["tools"]})
        assert all(name in json.dumps(first["messages"]) for name in OURS)
        assert set(OURS) <= set(module.deferred_tools(last))
        assert all(module.deferred_tools(last)[name]["input_schema"]["properties"] for name in OURS)
    else:
        assert searches == [] and server.searches == []
        assert not any(module.search_tool(body) for body in server.requests)
        assert set(OURS) <= set(module.offered_tools(server.requests[0]))
    assert server.unoffered == [] and server.exhausted == 0 and server.script == []
    assert len(server.requests) == len(SCRIPT) + len(searches)
    assert all(body["stream"] is True for body in server.requests)

    end = turn[-1]
    assert end.outcome == "completed" and end.exit_code == 0
    assert (end.tool_calls, end.messages) == (len(CALLS) + len(searches), 2)
    assert end.usage["input_tokens"] == 3300 and end.usage["output_tokens"] == 150

    # The daemon's live ACP stream showed the whole turn, every frame a valid ACP
    # session/update, and each of our calls as a card that ends completed.
    assert [f["event"] for f in shown] == ["acp"] * len(shown)
    shown_seqs = [int(f["id"]) for f in shown]
    assert shown_seqs == list(range(1, end.seq + 1))
    cards: dict[str, list[dict[str, Any]]] = {}
    card_of_seq: dict[int, str] = {}  # an event's seq -> the card it updated
    for frame in shown:
        assert frame["data"]["method"] == "session/update"
        SessionNotification.model_validate(frame["data"]["params"])
        update = frame["data"]["params"]["update"]
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(update["toolCallId"], []).append(update)
            card_of_seq[int(frame["id"])] = update["toolCallId"]
    for cid, (tool, _) in CALLS.items():
        # The card is named after whichever half of the call reached the log first: Claude
        # Code's report of it, or (on a loaded machine, often) our server's own record.
        card = cards[card_of_seq[calls[cid].seq]]
        assert card_of_seq[results[cid].seq] == card_of_seq[calls[cid].seq]
        assert card[0]["sessionUpdate"] == "tool_call" and card[0]["title"] == tool
        assert card[-1]["status"] == "completed", card


async def test_pausing_a_real_claude_code_turn_during_a_shell_await_ends_its_process_group(quest: Quest, claude: Any) -> None:
    seconds = f"300.{random.randrange(10**6):06d}"  # a sleep no other process runs
    script = [
        {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "toolu_wait",
                    "arguments": {"mode": "await", "command": f"sleep {seconds}", "wait_timeout_seconds": 1200}}]},
        {"items": [{"say": "slept"}]},
    ]  # fmt: skip
    quest_service.post_message(quest, quest_service.PostMessage(text="sleep on it"), source="cli")
    async with anthropic_server().AnthropicServer(script) as server:
        claude(quest, server.base_url, "classic")
        task = asyncio.create_task(scheduler_for(quest).run_until_idle())

        def awaiting() -> Any:
            events = list(quest.log.read())
            started = [e for e in events if e.type == "tool.call_started" and e.tool == "bash_exec"]
            agent = [e for e in events if e.type == "runner.process_started"]
            return (agent[0], started[0]) if agent and started and _processes_with(seconds) else None

        agent, _ = await wait_until_async(awaiting, timeout=180, what="Claude Code to await the shell job")
        members = group_members(agent.pgid)
        # Claude Code leads its group (the namespaces are served by this host over http).
        assert agent.pid in members, members
        await asyncio.to_thread(steering.control, quest, quest_service.Control(action="pause", reason="test"))
        finished = await asyncio.wait_for(task, timeout=120)
    assert [(f.outcome, f.reason) for f in finished] == [("interrupted", "paused")]
    await wait_until_async(lambda: not group_members(agent.pgid), timeout=30, what="the agent's process group to end")
    # The model never heard the await's answer: at most, when Claude Code outlived its MCP
    # servers by a moment (a loaded machine), that the call failed.
    assert len(server.requests) in (1, 2), server.requests
    if len(server.requests) == 2:
        answered = anthropic_server().tool_results(server.requests[1])
        assert list(answered) == ["toolu_wait"] and answered["toolu_wait"].get("is_error") is True, answered
    # The pause ended the shell job too; its monitor records how.
    exited = await wait_until_async(
        lambda: [e for e in quest.log.read() if e.type == "bash.session_exited"], timeout=60, what="the job's end"
    )
    assert [(e.status, e.reason) for e in exited] == [("terminated", "quest_pause")]
    await wait_until_async(lambda: not _processes_with(seconds), timeout=30, what="the sleep to be gone")
    # The await never answered: Claude Code, if it outlived its MCP servers by a moment,
    # reported the call as failed ("Connection closed"), never as done.
    ended = [e for e in quest.log.read() if e.type == "runner.tool_result" and e.run_id == finished[0].run_id]
    assert [(e.call_id, e.status) for e in ended] in ([], [("toolu_wait", "error")])


def _processes_with(seconds: str) -> list[int]:
    return processes_with(b"sleep\x00" + seconds.encode())
