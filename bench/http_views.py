"""``GET /workflow``, ``GET /canvas?view=branch|event|stage``, a Canvas node's details
(``GET /nodes/branch:run/a``) and the quest list of ``ds serve`` must not grow with log
length: the same requests on a quest whose log holds 10,000 events and on
one with ``--big`` events (1,000,000 by default), over HTTP on loopback.

One home holds both quests, built by appending event batches straight to their logs
(the event mix of ``read_models.py``: messages, progress/idea/decision records,
checkpoints on four branches, which also exist in the quest's git repository, anchor
changes) and folded once, with snapshots saved, as a daemon that has run a while leaves
them. ``ds serve`` runs as a real process (``_serve.py``); each quest is served once
before timing (the daemon opens it and keeps its views). Every round then times, per
measure and size, the median of ``--calls`` requests, interleaved; the raw baseline in
the same run is ``GET /api/health`` on the same daemon (an HTTP round trip that reads no
quest). Reported: the median over ``--rounds`` rounds with the lowest and highest round,
the per-round ratio big/10k (target <= 2) and each view against the baseline.

    PYTHONPATH=$PWD python3 bench/http_views.py                 # 10k vs 1M
    PYTHONPATH=$PWD python3 bench/http_views.py --big 100000    # a quicker run
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _rounds import ratios, spread, verdict
from _serve import start_serve
from _util import append_in_batches

from ds_events.events import Event
from ds_events.events.artifact import BranchPrepared
from ds_events.home import Home
from read_models import _BRANCHES, _event

_BATCH = 5000
MEASURES = {
    "workflow": "/api/quests/{q}/workflow",
    "canvas branch": "/api/quests/{q}/canvas?view=branch",
    "canvas event": "/api/quests/{q}/canvas?view=event",
    "canvas stage": "/api/quests/{q}/canvas?view=stage",
    "node details run/a": "/api/quests/{q}/nodes/branch%3Arun%2Fa",  # what a click on the page's Canvas asks
    "quest list": "/api/quests",  # what the page's list polls (both quests; the same at either size)
    "raw GET /api/health": "/api/health",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20, help="requests per measure, size and round (their median is the round's figure)")
    args = parser.parse_args()
    sizes = (args.small, args.big)
    with tempfile.TemporaryDirectory(prefix="bench-http-views-") as tmp:
        home = Home(Path(tmp) / "home")
        home.init()
        for n in sizes:
            t0 = time.perf_counter()
            _build(home, f"n{n}", n)
            print(f"built, folded and snapshotted {n:>9,} events in {time.perf_counter() - t0:6.1f} s")
        proc, port = start_serve(home.root, Path(tmp))
        try:
            times = asyncio.run(_measure(port, sizes, args.rounds, args.calls))
        finally:
            proc.terminate()
            proc.wait()

    small, big = sizes
    print(f"\nGET latency over loopback, median of {args.calls} requests per round; median over {args.rounds} rounds (spread):")
    for name in MEASURES:
        a, b = times[(name, small)], times[(name, big)]
        print(f"  {name:<20} {small:>9,} events: {spread([x * 1e3 for x in a], '{:.2f}', ' ms')}")
        print(f"  {'':<20} {big:>9,} events: {spread([x * 1e3 for x in b], '{:.2f}', ' ms')}")
        if not name.startswith("raw"):
            r = ratios(b, a)
            print(f"  {'':<20} {big:,}/{small:,}: {spread(r, '{:.2f}', 'x')}  ({verdict(r, 2.0, higher_is_better=False)})")
    raw = times[("raw GET /api/health", big)]
    for name in MEASURES:
        if not name.startswith("raw"):
            print(f"  {name} / raw GET /api/health at {big:,} events: {spread(ratios(times[(name, big)], raw), '{:.1f}', 'x')}")


async def _measure(port: int, sizes: tuple[int, int], rounds: int, calls: int) -> dict[tuple[str, int], list[float]]:
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def get(path: str) -> None:
            async with session.get(base + path) as resp:
                await resp.read()
                assert resp.status == 200, (path, resp.status)

        async def median_of(path: str) -> float:
            out = []
            for _ in range(calls):
                start = time.perf_counter()
                await get(path)
                out.append(time.perf_counter() - start)
            return statistics.median(out)

        for n in sizes:  # the daemon opens each quest and keeps its views, before timing
            t0 = time.perf_counter()
            for path in MEASURES.values():
                await get(path.format(q=f"n{n}"))
            print(f"first requests on {n:>9,} events (the daemon opens the quest): {time.perf_counter() - t0:6.1f} s")
        times: dict[tuple[str, int], list[float]] = {(m, n): [] for m in MEASURES for n in sizes}
        for _ in range(rounds):
            for name, path in MEASURES.items():
                for n in sizes:
                    times[(name, n)].append(await median_of(path.format(q=f"n{n}")))
        return times


def _build(home: Home, quest_id: str, n: int) -> None:
    import pygit2

    quest = home.create_quest("bench", quest_id=quest_id)
    try:
        repo = pygit2.Repository(str(quest.root))
        head = repo.head.peel(pygit2.Commit)
        for name in _BRANCHES[1:]:  # the branch view reads git: the branches exist there too
            repo.branches.local.create(name, head)
        branches: list[Event] = [
            BranchPrepared(branch=b, branch_kind=b.split("/")[0], start_sha=str(head.id), start_point="main") for b in _BRANCHES[1:]
        ]
        rest = (_event(i) for i in range(len(branches), n - 1))  # create_quest appended the first event
        append_in_batches(quest.log, itertools.chain(branches, rest), _BATCH)
        quest.views.catch_up(keep=False)
        quest.views.save_snapshots()
    finally:
        quest.close()


if __name__ == "__main__":
    main()
