"""``GET /api/quests/Q/events?after=`` near the tail of a long log vs the first page.

A page must cost what it returns, wherever the cursor is. ``ds serve`` runs as a real
process over a quest whose log holds N events (default 1,000,000); one client asks
for 100 events after seq 0 (the first page) and after N-100 (the tail). The raw
baseline, measured in the same run, is ``EventLog.read(after, 100)`` in this process
(the least a page can cost before HTTP and JSON). Printed: medians over >= 10
interleaved rounds (each round the median of 20 requests) with spread, the tail/first
ratio (target <= 2) and each page against its raw read.

Usage: python3 bench/events_page.py [--rounds N] [--events N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import _util  # noqa: F401 - puts the repository on sys.path
import aiohttp
from _rounds import ROUNDS, ratios, spread, verdict
from _serve import start_serve

from ds_events.events import ConversationMessage
from ds_events.home import Home
from ds_events.log import EventLog

PAGE = 100
CALLS = 20


def build(home: Home, n: int) -> None:
    q = home.create_quest("Bench", quest_id="bench")
    path = q.root / ".ds" / "events.jsonl"
    q.close()
    with EventLog(path, quest_id="bench", actor="bench", policy="never", key=home.log_key()) as log:
        done = log.last_seq
        for base in range(done, n, 20_000):
            log.append([ConversationMessage(role="user", content=f"message {base + i}") for i in range(min(20_000, n - base))])


async def measure(port: int, n: int, rounds: int, log: EventLog) -> dict[str, list[float]]:
    url = f"http://127.0.0.1:{port}/api/quests/bench/events"
    async with aiohttp.ClientSession() as session:

        async def page(after: int) -> None:
            async with session.get(url, params={"after": str(after), "limit": str(PAGE)}) as resp:
                body = await resp.json()
                assert resp.status == 200 and len(body["events"]) == PAGE and body["events"][0]["seq"] == after + 1

        async def median_of(after: int) -> float:
            times = []
            for _ in range(CALLS):
                start = time.perf_counter()
                await page(after)
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        def raw(after: int) -> float:
            times = []
            for _ in range(CALLS):
                start = time.perf_counter()
                log.read(after_seq=after, limit=PAGE)
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        await page(0)  # the daemon opens the quest (its views) once, before timing
        out: dict[str, list[float]] = {k: [] for k in ("first", "tail", "raw_first", "raw_tail")}
        for _ in range(rounds):
            out["first"].append(await median_of(0))
            out["raw_first"].append(raw(0))
            out["tail"].append(await median_of(n - PAGE))
            out["raw_tail"].append(raw(n - PAGE))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.init()
        start = time.perf_counter()
        build(home, args.events)
        n = args.events
        print(f"built a {n:,}-event quest log in {time.perf_counter() - start:.0f} s")
        proc, port = start_serve(home.root, Path(tmp))
        try:
            with EventLog(home.quest_root("bench") / ".ds" / "events.jsonl", quest_id="bench", read_only=True) as log:
                n = log.last_seq
                t = asyncio.run(measure(port, n, args.rounds, log))
        finally:
            proc.terminate()
            proc.wait()
    print(f"{args.rounds} rounds, interleaved; median (spread); each round the median of {CALLS} requests")
    for name, after in (("first", 0), ("tail", n - PAGE)):
        print(
            f"{name} page (100 events after seq {after:,}): {spread([x * 1e3 for x in t[name]], '{:.2f}', ' ms')}; "
            f"raw EventLog.read: {spread([x * 1e3 for x in t['raw_' + name]], '{:.3f}', ' ms')}; "
            f"HTTP/raw {spread(ratios(t[name], t['raw_' + name]), '{:.1f}', 'x')}"
        )
    r = ratios(t["tail"], t["first"])
    print(f"ratio tail/first over HTTP: {spread(r, '{:.2f}', 'x')} ({verdict(r, 2.0, higher_is_better=False)})")


if __name__ == "__main__":
    main()
