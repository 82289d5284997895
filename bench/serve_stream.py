"""100 concurrent SSE subscribers on ``ds serve`` under a steady append rate from
another process, against a plain ``EventLog.follow`` reader in the same run.

``ds serve`` runs as a real process. An appender process posts user messages through
the service (as ``ds message`` does) at a steady rate, each carrying the wall-clock
time it was sent. This process holds S SSE streams (default 100) to the daemon and one
``EventLog.follow`` on the quest's log (the raw baseline: what reading the log
directly costs). Delivery latency = arrival - send time. The appends are cut into
>= 10 rounds; per round we take p50 and p99 over every (subscriber, event), and report
the median round with its spread, and the SSE/follow ratio. Every subscriber must see
every seq exactly once, in order: gaps and duplicates are counted and printed.

Note: the subscribers' SSE parsing runs in this one Python process on a 2-core
machine shared with the daemon and the appender, so client-side work is part of the
figure; the follow baseline pays none of it.

Usage: python3 bench/serve_stream.py [--subscribers N] [--rounds N] [--per-round N] [--rate R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import _util  # noqa: F401 - puts the repository on sys.path
import aiohttp
from _rounds import ROUNDS, ratios, spread
from _serve import served_bench_quest
from _start_env import child_env

from ds_events.home import Home
from ds_events.log import EventLog

APPENDER = """
import sys, time
from ds_events.home import Home
from ds_events.services.quest.lifecycle import PostMessage, post_message
home, n, rate = Home(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
with home.open_quest("bench", actor="appender") as q:
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.monotonic()
    for i in range(n):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        post_message(q, PostMessage(text=f"{i} {time.time():.6f}"))
"""


def percentile(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


async def sse_subscriber(session: aiohttp.ClientSession, url: str, total: int, arrivals: list[tuple[int, float, float]], seqs: list[int]) -> None:
    async with session.get(url, headers={"Accept": "text/event-stream"}, timeout=aiohttp.ClientTimeout(total=None)) as resp:
        got = 0
        async for raw in resp.content:
            if not raw.startswith(b"data: "):
                continue
            now = time.time()
            event = json.loads(raw[6:])
            if event.get("type") != "conversation.message":
                continue
            index, sent = event["content"].split()
            arrivals.append((int(index), float(sent), now))
            seqs.append(event["seq"])
            got += 1
            if got >= total:
                return


async def follow_reader(path: Path, after: int, total: int, arrivals: list[tuple[int, float, float]], seqs: list[int]) -> None:
    with EventLog(path, quest_id="bench", read_only=True) as log:
        async for event in log.follow(after):
            now = time.time()
            index, sent = event.content.split()  # type: ignore[attr-defined]
            arrivals.append((int(index), float(sent), now))
            seqs.append(event.seq)
            if len(seqs) >= total:
                return


def gaps_and_duplicates(seqs: list[int], first: int) -> tuple[int, int]:
    expected = list(range(first, first + len(set(seqs))))
    duplicates = len(seqs) - len(set(seqs))
    gaps = len(set(expected) - set(seqs)) + (0 if seqs == sorted(seqs) else 1)
    return gaps, duplicates


async def run(args: argparse.Namespace, home: Home, port: int, tmp: Path) -> None:
    total = args.rounds * args.per_round
    path = home.quest_root("bench") / ".ds" / "events.jsonl"
    with EventLog(path, quest_id="bench", read_only=True) as log:
        after = log.last_seq
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(home.root), str(total), str(args.rate)],
        env=child_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert appender.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/api/quests/bench/events?after={after}"
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as session:
        subs = [([], []) for _ in range(args.subscribers)]  # type: ignore[var-annotated]
        base: tuple[list, list] = ([], [])
        tasks = [asyncio.create_task(sse_subscriber(session, url, total, a, s)) for a, s in subs]
        tasks.append(asyncio.create_task(follow_reader(path, after, total, *base)))
        await asyncio.sleep(1.0)  # let every stream connect and catch up before the first append
        appender.stdin.write("go\n")  # type: ignore[union-attr]
        appender.stdin.flush()  # type: ignore[union-attr]
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=total / args.rate + 120)
    appender.wait()
    rounds_sse: dict[str, list[float]] = {"p50": [], "p99": []}
    rounds_follow: dict[str, list[float]] = {"p50": [], "p99": []}
    for r in range(args.rounds):
        lo, hi = r * args.per_round, (r + 1) * args.per_round
        sse_lat = [(now - sent) * 1e3 for arr, _ in subs for i, sent, now in arr if lo <= i < hi]
        fol_lat = [(now - sent) * 1e3 for i, sent, now in base[0] if lo <= i < hi]
        for key, p in (("p50", 50), ("p99", 99)):
            rounds_sse[key].append(percentile(sse_lat, p))
            rounds_follow[key].append(percentile(fol_lat, p))
    gaps = dups = 0
    for _, seqs in subs:
        g, d = gaps_and_duplicates(seqs, after + 1)
        gaps, dups = gaps + g, dups + d
    short = sum(1 for _, seqs in subs if len(seqs) != total)
    print(f"{args.subscribers} SSE subscribers, {total} events at {args.rate:g}/s from another process, {args.rounds} rounds of {args.per_round}")
    print(f"gaps: {gaps}, duplicates: {dups}, subscribers missing events: {short}")
    for key in ("p50", "p99"):
        print(
            f"{key} latency: SSE {spread(rounds_sse[key], '{:.1f}', ' ms')}; plain follow {spread(rounds_follow[key], '{:.1f}', ' ms')}; "
            f"SSE/follow {spread(ratios(rounds_sse[key], rounds_follow[key]), '{:.2f}', 'x')}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--rate", type=float, default=50.0, help="appends per second")
    args = parser.parse_args()
    with served_bench_quest() as (tmp, root, port):
        asyncio.run(run(args, Home(root), port, tmp))


if __name__ == "__main__":
    main()
