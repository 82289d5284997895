"""One ACP card per call over a real Codex turn: the pinned Codex CLI (against the scripted
Responses-API server on loopback) calls our real MCP servers; the quest's log then holds
Codex's view of each call (``runner.tool_*``) and our servers' records (``tool.call_*``),
and the ACP stream shows each call as exactly one card, with its result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp.schema import SessionNotification

from ds_events.home import Quest
from ds_events.runners import scheduler_for
from ds_events.services import quest as quest_service
from projections.acp import Notifier, from_notification
from tests.runtime.codex_support import codex_executable, responses_server, write_runner_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCRIPT = [
    {"items": [{"call": "mcp__memory__write", "call_id": "call_write",
                "arguments": {"kind": "knowledge", "title": "Warmup avoids early divergence", "body": "500 steps."}}],
     "usage": {"input_tokens": 300, "output_tokens": 40}},
    {"items": [{"call": "mcp__memory__write", "call_id": "call_refused", "arguments": {"kind": "knowledge", "title": ""}}],
     "usage": {"input_tokens": 300, "output_tokens": 20}},
    {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "call_bash",
                "arguments": {"command": "echo warmup=500", "mode": "await", "wait_timeout_seconds": 120}}],
     "usage": {"input_tokens": 400, "output_tokens": 20}},
    {"items": [{"say": "Card written, refusal seen, command run."}], "usage": {"input_tokens": 500, "output_tokens": 10}},
]  # fmt: skip


async def test_a_real_codex_turn_shows_one_card_per_call_with_its_result(quest: Quest) -> None:
    codex = codex_executable()
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    async with responses_server().ResponsesServer(SCRIPT) as server:
        write_runner_config(quest.home, codex=codex, base_url=server.base_url)
        finished = await scheduler_for(quest).run_until_idle()
    assert [f.outcome for f in finished] == ["completed"], finished

    log = quest.log.read()
    ours = [e for e in log if e.type == "runner.tool_call" and e.server in ("memory", "bash_exec")]
    assert len(ours) == 3 and len([e for e in log if e.type == "tool.call_finished"]) == 3
    notifier = Notifier(quest.id)
    cards: dict[str, list[dict[str, Any]]] = {}
    for event in log:
        note = json.loads(json.dumps(notifier.notification(event)))
        SessionNotification.model_validate(note["params"])
        assert from_notification(note) == event
        update = note["params"]["update"]
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(update["toolCallId"], []).append(update)
    assert len(cards) == 3, {k: [u["_meta"]["ds_events"]["type"] for u in v] for k, v in cards.items()}
    for card in cards.values():
        assert [u["sessionUpdate"] for u in card] == ["tool_call"] + ["tool_call_update"] * (len(card) - 1)
        assert {"runner.tool_call", "runner.tool_result", "tool.call_finished"} <= {
            u["_meta"]["ds_events"]["type"] for u in card
        }
    final = sorted((card[0]["title"], card[-1]["status"]) for card in cards.values())
    assert final == [("bash_exec.bash_exec", "completed"), ("memory.write", "completed"), ("memory.write", "failed")]
    refused = next(card for card in cards.values() if card[-1]["status"] == "failed")
    assert any("missing_title" in c["content"]["text"] for u in refused for c in u.get("content", []))
    bash = next(card for card in cards.values() if card[0]["title"].startswith("bash_exec"))
    assert "bash.session_exited" in {u["_meta"]["ds_events"]["type"] for u in bash}
