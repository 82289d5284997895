"""``ds acp`` hosting Claude Code turns (a stand-in ``claude`` that replays a recorded
stream-json session and really calls our MCP servers): each call of the recording is one
card — ours folded with our server's record, Claude's own ``Bash`` alone — and a run that
ends at Claude's turn limit (``error_max_turns``) ends the prompt with
``max_turn_requests``, saying so."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ds_events.home import Home, Quest

from .test_agent_process import Recorder
from .test_agent_turns import last_message, updates

REPO = Path(__file__).resolve().parents[2]
FAKE = [sys.executable, str(REPO / "fixtures" / "claude" / "fake_claude.py")]
pytestmark = pytest.mark.timeout(180)


def claude_config(home: Home) -> None:
    runner = {"name": "claude", "commands": {"claude": FAKE}, "max_attempts": 1, "kill_grace_seconds": 3.0}
    (home.root / "config.yaml").write_text(yaml.safe_dump({"runner": runner}), encoding="utf-8")


async def prompt(home: Home, recorder: Recorder, env: dict[str, str] | None = None) -> Any:
    import asyncio

    import acp

    from .test_agent_process import agent_env, ds_acp

    full = {**agent_env(home), "DS_ACP_QUIET_SECONDS": "120", **(env or {})}
    async with ds_acp(recorder, "--quest", "q1", env=full) as (
        conn, _proc,
    ):  # fmt: skip
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.new_session(cwd=str(home.root))
        return await asyncio.wait_for(conn.prompt(session_id="q1", prompt=[acp.text_block("check the baseline")]), 150)


async def test_a_recorded_claude_turns_calls_are_one_card_each(home: Home, quest: Quest) -> None:
    claude_config(home)
    recorder = Recorder()
    answer = await prompt(home, recorder)
    assert answer.stop_reason == "end_turn"
    cards: dict[str, list[dict[str, Any]]] = {}
    for u in updates(recorder):
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(u["toolCallId"], []).append(u)
    titles = sorted(card[0]["title"] for card in cards.values())
    assert titles == ["Bash", "memory.search", "memory.write"], {k: [x["_meta"]["ds_events"]["type"] for x in v]
                                                                 for k, v in cards.items()}  # fmt: skip
    for card in cards.values():
        assert [u["sessionUpdate"] for u in card] == ["tool_call"] + ["tool_call_update"] * (len(card) - 1)
        types = {u["_meta"]["ds_events"]["type"] for u in card}
        ours = card[0]["title"].startswith("memory.")
        assert types == ({"runner.tool_call", "runner.tool_result", "tool.call_finished"} if ours
                         else {"runner.tool_call", "runner.tool_result"}), types  # fmt: skip
        # The recording's Bash call exited 2 (no such directory): its card failed.
        assert card[-1]["status"] == ("completed" if ours else "failed"), card[-1]
    write = next(card for card in cards.values() if card[0]["title"] == "memory.write")
    assert any("written" in c["content"]["text"] for u in write for c in u.get("content", []))


async def test_a_claude_run_at_its_turn_limit_ends_with_max_turn_requests(home: Home, quest: Quest, tmp_path: Path) -> None:
    lines = [json.loads(line) for line in (REPO / "fixtures" / "claude" / "stream.jsonl").read_text().splitlines()]
    *head, result = lines
    stream = tmp_path / "max_turns.jsonl"
    failed = {**result, "subtype": "error_max_turns", "is_error": True, "result": None}
    stream.write_text("".join(json.dumps(x) + "\n" for x in [head[0], head[2], failed]))
    claude_config(home)
    recorder = Recorder()
    answer = await prompt(home, recorder, env={"FAKE_CLAUDE_STREAM": str(stream)})
    assert answer.stop_reason == "max_turn_requests"
    said = last_message(recorder)["content"]["text"]
    assert said.startswith("The turn hit the agent's turn limit: exit 1: error_max_turns"), said
