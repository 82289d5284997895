"""``ds events tail --format raw|acp``: the stored lines, or one ACP notification per event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp.schema import SessionNotification

from ds_events.events import ConversationMessage, QuestAnchorChanged, decode_line
from projections.acp import from_notification

REPO = Path(__file__).resolve().parents[2]


def run_cli(home, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DS_HOME": str(home.root)}
    return subprocess.run(
        [sys.executable, "-m", "ds_events", *argv], capture_output=True, text=True, env=env, timeout=60, check=False
    )


@pytest.fixture
def chatty(quest):
    quest.emit([ConversationMessage(role="user", content="hello"), ConversationMessage(role="assistant", content="hi")])
    quest.emit(QuestAnchorChanged(anchor="baseline", previous="scout"))
    return quest


def test_tail_acp_prints_one_valid_notification_per_event(home, chatty):
    done = run_cli(home, "events", "tail", "q1", "--format", "acp", "--after", "0")
    assert done.returncode == 0, done.stderr
    notes = [json.loads(line) for line in done.stdout.splitlines()]
    stored = chatty.log.read()
    assert [from_notification(n) for n in notes] == stored
    for note in notes:
        assert SessionNotification.model_validate(note["params"]).session_id == "q1"
    kinds = [n["params"]["update"]["sessionUpdate"] for n in notes]
    assert kinds[-3:] == ["user_message_chunk", "agent_message_chunk", "plan"]


def test_tail_raw_prints_the_stored_lines(home, chatty):
    done = run_cli(home, "events", "tail", "q1", "--format", "raw", "--after", "0")
    assert done.returncode == 0, done.stderr
    assert [decode_line(line.encode()) for line in done.stdout.splitlines()] == chatty.log.read()


def test_tail_refuses_an_unknown_format(home, chatty):
    done = run_cli(home, "events", "tail", "q1", "--format", "xml")
    assert done.returncode == 2 and "xml" in done.stderr and done.stdout == ""


def test_tail_acp_folds_a_tool_calls_two_views_into_one_card(home, quest):
    from ds_events.events.runner import RunnerToolCall, RunnerToolResult
    from ds_events.events.tool import ToolCallFinished

    args = {"query": "warmup"}
    quest.emit(RunnerToolCall(call_id="c1", tool="memory.search", server="memory", arguments=args, run_id="run-1"))
    quest.emit(ToolCallFinished(call_id="tc-1", namespace="memory", tool="search", status="ok", arguments=args,
                                result={"count": 0}, run_id="run-1"))  # fmt: skip
    quest.emit(RunnerToolResult(call_id="c1", status="ok", output={"count": 0}, run_id="run-1"))
    done = run_cli(home, "events", "tail", "q1", "--format", "acp", "--after", "0")
    assert done.returncode == 0, done.stderr
    updates = [json.loads(line)["params"]["update"] for line in done.stdout.splitlines()]
    for u in updates:
        SessionNotification.model_validate({"sessionId": "q1", "update": u})
    tools = [u for u in updates if u["sessionUpdate"].startswith("tool_call")]
    assert [(u["sessionUpdate"], u["toolCallId"], u["status"]) for u in tools] == [
        ("tool_call", "run-1:c1", "in_progress"),
        ("tool_call_update", "run-1:c1", "completed"),
        ("tool_call_update", "run-1:c1", "completed"),
    ]


def test_an_acp_page_shows_a_calls_two_views_as_one_card(home, quest):
    from ds_events.events.runner import RunnerToolCall, RunnerToolResult
    from ds_events.events.tool import ToolCallFinished
    from ds_events.services.quest.event_pages import event_page

    args = {"query": "warmup"}
    quest.emit(RunnerToolCall(call_id="c1", tool="memory.search", server="memory", arguments=args, run_id="run-1"))
    quest.emit(ToolCallFinished(call_id="tc-1", namespace="memory", tool="search", status="ok", arguments=args,
                                result={"count": 0}, run_id="run-1"))  # fmt: skip
    quest.emit(RunnerToolResult(call_id="c1", status="ok", output={"count": 0}, run_id="run-1"))
    page = event_page(quest, limit=50, fmt="acp")
    tools = [n["params"]["update"] for n in page.events if n["params"]["update"]["sessionUpdate"].startswith("tool_call")]
    assert [(u["sessionUpdate"], u["toolCallId"]) for u in tools] == [
        ("tool_call", "run-1:c1"), ("tool_call_update", "run-1:c1"), ("tool_call_update", "run-1:c1"),
    ]  # fmt: skip
