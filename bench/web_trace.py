"""How soon an event another process appends shows in the page's live trace, against a
raw SSE client of the same daemon in the same run.

``ds serve --no-turns`` runs as a real process; headless Chromium (Debian's, under
playwright) has the quest's page open, its trace following the stream. An appender
process posts user messages through the service (as ``ds message`` does) at a steady
rate, each carrying the wall-clock time it was sent. In the page a MutationObserver
notes when each message's card enters the trace's DOM; beside it, a plain aiohttp SSE
reader in this process (the raw baseline: the stream with no page at all) notes when
each event arrives. Latency = arrival - send time (one machine, one clock). The appends
are cut into >= 10 rounds; per round we take the p50 and the max of each side and the
trace/raw ratio, and report the median round with its spread. A card counted twice or
missing is printed too.

Note: the browser, the daemon, the appender and this process share a 2-core machine;
the raw reader's parsing runs here, the page's in Chromium.

Usage: python3 bench/web_trace.py [--rounds N] [--per-round N] [--rate R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import _util  # noqa: F401 - puts the repository on sys.path
import aiohttp
from _rounds import ROUNDS, ratios, spread
from _serve import served_bench_quest
from _start_env import child_env
from serve_stream import APPENDER, sse_subscriber  # the same appender and raw reader as the stream bench

from ds_events.home import Home

# In the page: note when each message's card enters the trace.
OBSERVE = """
() => {
  window.__arrivals = [];
  const list = document.querySelector('#trace .trace-list');
  new MutationObserver((records) => {
    const now = Date.now();
    for (const r of records) for (const node of r.addedNodes) {
      const m = /^(\\d+) ([\\d.]+)$/.exec(node.querySelector?.('.text')?.textContent || '');
      if (m) window.__arrivals.push([Number(m[1]), Number(m[2]), now / 1000]);
    }
  }).observe(list, { childList: true });
}
"""


def raw_reader(url: str, total: int, arrivals: list[tuple[int, float, float]]) -> None:
    async def read() -> None:
        async with aiohttp.ClientSession() as session:
            await sse_subscriber(session, url, total, arrivals, [])

    asyncio.run(read())


def run(args: argparse.Namespace, home: Home, port: int, tmp: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.web.harness import CHROMIUM, CHROMIUM_ARGS

    total = args.rounds * args.per_round
    base = f"http://127.0.0.1:{port}"
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(home.root), str(total), str(args.rate)],
        env=child_env(tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert appender.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
    raw: list[tuple[int, float, float]] = []
    with home.open_quest("bench") as q:
        after = q.log.last_seq
    reader = threading.Thread(target=raw_reader, args=(f"{base}/api/quests/bench/events?after={after}", total, raw), daemon=True)
    reader.start()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto(f"{base}/#/q/bench")
        page.wait_for_selector('#trace .trace-state[data-state="live"]')
        page.evaluate(OBSERVE)
        time.sleep(1.0)  # let both readers connect and settle before the first append
        appender.stdin.write("go\n")  # type: ignore[union-attr]
        appender.stdin.flush()  # type: ignore[union-attr]
        deadline = time.monotonic() + total / args.rate + 60
        while time.monotonic() < deadline and page.evaluate("window.__arrivals.length") < total:
            time.sleep(0.2)
        shown = [tuple(a) for a in page.evaluate("window.__arrivals")]
        browser.close()
    appender.wait()
    reader.join(timeout=30)
    indices = [i for i, _, _ in shown]
    print(f"trace in Chromium vs a raw SSE reader, {total} events at {args.rate:g}/s from another process, {args.rounds} rounds of {args.per_round}")
    print(f"cards: {len(set(indices))} of {total} shown, {len(indices) - len(set(indices))} shown twice; raw reader got {len(raw)}")
    page_r: dict[str, list[float]] = {"p50": [], "max": []}
    raw_r: dict[str, list[float]] = {"p50": [], "max": []}
    for r in range(args.rounds):
        lo, hi = r * args.per_round, (r + 1) * args.per_round
        p = [(now - sent) * 1e3 for i, sent, now in shown if lo <= i < hi]
        b = [(now - sent) * 1e3 for i, sent, now in raw if lo <= i < hi]
        if not p or not b:
            continue
        page_r["p50"].append(statistics.median(p))
        page_r["max"].append(max(p))
        raw_r["p50"].append(statistics.median(b))
        raw_r["max"].append(max(b))
    for key in ("p50", "max"):
        print(
            f"{key} latency: trace {spread(page_r[key], '{:.1f}', ' ms')}; raw SSE {spread(raw_r[key], '{:.1f}', ' ms')}; "
            f"trace/raw {spread(ratios(page_r[key], raw_r[key]), '{:.2f}', 'x')}"
        )
    worst = max(page_r["max"]) if page_r["max"] else float("nan")
    print(f"target: every card within 1000 ms of its append: {'met' if worst < 1000 else 'NOT met'} (worst {worst:.1f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--per-round", type=int, default=10)
    parser.add_argument("--rate", type=float, default=10.0, help="appends per second")
    args = parser.parse_args()
    with served_bench_quest() as (tmp, root, port):
        run(args, Home(root), port, tmp)


if __name__ == "__main__":
    main()
