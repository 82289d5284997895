"""DeepScientist's `memory` call forms through a real stdio MCP server.

Written from DeepScientist's public facts: `write` sends `tags` as a list or as one
comma-separated string, and `metadata`; callers read `ok`, `items`/`count` from search
and list_recent, `metadata` from write, `scope` and `path` from promote_to_global, and a
shared quest's hit says which quest it comes from. Each test checks the events in the
log too; replay rebuilds the card files byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp
import pytest
import yaml

from ds_events.events.memory import CardPromoted, CardWritten
from ds_events.home import Home, Quest
from ds_events.log import EventLog
from ds_events.memory.store import MemoryContext
from ds_events.replay import replay_quest
from ds_events.services.memory.cards import write as write_card
from ds_events.services.memory.commands import WriteCard
from tests.helpers import domain_events, stdio_server, tool_error

pytestmark = pytest.mark.slow


def stdio_memory(home: Home, quest_id: str = "q1") -> mcp.StdioServerParameters:
    return stdio_server(home, "memory", quest_id)


async def call(client: mcp.Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


def written(quest: Quest) -> list[CardWritten]:
    return [e for e in quest.log.read(types=["memory.card_written"]) if isinstance(e, CardWritten)]


def front(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text().split("---\n")[1])


async def test_write_takes_tags_as_a_comma_separated_string_or_a_list_and_keeps_metadata(home: Home, quest: Quest) -> None:
    async with mcp.Client(stdio_memory(home)) as client:
        a = await call(client, "write", {
            "kind": "papers", "title": "Mixup paper reports gains only with long schedules",
            "body": "Table 3: +1.2 top-1 at 300 epochs, none at 90.", "scope": "quest",
            "tags": "mixup, augmentation , schedule", "metadata": {"source": "arxiv:1710.09412", "confidence": 0.7},
        })  # fmt: skip
        b = await call(client, "write", {
            "kind": "knowledge", "title": "Gradient clipping at 1.0 stops the early loss spikes",
            "body": "Spikes in 4/4 runs without it.", "tags": ["optim", "stability"], "metadata": {"stage": "experiment"},
        })  # fmt: skip
        c = await call(client, "write", {"kind": "ideas", "title": "Try label smoothing with mixup", "body": "x y z",
                                         "tags": '["mixup", "smoothing"]'})  # fmt: skip
    assert a["ok"] is True and a["status"] == "written" and a["tags"] == ["mixup", "augmentation", "schedule"]
    # the answer's metadata carries the tags too (DeepScientist's callers read metadata.tags);
    # the event keeps the caller's metadata as given
    assert a["metadata"] == {"source": "arxiv:1710.09412", "confidence": 0.7, "tags": ["mixup", "augmentation", "schedule"]}
    assert a["source_quest_id"] == "q1"
    assert b["ok"] is True and b["tags"] == ["optim", "stability"]
    assert b["metadata"] == {"stage": "experiment", "tags": ["optim", "stability"]}
    assert c["tags"] == ["mixup", "smoothing"] and c["metadata"] == {"tags": ["mixup", "smoothing"]}
    events = {e.card_id: e for e in written(quest)}
    assert events[a["id"]].tags == ["mixup", "augmentation", "schedule"]
    assert events[a["id"]].metadata == {"source": "arxiv:1710.09412", "confidence": 0.7}
    assert events[b["id"]].tags == ["optim", "stability"] and events[c["id"]].tags == ["mixup", "smoothing"]
    card = front(quest.root / a["path"])
    assert card["tags"] == ["mixup", "augmentation", "schedule"] and card["source"] == "arxiv:1710.09412"

    # Replay writes the same card files back, byte for byte.
    files = sorted((quest.root / "memory").rglob("*.md"))
    before = {p: p.read_bytes() for p in files}
    for p in files:
        p.unlink()
    replay_quest(quest.root, quest_id=quest.id)
    assert {p: p.read_bytes() for p in files} == before


async def test_search_and_list_recent_answer_ok_count_and_items(home: Home, quest: Quest) -> None:
    async with mcp.Client(stdio_memory(home)) as client:
        card = await call(client, "write", {"kind": "episodes", "title": "Run 7 diverged after the LR warmup ended",
                                            "body": "loss NaN at step 1020", "tags": "divergence"})  # fmt: skip
        found = await call(client, "search", {"query": "why did run 7 diverge", "scope": "quest", "limit": 5, "kind": "episodes"})
        listed = await call(client, "list_recent", {"scope": "quest", "limit": 5})
        none = await call(client, "search", {"query": "transformer pruning", "scope": "quest"})
    assert found["ok"] is True and found["count"] == 1 and [i["id"] for i in found["items"]] == [card["id"]]
    assert found["items"][0]["source_quest_id"] == "q1" and found["items"][0]["scope"] == "quest"
    assert "results" not in found  # one name on the wire: items
    assert listed["ok"] is True and listed["count"] == 1 and listed["items"][0]["id"] == card["id"]
    assert none == {"ok": True, "count": 0, "items": []}


async def test_promote_to_global_answers_scope_and_path_of_the_global_copy(home: Home, quest: Quest) -> None:
    async with mcp.Client(stdio_memory(home)) as client:
        card = await call(client, "write", {"kind": "knowledge", "title": "Label smoothing hurts calibration",
                                            "body": "ECE doubled.", "tags": "calibration"})  # fmt: skip
        promoted = await call(client, "promote_to_global", {"card_id": card["id"]})
    assert promoted["ok"] is True and promoted["status"] == "promoted" and promoted["scope"] == "global"
    path = Path(promoted["path"])
    assert path.is_file() and path.stem == promoted["global_id"] and front(path)["scope"] == "global"
    assert [e.global_card_id for e in quest.log.read(types=["memory.card_promoted"]) if isinstance(e, CardPromoted)] == [
        promoted["global_id"]
    ]
    glog = EventLog(home.global_memory_dir / ".ds" / "events.jsonl")
    try:
        assert [e.type for e in glog.read()] == ["memory.card_written", "memory.card_promoted"]
    finally:
        glog.close()


async def test_a_shared_quest_hit_names_its_source_quest(home: Home, quest: Quest) -> None:
    other = home.create_quest("Other", quest_id="q2")
    try:
        mem = MemoryContext(other)
        theirs = write_card(mem, WriteCard(kind="knowledge", title="Flash attention needs fp16 or bf16", body="fp32 falls back"))
        mem.close()
    finally:
        other.close()
    cfg = yaml.safe_load(home.config_path.read_text())
    cfg["memory"]["shared_across_quests"] = True
    home.config_path.write_text(yaml.safe_dump(cfg))
    async with mcp.Client(stdio_memory(home)) as client:
        mine = await call(client, "write", {"kind": "knowledge", "title": "Flash attention halves memory at 4k context",
                                            "body": "measured on A100", "tags": "attention"})  # fmt: skip
        found = await call(client, "search", {"query": "flash attention", "scope": "quest"})
        listed = await call(client, "list_recent", {"scope": "quest"})
    by_id = {i["id"]: i for i in found["items"]}
    assert set(by_id) == {theirs.id, mine["id"]}
    assert (by_id[theirs.id]["scope"], by_id[theirs.id]["source_quest_id"], by_id[theirs.id]["shared"]) == ("shared_quest", "q2", True)
    assert by_id[theirs.id]["read_only"] is True
    assert (by_id[mine["id"]]["scope"], by_id[mine["id"]]["source_quest_id"]) == ("quest", "q1")
    assert "shared" not in by_id[mine["id"]]
    assert {i["source_quest_id"] for i in listed["items"]} == {"q1", "q2"}


async def test_bad_tags_are_refused_with_a_code_and_write_nothing(home: Home, quest: Quest) -> None:
    async with mcp.Client(stdio_memory(home)) as client:
        for tags, code in ((7, "invalid_argument"), ("ok, " + "x" * 65, "invalid_tags"), ([1, 2], "invalid_argument"),
                           (", ".join(f"t{i}" for i in range(40)), "invalid_tags")):  # fmt: skip
            before = domain_events(quest)
            result = await client.call_tool("write", {"kind": "knowledge", "title": "A lesson", "body": "b", "tags": tags})
            assert tool_error(result)["error"] == code, tags
            assert domain_events(quest) == before
        before = domain_events(quest)
        bad_meta = await client.call_tool("write", {"kind": "knowledge", "title": "A lesson", "body": "b", "metadata": "x"})
        assert tool_error(bad_meta)["error"] == "invalid_argument" and domain_events(quest) == before
    assert written(quest) == []
