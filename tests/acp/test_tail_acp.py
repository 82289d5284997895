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
