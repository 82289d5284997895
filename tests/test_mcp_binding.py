"""Which quest an MCP server acts on, and what it answers when the disk is full.

- ``DS_QUEST_ROOT`` must be a quest of the home in force: a root elsewhere would put
  global memory and config outside the home and skip the quest-id check
  (``quest_outside_home``); ``DS_QUEST_ID`` naming another quest than ``DS_QUEST_ROOT``
  is an error, not a silent choice (``conflicting_quest``).
- A tool call that meets a full disk answers ``disk_full`` in our error shape, writes
  nothing, and the same server works again once there is room.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mcp
import pytest

from ds_events.errors import Invalid
from ds_events.home import Home, Quest
from handlers.mcp import QuestBinding, build_server

from .artifact.faults import FullDisk
from .helpers import DS, ds_env, tool_error


def _resolve_error(**kwargs: object) -> Invalid:
    with pytest.raises(Invalid) as caught:
        QuestBinding.resolve(**kwargs)  # type: ignore[arg-type]
    return caught.value


def test_a_quest_root_inside_the_home_binds_that_quest(home: Home, quest: Quest) -> None:
    binding = QuestBinding.resolve(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(quest.root)})
    assert binding == QuestBinding(home=home.root, quest_id=quest.id)
    # The same quest named twice is fine.
    again = QuestBinding.resolve(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(quest.root), "DS_QUEST_ID": quest.id})
    assert again == binding


def test_a_quest_root_outside_the_home_is_refused(home: Home, quest: Quest, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "quests" / "q1"
    elsewhere.mkdir(parents=True)
    err = _resolve_error(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(elsewhere)})
    assert err.code == "quest_outside_home" and str(home.root) in err.message


def test_a_link_into_the_home_from_outside_is_judged_by_where_it_leads(home: Home, quest: Quest, tmp_path: Path) -> None:
    link = tmp_path / "shortcut"
    link.symlink_to(quest.root)
    assert QuestBinding.resolve(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(link)}).quest_id == quest.id
    outside = tmp_path / "outside-quest"
    outside.mkdir()
    (home.root / "quests" / "sneaky").symlink_to(outside)  # a quest dir that leads out of the home
    err = _resolve_error(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(home.root / "quests" / "sneaky")})
    assert err.code == "quest_outside_home"


def test_a_quest_id_and_a_quest_root_naming_different_quests_is_an_error(home: Home, quest: Quest) -> None:
    other = home.create_quest("Other", quest_id="q2", brief="b")
    other.close()
    err = _resolve_error(environ={"DS_HOME": str(home.root), "DS_QUEST_ROOT": str(quest.root), "DS_QUEST_ID": "q2"})
    assert err.code == "conflicting_quest" and "q2" in err.message


def test_no_quest_at_all_is_an_error(home: Home) -> None:
    assert _resolve_error(environ={"DS_HOME": str(home.root)}).code == "no_quest"


def test_ds_mcp_with_a_root_outside_the_home_exits_with_one_line_and_creates_nothing(home: Home, quest: Quest, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-home" / "quests" / "q1"
    elsewhere.mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = subprocess.run(
        [*DS, "mcp", "--namespace", "memory"],
        env=ds_env(home, DS_QUEST_ROOT=str(elsewhere)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: quest_outside_home: quest root") and len(done.stderr.strip().splitlines()) == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


async def test_a_tool_call_on_a_full_disk_answers_disk_full_writes_nothing_and_works_again_later(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = build_server("memory", QuestBinding(home=home.root, quest_id=quest.id))
    async with mcp.Client(server) as client:
        await client.call_tool("list_recent", {})  # the quest is open before the disk fills
        # (taken after that call's own record: on the full disk even the record of the
        # refusal cannot be written, so nothing at all is appended)
        seq = quest.log.last_seq
        disk = FullDisk(monkeypatch, quest.root)
        refused = await client.call_tool("write", {"kind": "knowledge", "title": "Warm up the LR", "body": "It diverged."})
        err = tool_error(refused)
        assert err["error"] == "disk_full" and disk.refused
        assert quest.log.last_seq == seq
        assert not list((quest.root / "memory").rglob("*.md"))
        disk.on = False
        written = await client.call_tool("write", {"kind": "knowledge", "title": "Warm up the LR", "body": "It diverged."})
        assert not written.is_error, written.content
        card = written.structured_content
        assert card is not None and card["status"] == "written"
    assert json.loads(json.dumps(card))["id"] in quest.state("memory").cards
