"""Memory search latency and index rebuild time, against a substring scan of the card files.

For each size (default 10,000 and 100,000 cards): append that many ``memory.card_written``
events to a fresh quest's log, materialise the card files, time a full index rebuild
from the log, then time ranked searches (``services.memory.search``, the path the MCP
tool takes: view catch-up, index sync check, FTS5 BM25 query) and, as the raw baseline in
the same run, a case-insensitive substring scan that reads every card file.

Run: python3 bench/memory_search.py [--sizes 10000,100000] [--queries 200] [--scan-queries 15]
     [--reuse-home DIR]

``--reuse-home DIR`` keeps each size's built home under ``DIR/<size>`` and reuses it on
the next run (the cards are still drawn from the generator, so the queries are the same
as a fresh run's); only the append and materialise time is saved, so "setup" then
reads near zero.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ds_events.events.memory import CardWritten  # noqa: E402
from ds_events.home import Home  # noqa: E402
from ds_events.memory.store import MemoryContext  # noqa: E402
from ds_events.services import memory as svc  # noqa: E402
from projections.memory import KINDS, SINGULAR  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--scan-queries", type=int, default=15)
    ap.add_argument("--reuse-home", type=Path, default=None, help="keep built homes under DIR/<size> and reuse them")
    args = ap.parse_args()
    rng = random.Random(7)
    vocab = _vocabulary(rng, 20_000)
    weights = [1 / (i + 1) for i in range(len(vocab))]  # Zipf-like: a few common words, a long tail
    for n in (int(s) for s in args.sizes.split(",")):
        with contextlib.ExitStack() as stack:
            if args.reuse_home is None:
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ds-bench-mem-")))
            else:
                root = args.reuse_home / str(n)
            _run(n, root, rng, vocab, weights, args.queries, args.scan_queries)


def _run(n: int, root: Path, rng: random.Random, vocab: list[str], weights: list[float], n_queries: int, n_scan: int) -> None:
    home = Home(root / "home")
    built = (root / "built").exists()  # written only after a complete fill
    if built:
        quest = home.open_quest("bench")
    else:
        shutil.rmtree(root, ignore_errors=True)
        home.init()
        quest = home.create_quest("bench", quest_id="bench")
    t0 = time.perf_counter()
    batch = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        title = " ".join(rng.choices(vocab, weights, k=6))
        body = " ".join(rng.choices(vocab, weights, k=40))
        batch.append(CardWritten(card_id=f"{SINGULAR[kind]}-{i:08x}", kind=kind, title=title, body=body,
                                 tags=[rng.choice(vocab[:50])], source_quest="bench"))  # fmt: skip
        if len(batch) == 2000:
            if not built:
                quest.log.append(batch)
            batch = []
    if batch and not built:
        quest.log.append(batch)
    quest.views.catch_up(keep=False)
    if not built:
        quest.views.materialise(full=True)
        (root / "built").touch()
    t_fill = time.perf_counter() - t0
    mem = MemoryContext(quest, actor="bench")
    index = mem.store("quest").index
    t0 = time.perf_counter()
    index.rebuild()
    t_rebuild = time.perf_counter() - t0
    queries = [" ".join(rng.choices(vocab, weights, k=rng.randint(2, 5))) for _ in range(n_queries)]
    svc.search(mem, queries[0])  # warm caches, as a running server would be
    ours = []
    for q in queries:
        t0 = time.perf_counter()
        svc.search(mem, q, limit=10)
        ours.append(time.perf_counter() - t0)
    files = sorted((quest.root / "memory").rglob("*.md"))
    scan = []
    for q in queries[:n_scan]:
        needle = q.lower()
        t0 = time.perf_counter()
        _hits = [p for p in files if needle in p.read_text().lower()]
        scan.append(time.perf_counter() - t0)
    mem.close()
    quest.close()
    p50, p99 = _pct(ours, 50), _pct(ours, 99)
    s50, s99 = _pct(scan, 50), _pct(scan, 99)
    print(f"cards={n:>7}  setup {t_fill:6.1f} s  index rebuild from log {t_rebuild:6.2f} s ({n / t_rebuild:,.0f} cards/s)")
    print(f"  ranked search   p50 {p50 * 1e3:8.2f} ms  p99 {p99 * 1e3:8.2f} ms  ({len(ours)} queries)")
    print(f"  substring scan  p50 {s50 * 1e3:8.2f} ms  p99 {s99 * 1e3:8.2f} ms  ({len(scan)} queries, baseline)")
    print(f"  ratio: search is {s50 / p50:,.0f}x faster than the scan at p50, {s99 / p99:,.0f}x at p99")
    sys.stdout.flush()


def _pct(values: list[float], pct: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1] if len(values) > 1 else values[0]


def _vocabulary(rng: random.Random, n: int) -> list[str]:
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    # Sorted first: a set's order follows the per-process string hash seed, which made
    # each run rank a different word as the most common (and a reused home mismatch).
    return sorted(sorted(words), key=lambda w: rng.random())


if __name__ == "__main__":
    main()
