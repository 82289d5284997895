"""`ds serve` hosts the turns: a message posted over HTTP starts a turn of the configured
runner, the stream shows it live, and a pause over HTTP interrupts the next one."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from ds_events.home import Home, Quest
from tests.helpers import start_serve
from tests.http.sse import frames

pytestmark = pytest.mark.slow


async def test_a_message_over_http_runs_a_turn_and_a_pause_interrupts_one(home: Home, quest: Quest, tmp_path: Path) -> None:
    traj = tmp_path / "t.yaml"
    traj.write_text(
        "turns:\n"
        "  - steps: [{say: 'first turn'}, {call: memory.write, args: {kind: knowledge, title: 'Served turn', body: 'from the daemon'}}]\n"
        "  - steps: [{say: 'second turn, long'}, {sleep: 300}]\n"
    )
    start = quest.log.last_seq
    proc, port = start_serve(home, "--runner", "scripted", "--trajectory", str(traj), log=tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}/api/quests/q1"
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/events?stream=1&after={start}") as stream:
                async with session.post(f"{base}/messages", json={"text": "go"}) as resp:
                    assert resp.status in (200, 201), await resp.text()
                seen: list[dict] = []
                paused = False
                async for f in frames(stream, timeout=60):
                    seen.append(f["data"])
                    kind = f["data"]["type"]
                    if kind == "runner.turn_finished" and len([s for s in seen if s["type"] == kind]) == 1:
                        async with session.post(f"{base}/messages", json={"text": "again"}) as resp:
                            assert resp.status in (200, 201)
                    if kind == "runner.agent_message" and f["data"]["text"] == "second turn, long" and not paused:
                        async with session.post(f"{base}/control", json={"action": "pause"}) as resp:
                            assert resp.status == 200, await resp.text()
                        paused = True
                    if kind == "runner.turn_finished" and paused:
                        break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    finished = [(s["outcome"], s["reason"]) for s in seen if s["type"] == "runner.turn_finished"]
    assert finished == [("completed", ""), ("interrupted", "paused")]
    types = [s["type"] for s in seen]
    assert types.index("runner.turn_started") < types.index("memory.card_written") < types.index("runner.turn_finished")
    assert quest.state("status").status == "paused"
