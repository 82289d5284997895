"""`ds mcp --namespace memory` as real stdio subprocesses, two of them writing at once."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import mcp
import pytest

from ds_events.home import Home, Quest
from tests import stores
from tests.helpers import DS, distinct_body, ds_env, write_shared_lesson

pytestmark = pytest.mark.slow
home = stores.home  # the conftest's home, on the file store and on PostgreSQL: every test here runs on both

N_EACH = 12


def _params(home: Home, **env: str) -> mcp.StdioServerParameters:
    return mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", "memory"], env=ds_env(home, **env)
    )


async def _writer(home: Home, proc: str, ready: asyncio.Event, start: asyncio.Event) -> dict[str, Any]:
    results: dict[str, Any] = {"ids": [], "dup": None}
    async with mcp.Client(_params(home, DS_QUEST_ID="q1")) as client:
        await client.list_tools()
        ready.set()
        await start.wait()
        results["dup"] = await write_shared_lesson(client)  # both processes race: exactly one may win
        for i in range(N_EACH):
            r = await client.call_tool("write", {"kind": "episodes", "title": f"Run {proc}{i} finished", "body": distinct_body(proc, i)})
            assert not r.is_error, r.content
            assert r.structured_content["status"] == "written", r.structured_content  # type: ignore[index]
            results["ids"].append(r.structured_content["id"])  # type: ignore[index]
    return results


async def test_two_mcp_server_processes_writing_to_one_quest_lose_nothing(home: Home, quest: Quest):
    start = asyncio.Event()
    ready = [asyncio.Event(), asyncio.Event()]
    tasks = [asyncio.create_task(_writer(home, p, r, start)) for p, r in zip(("a", "b"), ready, strict=True)]
    # Both servers are up once each has listed its tools; then they start together.
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 60)
    start.set()
    a, b = await asyncio.wait_for(asyncio.gather(*tasks), 120)
    assert sorted([a["dup"], b["dup"]]) == ["duplicate_candidates", "written"]
    written = set(a["ids"]) | set(b["ids"])
    assert len(written) == 2 * N_EACH
    state = quest.state("memory")
    assert written <= set(state.cards)
    assert sum(1 for c in state.cards.values() if c.kind == "knowledge") == 1
    for card_id in written:
        assert (quest.root / "memory" / "episodes" / f"{card_id}.md").is_file()
    verify = subprocess.run([*DS, "verify", "q1", "--json"], env=ds_env(home), capture_output=True, text=True, timeout=60)
    report = json.loads(verify.stdout)
    assert report["ok"] and report["last_seq"] == quest.log.last_seq
    # The index of either process (one file, shared) sees every card.
    async with mcp.Client(_params(home, DS_QUEST_ID="q1")) as client:
        r = await client.call_tool("list_recent", {"limit": 100, "kind": "episodes"})
        assert {x["id"] for x in r.structured_content["items"]} == written  # type: ignore[index]


async def test_the_stdio_server_takes_the_quest_from_ds_quest_root(home: Home, quest: Quest):
    async with mcp.Client(_params(home, DS_QUEST_ROOT=str(quest.root))) as client:
        r = await client.call_tool("write", {"kind": "papers", "title": "ResNet paper: warmup caveat", "body": "Section 4.2"})
        assert r.structured_content["status"] == "written"  # type: ignore[index]
        bad = await client.call_tool("read", {"path": "../../../etc/passwd"})
        assert bad.is_error and "path_outside_memory" in bad.content[0].text  # type: ignore[union-attr]
    assert quest.state("memory").cards[r.structured_content["id"]].title == "ResNet paper: warmup caveat"  # type: ignore[index]
