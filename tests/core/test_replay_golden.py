"""Replay of a recorded quest gives exactly the files and views it gave when the log was
recorded: byte for byte.

``fixtures/logs/demo_quest.jsonl`` is the log of a whole ``ds demo`` run (six turns:
memory cards, a baseline, an idea branch, a main run with a shell job, an analysis
campaign, three interactions). ``demo_quest.replay.json`` holds the sha256 of every
file its replay materialises and of every view the daemon serves from pure projections
(each read route's answer: quest, workflow, node traces, the three Canvas views,
artifacts, memory and each card, shell sessions, interactions, the raw and ACP event
pages). A
refactor behind the log must leave all of them unchanged. A change made on purpose
(a new materialised file, a corrected render) regenerates the digests:

    DS_REGEN_GOLDEN=1 python3 -m pytest tests/core/test_replay_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pygit2

from ds_events.replay import replay_quest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
LOG = FIXTURES / "demo_quest.jsonl"
GOLDEN = FIXTURES / "demo_quest.replay.json"
QUEST_ID = json.loads(LOG.read_bytes().split(b"\n", 1)[0])["quest_id"]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Every read route of the daemon over the replayed quest (its own absolute paths shown as
# "<home>", so the answers do not depend on where the test runs).
ROUTES = [
    "", "/workflow", "/node-traces", "/canvas?view=event", "/canvas?view=stage", "/canvas?view=branch",
    "/artifacts", "/memory", "/bash/sessions", "/interactions?limit=50", "/git/branches",
    "/events?after=0&limit=1000", "/events?after=0&limit=1000&format=acp",
]  # fmt: skip


async def _views_digests(home_root: Path, aiohttp_client: Any) -> dict[str, str]:
    from ds_events.home import Home
    from handlers.http import make_app

    client = await aiohttp_client(make_app(Home(home_root)))
    out: dict[str, str] = {}
    base = f"/api/quests/{QUEST_ID}"
    for route in ROUTES:
        resp = await client.get(base + route)
        assert resp.status == 200, (route, await resp.text())
        out[route or "/"] = _digest((await resp.read()).replace(str(home_root).encode(), b"<home>"))
    cards = (await (await client.get(base + "/memory")).json())["items"]
    for card in cards:
        resp = await client.get(f"{base}/memory/{card['id']}")
        out[f"/memory/{card['id']}"] = _digest((await resp.read()).replace(str(home_root).encode(), b"<home>"))
    return out


def _replayed(tmp_path: Path) -> tuple[Path, list[str]]:
    """The recorded log alone in a quest directory of a new home, replayed."""
    root = tmp_path / "quests" / QUEST_ID
    (root / ".ds").mkdir(parents=True)
    pygit2.init_repository(str(root))  # the branch views read git: an empty repository
    shutil.copyfile(LOG, root / ".ds" / "events.jsonl")
    result = replay_quest(root, quest_id=QUEST_ID)
    assert result.events == result.last_seq == len(LOG.read_bytes().splitlines())
    return root, result.files_written


async def test_replay_of_the_recorded_demo_quest_is_byte_identical_to_its_golden_digests(
    tmp_path: Path, aiohttp_client: Any
) -> None:
    root, written = _replayed(tmp_path)
    files = {rel: _digest((root / rel).read_bytes()) for rel in sorted(written)}
    now = {"files": files, "views": await _views_digests(tmp_path, aiohttp_client)}
    if os.environ.get("DS_REGEN_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert sorted(now["files"]) == sorted(golden["files"]), "replay wrote other files"
    assert [f for f in golden["files"] if now["files"][f] != golden["files"][f]] == []
    assert [v for v in golden["views"] if now["views"].get(v) != golden["views"][v]] == []
    assert len(golden["files"]) >= 25  # cards, artifacts, interactions, the quest's own files


def test_a_second_replay_of_the_recorded_quest_changes_no_file(tmp_path: Path) -> None:
    root, written = _replayed(tmp_path)
    first = {rel: (root / rel).read_bytes() for rel in written}
    again = replay_quest(root, quest_id=QUEST_ID)
    assert again.replaced == []
    assert {rel: (root / rel).read_bytes() for rel in written} == first
