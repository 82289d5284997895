"""The events stream: catch-up then live with no gap or duplicate, resume by
Last-Event-ID, NDJSON, a slow subscriber dropped alone, graceful shutdown."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from ds_events.home import Home, Quest
from ds_events.services.quest.lifecycle import PostMessage, post_message
from handlers.http import make_app
from handlers.http.app import HUB
from tests.stores import home  # noqa: F401 - streams follow either store (PostgreSQL: LISTEN/NOTIFY)

from ..helpers import wait_until_async
from .sse import frames, take

SSE = {"Accept": "text/event-stream"}


def _post(quest: Quest, n: int, prefix: str = "m") -> None:
    for i in range(n):
        post_message(quest, PostMessage(text=f"{prefix}{i}"))


async def test_sse_catch_up_then_live_with_ids_and_retry(client: Any, quest: Quest) -> None:
    _post(quest, 3)
    first = quest.log.last_seq
    async with client.get("/api/quests/q1/events", headers=SSE) as resp:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        got = await take(resp, first)
        assert [int(f["id"]) for f in got] == list(range(1, first + 1))
        _post(quest, 2, prefix="live")
        live = await take(resp, 2)
        assert [f["data"]["content"] for f in live] == ["live0", "live1"]
        assert [int(f["id"]) for f in live] == [first + 1, first + 2]


async def test_retry_field_is_sent(client: Any) -> None:
    async with client.get("/api/quests/q1/events?stream=1") as resp:
        line = await asyncio.wait_for(resp.content.readline(), 10)
        assert line.startswith(b"retry: ")


async def test_last_event_id_resumes_exactly_after_that_seq(client: Any, quest: Quest) -> None:
    _post(quest, 6)
    async with client.get("/api/quests/q1/events", headers=SSE | {"Last-Event-ID": "4"}) as resp:
        got = await take(resp, quest.log.last_seq - 4)
    assert [int(f["id"]) for f in got] == list(range(5, quest.log.last_seq + 1))


async def test_types_filter_and_acp_format_on_a_stream(client: Any, quest: Quest) -> None:
    _post(quest, 2)
    async with client.get("/api/quests/q1/events?stream=1&format=acp&types=conversation.message") as resp:
        got = await take(resp, 2)
    assert all(f["event"] == "acp" and f["data"]["method"] == "session/update" for f in got)
    assert [f["data"]["params"]["update"]["sessionUpdate"] for f in got] == ["user_message_chunk"] * 2


async def test_ndjson_stream_on_accept(client: Any, quest: Quest) -> None:
    _post(quest, 2)
    async with client.get("/api/quests/q1/events?after=1", headers={"Accept": "application/x-ndjson"}) as resp:
        assert resp.headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(await asyncio.wait_for(resp.content.readline(), 10)) for _ in range(quest.log.last_seq - 1)]
    assert [e["seq"] for e in lines] == list(range(2, quest.log.last_seq + 1))


async def test_seam_has_no_gap_or_duplicate_under_a_concurrent_appender(client: Any, home: Home, quest: Quest) -> None:
    _post(quest, 50, prefix="before")
    total = 400
    # Another handle on the same log (as another process would have): its appends reach
    # the stream only through the follower reading the file, not an in-process wake-up.
    other = home.open_quest("q1", actor="other")
    started = threading.Event()

    def append() -> None:
        started.set()
        _post(other, total, prefix="c")

    thread = threading.Thread(target=append)
    try:
        async with client.get("/api/quests/q1/events", headers=SSE) as resp:
            thread.start()  # appends race with the catch-up read and the subscription
            target = 1 + 50 + total  # quest.created + before + concurrent
            seqs: list[int] = []
            async for f in frames(resp):
                seqs.append(int(f["id"]))
                if len(seqs) >= target:
                    break
        assert seqs == list(range(1, target + 1))
    finally:
        thread.join()
        other.close()


async def test_slow_subscriber_is_dropped_with_a_resume_point_and_the_fast_one_is_not(make_client: Any, quest: Quest) -> None:
    client = await make_client(queue_size=5)
    hub = client.app[HUB]
    fast = await client.get("/api/quests/q1/events", headers=SSE | {"Last-Event-ID": str(quest.log.last_seq)})
    slow = await client.get("/api/quests/q1/events", headers=SSE | {"Last-Event-ID": str(quest.log.last_seq)})
    try:
        await wait_until_async(lambda: hub.subscriber_count("q1") == 2, what="two subscribers")
        start = quest.log.last_seq
        got: list[int] = []
        # The fast client reads each event before the next is appended; the slow one never
        # reads. Once the socket buffers between it and the server are full, its own
        # buffer (5 events) fills and it is dropped. Big messages fill the sockets sooner.
        fast_frames = frames(fast)
        body = "y" * 60_000
        for i in range(1000):
            post_message(quest, PostMessage(text=f"x{i} {body}"))
            f = await fast_frames.__anext__()
            got.append(int(f["id"]))
            if hub.subscriber_count("q1") == 1:
                break
        assert hub.subscriber_count("q1") == 1, "the slow subscriber was never dropped"
        assert got == list(range(start + 1, quest.log.last_seq + 1))  # the fast one missed nothing
        # ... and keeps receiving after the drop.
        post_message(quest, PostMessage(text="after the drop"))
        f = await fast_frames.__anext__()
        assert f["data"]["content"] == "after the drop"
        slow_frames = [f async for f in frames(slow)]
        assert slow_frames[-1]["event"] == "dropped"
        resume = slow_frames[-1]["data"]["resume_after"]
        seen = [int(f["id"]) for f in slow_frames[:-1]]
        assert seen == list(range(start + 1, resume + 1))  # nothing skipped before the drop
        # It resumes from there and sees the rest, in order.
        async with client.get("/api/quests/q1/events", headers=SSE | {"Last-Event-ID": str(resume)}) as again:
            rest = await take(again, quest.log.last_seq - resume)
        assert [int(f["id"]) for f in rest] == list(range(resume + 1, quest.log.last_seq + 1))
    finally:
        fast.close()
        slow.close()


async def test_shutdown_ends_open_streams_cleanly(aiohttp_server: Any, aiohttp_client: Any, home: Home, quest: Quest) -> None:
    app = make_app(home)
    server = await aiohttp_server(app)
    client = await aiohttp_client(server)
    resp = await client.get("/api/quests/q1/events", headers=SSE)
    got = await take(resp, 1)
    assert int(got[0]["id"]) == 1
    await server.close()  # on_shutdown, then cleanup_ctx
    tail = [f async for f in frames(resp)]
    assert tail and tail[-1]["event"] == "end"
    assert app[HUB].subscriber_count("q1") == 0
    resp.close()


async def test_an_event_appended_exactly_at_the_seam_arrives_once(client: Any, home: Home, quest: Quest) -> None:
    """Deterministic seam: the moment catch-up finds the log exhausted, another handle
    appends (before the stream switches to its live buffer). That event must arrive
    exactly once, from the buffer, and the next ones after it."""
    _post(quest, 5, prefix="before")
    other = home.open_quest("q1", actor="other")
    hub = client.app[HUB]
    log = hub.quest("q1").log
    real_read = log.read
    fired: list[int] = []

    def read_then_append_at_the_seam(after_seq: int = 0, limit: int | None = None, types: Any = None) -> list[Any]:
        page = real_read(after_seq, limit=limit, types=types)
        if not page and not fired:  # catch-up is over: this is the seam
            fired.append(after_seq)
            _post(other, 3, prefix="seam")
        return page

    log.read = read_then_append_at_the_seam  # type: ignore[method-assign]
    try:
        async with client.get("/api/quests/q1/events", headers=SSE) as resp:
            seqs = [int(f["id"]) for f in await take(resp, 9)]
        assert fired == [6]  # quest.created + 5, then the seam
        assert seqs == list(range(1, 10))
    finally:
        log.read = real_read  # type: ignore[method-assign]
        other.close()


async def test_a_stream_whose_follower_stops_ends_with_a_resume_point(client: Any, quest: Quest) -> None:
    hub = client.app[HUB]
    async with client.get("/api/quests/q1/events", headers=SSE) as resp:
        stream = frames(resp)
        first = await stream.__anext__()
        await wait_until_async(lambda: hub.subscriber_count("q1") == 1, what="one subscriber")
        hub._followers["q1"].task.cancel()  # the follower ends (as when the log is repaired under it)
        last = None
        async for f in stream:
            last = f
        assert last is not None and last.get("event") == "dropped"
        body = last["data"]
        assert body["reason"] == "follower_stopped" and body["resume_after"] >= int(first["id"])
    # resuming starts a new follower and works
    _post(quest, 1, prefix="after")
    async with client.get("/api/quests/q1/events", headers=SSE | {"Last-Event-ID": str(body["resume_after"])}) as resp:
        got = await take(resp, 1)
    assert int(got[0]["id"]) == body["resume_after"] + 1


async def test_an_acp_stream_folds_a_tool_calls_two_views_into_one_card(client: Any, quest: Quest) -> None:
    from ds_events.events.runner import RunnerToolCall, RunnerToolResult, TurnStarted
    from ds_events.events.tool import ToolCallFinished

    args = {"kind": "knowledge", "title": "T", "body": "b"}
    quest.emit(TurnStarted(runner="scripted", skill="scout", run_id="run-1"))
    quest.emit(RunnerToolCall(call_id="c1", tool="memory.write", server="memory", arguments=args, run_id="run-1"))
    mid = quest.log.last_seq  # a stream that starts here has not seen the call open its card
    quest.emit(ToolCallFinished(call_id="tc-1", namespace="memory", tool="write", status="ok", arguments=args,
                                result={"status": "written"}, run_id="run-1"))  # fmt: skip
    quest.emit(RunnerToolResult(call_id="c1", status="ok", output={"status": "written"}, run_id="run-1"))
    for after, shown in ((0, 3), (mid, 2)):
        url = f"/api/quests/q1/events?stream=1&format=acp&after={after}&types=runner.tool_call,tool.call_finished,runner.tool_result"
        async with client.get(url) as resp:
            got = [f["data"]["params"]["update"] for f in await take(resp, shown)]
        assert {u["toolCallId"] for u in got} == {"run-1:c1"}, got
        kinds = [u["sessionUpdate"] for u in got]
        assert kinds == (["tool_call"] if after == 0 else []) + ["tool_call_update", "tool_call_update"]
        assert got[-1]["status"] == "completed" and "written" in got[-1]["content"][0]["content"]["text"]
