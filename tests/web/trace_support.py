"""What the trace and steering browser tests share: a quest of their own on the daemon,
other processes that append to its log (the ``ds`` CLI, an agent-side script), and
reading the log file to see what landed."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from typing import Any

from ds_events.home import Home

from ..helpers import DS, ds_env
from .harness import Server

__all__ = ["new_quest", "quest_page", "ds_message", "open_decision_request", "log_events", "card_keys", "run_agent_script"]


def new_quest(server: Server, title: str) -> str:
    """A fresh quest created through the daemon (so the demo quest stays as it was)."""
    quest_id = f"web-{uuid.uuid4().hex[:8]}"
    status, body = server.api("/api/quests", "POST", {"title": title, "id": quest_id})
    assert status == 201, body
    return quest_id


def quest_page(open_page: Any, server: Server, quest_id: str, **kw: Any) -> Any:
    """The quest's view, once its trace follows the stream."""
    from playwright.sync_api import expect

    page = open_page(server, f"/q/{quest_id}", **kw)
    expect(page.locator("#trace .trace-state")).to_have_attribute("data-state", "live")
    return page


def ds_message(home: Home, quest_id: str, text: str) -> int:
    """``ds message`` in its own process; the seq it appended."""
    done = subprocess.run([*DS, "message", quest_id, text, "--json"], env=ds_env(home), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["seq"])


def run_agent_script(home: Home, quest_id: str, script: str, *args: str) -> str:
    """Run ``script`` in another Python process (the agent's side); its stdout."""
    done = subprocess.run([sys.executable, "-c", script, str(home.root), quest_id, *args], env=ds_env(home), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


_ASK = """
import sys
from ds_events.home import Home, Quest
from ds_events.services.interactions import mailbox as interactions
home, quest_id, question = Home(sys.argv[1]), sys.argv[2], sys.argv[3]
with Quest(home, quest_id, actor="mcp:artifact") as quest:
    result = interactions.interact(quest, interactions.Interact(
        message=question, kind="decision_request",
        options=[{"id": "write", "label": "Write it up", "recommended": True}, {"id": "sweep", "label": "Sweep 0.05-0.2 first"}],
    ))
    print(result.interaction_id)
"""


def open_decision_request(home: Home, quest_id: str, question: str) -> str:
    """The agent asks (a blocking decision request with two options), from another
    process, as ``artifact.interact`` does; the interaction id."""
    return run_agent_script(home, quest_id, _ASK, question).strip()


def log_events(home: Home, quest_id: str, type_: str | None = None) -> list[dict[str, Any]]:
    """The quest's events as stored in its log file."""
    path = home.quest_root(quest_id) / ".ds" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in events if type_ is None or e["type"] == type_]


def card_keys(page: Any) -> list[str]:
    """The keys of the trace's cards in the DOM, top to bottom."""
    return page.eval_on_selector_all("#trace .trace-list > .card", "els => els.map(e => e.dataset.key)")
