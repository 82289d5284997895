"""A client going away is not an error: 50 clients of a real ``ds serve`` open event
streams (SSE and NDJSON), read from them and close them; the daemon ends each stream
with one debug line and logs nothing at error level (it logged a traceback per stream
before)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from ds_events.home import Home, Quest

from ..helpers import start_serve

STREAMS = 50


async def test_fifty_clients_closing_their_streams_log_no_error(home: Home, quest: Quest, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    proc, port = start_serve(home, "--no-turns", "--log-level", "debug", log=log)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            opened = []
            for i in range(STREAMS):
                headers = {"Accept": "application/x-ndjson"} if i % 2 else {}
                resp = await session.get(f"{base}/api/quests/q1/events?stream=1" if i % 2 == 0 else f"{base}/api/quests/q1/events", headers=headers)
                assert resp.status == 200
                await asyncio.wait_for(resp.content.readline(), 30)  # the stream is live on the daemon's side
                opened.append(resp)
            assert await _streams(session, base) == STREAMS
            for resp in opened:
                resp.close()  # the client goes away mid-stream
            # Until the daemon has ended every stream: a new event wakes any stream that
            # only notices at its next write (each post is written to every live one).
            deadline = asyncio.get_running_loop().time() + 120
            while await _streams(session, base):
                async with session.post(f"{base}/api/quests/q1/messages", json={"text": "wake"}) as posted:
                    assert posted.status == 201
                assert asyncio.get_running_loop().time() < deadline, "the daemon kept closed streams open"
                await asyncio.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    lines = log.read_text().splitlines()
    errors = [line for line in lines if " ERROR " in line or line.startswith("Traceback")]
    assert errors == [], "\n".join(lines[-60:])
    gone = [line for line in lines if " DEBUG ds_events.http" in line and "went away" in line]
    assert len(gone) == STREAMS, "\n".join(lines[-60:])  # one debug line per stream, no more


async def _streams(session: aiohttp.ClientSession, base: str) -> int:
    async with session.get(f"{base}/api/health") as resp:
        return int((await resp.json())["streams"])
