"""Two machines on one database: two ``ds`` homes (standing in for two hosts) whose
config.yaml points at the same PostgreSQL database work on one quest at once, through
real stdio MCP servers on both; both then replay to identical files.

The log lives in the database; each home's quest repository, memory cards, search
index, quest.yaml and SUMMARY.md are that machine's projections of it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import mcp
import pytest

from ds_events.home import Home
from ds_events.stores import close_pool
from tests.helpers import DS, distinct_body, ds_env, stdio_server, write_shared_lesson
from tests.stores import pg_url, use_store

pytestmark = pytest.mark.slow


async def call(client: mcp.Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


async def machine(home: Home, tag: str, ready: asyncio.Event, start: asyncio.Event) -> dict[str, Any]:
    """One host's runner: a memory and an artifact server on its own home."""
    out: dict[str, Any] = {"cards": [], "ideas": [], "dup": None, "got": []}
    async with mcp.Client(stdio_server(home, "memory")) as mem, mcp.Client(stdio_server(home, "artifact")) as art:
        await mem.list_tools()
        await art.list_tools()
        ready.set()
        await start.wait()
        out["dup"] = await write_shared_lesson(mem)  # both hosts race: exactly one may win
        for i in range(6):
            r2 = await call(mem, "write", {"kind": "episodes", "title": f"Run {tag}{i}", "body": distinct_body(tag, i)})
            out["cards"].append(r2["id"])
            idea = await call(art, "record", {"payload": {"kind": "idea", "title": f"Idea {tag}{i}"}})
            out["ideas"].append(idea["artifact_id"])
            got = await call(art, "interact", {"message": f"{tag} working on {i}", "kind": "progress"})
            out["got"] += [m["text"] for m in got["recent_inbound_messages"]]
    return out


def ds(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *args], env=ds_env(home), capture_output=True, text=True, timeout=180)


def files(root: Path) -> dict[str, bytes]:
    """The materialised files of a quest repository (not .git, not .ds working areas)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] not in (".git", ".ds")
    }


async def test_two_homes_on_one_database_append_to_one_quest_and_replay_to_identical_files(tmp_path, pg_database) -> None:
    url = pg_url(pg_database)
    a, b = Home(tmp_path / "host-a"), Home(tmp_path / "host-b")
    for h in (a, b):
        h.init()
        use_store(h, url)
    try:
        created = ds(a, "quest", "new", "--title", "One quest, two hosts", "--id", "q1")
        assert created.returncode == 0, created.stderr
        assert not (b.quests_dir / "q1").exists()  # host b has never seen it
        for i in range(4):  # the user writes to either host
            assert ds(a if i % 2 else b, "message", "q1", f"user note {i}").returncode == 0

        start, ready = asyncio.Event(), [asyncio.Event(), asyncio.Event()]
        tasks = [asyncio.create_task(machine(h, tag, r, start)) for h, tag, r in ((a, "a", ready[0]), (b, "b", ready[1]))]
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 90)  # both hosts' servers are up
        start.set()
        out_a, out_b = await asyncio.wait_for(asyncio.gather(*tasks), 240)

        assert sorted([out_a["dup"], out_b["dup"]]) == ["duplicate_candidates", "written"]
        assert sorted(out_a["got"] + out_b["got"]) == sorted(f"user note {i}" for i in range(4))  # each once, on one host
        for h in (a, b):
            report = ds(h, "verify", "q1", "--json")
            assert report.returncode == 0, report.stdout
            assert json.loads(report.stdout)["last_seq"] == json.loads(ds(a, "verify", "q1", "--json").stdout)["last_seq"]
            assert ds(h, "replay", "q1", "--json").returncode == 0
        tree_a, tree_b = files(a.quests_dir / "q1"), files(b.quests_dir / "q1")
        assert tree_a == tree_b and len(tree_a) > 20
        for card in out_a["cards"] + out_b["cards"]:
            assert f"memory/episodes/{card}.md" in tree_a
        for idea in out_a["ideas"] + out_b["ideas"]:
            assert any(idea in name for name in tree_a), idea
        assert "SUMMARY.md" in tree_a and "quest.yaml" in tree_a
        # Each host keeps its own search index, built from the shared log.
        for h in (a, b):
            found = ds(h, "memory", "search", "q1", "bw3x0", "--json")
            assert found.returncode == 0, found.stderr
            assert out_b["cards"][3] in found.stdout
    finally:
        close_pool(url)
