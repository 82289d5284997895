"""Blocking service calls run on worker threads: a request that waits (here, a memory
search waiting for its SQLite index, locked by another writer) does not stall the live
event stream, and concurrent calls on one quest stay correct."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from typing import Any

import pytest

from ds_events.errors import LogError
from ds_events.home import Home, Quest
from ds_events.memory.index import MemoryIndex
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import WriteCard
from ds_events.services.quest.lifecycle import PostMessage, post_message
from handlers.http.hub import Hub

from ..helpers import wait_until
from .sse import take

SSE = {"Accept": "text/event-stream"}


def _some_thread_is_in(code: Any) -> bool:
    """Whether any thread of this process is running ``code`` right now (anywhere on its stack)."""
    for frame in sys._current_frames().values():
        f: Any = frame
        while f is not None:
            if f.f_code is code:
                return True
            f = f.f_back
    return False


async def test_a_search_waiting_for_a_locked_memory_index_does_not_stall_a_stream(client: Any, home: Home, quest: Quest) -> None:
    mem = MemoryContext(quest=quest, actor="test")
    memory_service.write(mem, WriteCard(kind="knowledge", title="Warmup stops early divergence", body="Use 500 warmup steps."))
    first = await client.get("/api/quests/q1/memory?q=warmup")  # the daemon opens the index and catches it up
    assert first.status == 200 and (await first.json())["count"] == 1
    other = home.open_quest("q1", actor="other")  # another process's handle: its appends reach the stream via the follower
    delivered = threading.Event()
    seen: dict[str, bool] = {}
    # Another writer (a second daemon, an MCP server folding a long log) holds the index's
    # write lock: the daemon's next search must fold the new events and waits for it.
    blocker = sqlite3.connect(mem.store("quest").index.file, isolation_level=None, check_same_thread=False)
    try:
        async with client.get(f"/api/quests/q1/events?after={quest.log.last_seq}", headers=SSE) as stream:
            assert (await asyncio.wait_for(stream.content.readline(), 15)).startswith(b"retry: ")  # subscribed
            post_message(other, PostMessage(text="the index is behind now"))
            assert [f["data"]["content"] for f in await take(stream, 1)] == ["the index is behind now"]
            blocker.execute("BEGIN IMMEDIATE")

            def while_the_search_waits() -> None:
                try:
                    # The search is inside the index's fold (on whatever thread runs it),
                    # blocked on the lock: an event appended now must reach the stream.
                    wait_until(lambda: _some_thread_is_in(MemoryIndex._apply_lines.__code__), 30, "the search to wait for the index")
                    post_message(other, PostMessage(text="during the search"))
                    seen["delivered_while_waiting"] = delivered.wait(10)  # on the old code the loop was blocked: False
                finally:
                    blocker.execute("ROLLBACK")

            async def search() -> tuple[int, Any]:
                async with client.get("/api/quests/q1/memory?q=warmup") as resp:
                    return resp.status, await resp.json()

            searching = asyncio.create_task(search())
            watcher = threading.Thread(target=while_the_search_waits)
            watcher.start()
            live = await take(stream, 1, timeout=60)
            delivered.set()
            status, body = await asyncio.wait_for(searching, 60)
            await asyncio.to_thread(watcher.join, 60)
    finally:
        blocker.close()
        other.close()
        mem.close()
    assert [f["data"]["content"] for f in live] == ["during the search"]
    assert seen.get("delivered_while_waiting") is True, "the stream was stalled while a search waited for the memory index"
    assert status == 200 and [r["id"] for r in body["items"]] == [r["id"] for r in (await first.json())["items"]]


async def test_concurrent_requests_on_one_quest_are_all_answered_correctly(client: Any, quest: Quest) -> None:
    mem = MemoryContext(quest=quest, actor="test")
    try:
        for i in range(5):
            memory_service.write(mem, WriteCard(kind="knowledge", title=f"Lesson {i} about warmup schedules {'abcde'[i]}x", body=f"detail {i}", force=True))
    finally:
        mem.close()
    before = quest.log.last_seq

    async def search() -> Any:
        async with client.get("/api/quests/q1/memory?q=warmup&limit=10") as resp:
            assert resp.status == 200, await resp.text()
            return sorted(r["id"] for r in (await resp.json())["items"])

    async def post(i: int) -> int:
        async with client.post("/api/quests/q1/messages", json={"text": f"concurrent {i}"}) as resp:
            assert resp.status == 201, await resp.text()
            return int((await resp.json())["seq"])

    async def workflow() -> int:
        async with client.get("/api/quests/q1/workflow") as resp:
            assert resp.status == 200, await resp.text()
            return int((await resp.json())["seq"])

    results = await asyncio.gather(*[search() for _ in range(6)], *[post(i) for i in range(6)], *[workflow() for _ in range(4)])
    searches, seqs = results[:6], results[6:12]
    assert all(s == searches[0] for s in searches) and len(searches[0]) == 5
    assert sorted(seqs) == list(range(before + 1, before + 7))  # every message appended once, no gap
    assert sorted(e.content for e in quest.log.read(before)) == sorted(f"concurrent {i}" for i in range(6))


async def test_shutdown_waits_for_a_running_call_before_closing_the_quests_then_refuses_calls(home: Home, quest: Quest) -> None:
    hub = Hub(home)
    q = await hub.run(hub.quest, "q1")
    entered, release = threading.Event(), threading.Event()

    def slow() -> int:
        entered.set()
        release.wait(30)
        return q.log.last_seq  # reads the quest's log after shutdown began: it must still be open

    call = asyncio.ensure_future(hub.run(slow))
    assert await asyncio.to_thread(entered.wait, 30)
    closing = asyncio.ensure_future(hub.close())
    await asyncio.sleep(0)  # let close() run up to its wait for the running call
    assert not closing.done()
    release.set()
    assert await asyncio.wait_for(call, 30) == quest.log.last_seq
    await asyncio.wait_for(closing, 30)
    with pytest.raises(LogError, match="shutting down"):
        await hub.run(lambda: None)
