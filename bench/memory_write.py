"""Memory write latency as the store grows, against a raw baseline in the same run.

For each size (default 1,000, 10,000 and 50,000 cards) a fresh quest (durability policy
``group``, the default) gets that many ``memory.card_written`` events appended in
batches straight to its log, its card files materialised and its search index filled:
the store a long quest reaches, built in seconds rather than through 50,000 service
calls. Then, for ``--rounds`` rounds (default 10), every size in turn:

- **ours**: ``--writes`` (default 10) card writes through the memory service (the path
  the MCP ``write`` tool takes: checks, config-pollution and near-duplicate checks under
  the log's lock, the durable append, then the card file, ``MEMORY.md`` and the other
  quest files materialised); the round's p50;
- **raw**: the least any durable write of such a card must do, by hand: write the
  same card bytes to a file (temp + rename) and append one JSON line of the same size
  to a log file with ``os.write`` + ``os.fdatasync``; the round's p50.

The report gives, per size, the median over rounds of each p50 with its spread
(lowest-highest round) and the per-round ratio ours / raw; then the per-round ratio
of ours at the largest size to ours at the smallest (flat is 1.0).

Run: python3 bench/memory_write.py [--sizes 1000,10000,50000] [--rounds 10] [--writes 10]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _util import append_in_batches, vocabulary

from ds_events.events.memory import CardWritten
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.paths import write_atomic
from ds_events.services.memory import cards as svc
from projections.memory import KINDS, SINGULAR

_BATCH = 2000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--writes", type=int, default=10, help="writes timed per size and round")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(11)
    vocab = vocabulary(rng, 20_000)
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    with tempfile.TemporaryDirectory(prefix="ds-bench-memw-") as tmp:
        root = Path(tmp)
        stores: dict[int, tuple[Quest, MemoryContext]] = {}
        for n in sizes:
            t0 = time.perf_counter()
            quest = _build(root / f"n{n}", n, rng, vocab, cum)
            mem = MemoryContext(quest, actor="bench")
            mem.store("quest").index.sync()
            _write(mem, _card(rng, vocab, cum))  # warm caches, as a running server would be
            stores[n] = (quest, mem)
            print(f"built {n:>6} cards in {time.perf_counter() - t0:5.1f} s")
        raw_dir = root / "raw"
        raw_dir.mkdir()
        fd = os.open(raw_dir / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        ours: dict[int, list[float]] = {n: [] for n in sizes}
        raw: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(args.rounds):
            for n in sizes:
                _quest, mem = stores[n]
                cards = [_card(rng, vocab, cum) for _ in range(args.writes)]
                ours[n].append(_p50(cards, lambda c: _write(mem, c)))
                raw[n].append(_p50(cards, lambda c: _raw_write(raw_dir, fd, c)))
        os.close(fd)
        statuses = {n: _statuses(stores[n][1]) for n in sizes}
        for quest, mem in stores.values():
            mem.close()
            quest.close()

    print(f"\nmemory write p50 per round, median over {args.rounds} rounds [lowest-highest round], "
          f"{args.writes} writes per size and round, durability group:")  # fmt: skip
    for n in sizes:
        r = [o / b for o, b in zip(ours[n], raw[n], strict=False)]
        print(f"  {n:>6} cards: ours {_ms(ours[n])}   raw {_ms(raw[n])}   ours/raw {_x(r)}   ({statuses[n]})")
    small, large = sizes[0], sizes[-1]
    flat = [b / a for a, b in zip(ours[small], ours[large], strict=False)]
    print(f"  ours at {large} / ours at {small} cards: {_x(flat)}  (target <= 1.5x: "
          f"{'met' if statistics.median(flat) <= 1.5 else 'NOT met'})")  # fmt: skip
    p50 = statistics.median(ours[large]) * 1e3
    print(f"  p50 at {large} cards: {p50:.2f} ms  (target <= 5 ms: {'met' if p50 <= 5 else 'NOT met'})")


# -- the store ----------------------------------------------------------------------


def _build(root: Path, n: int, rng: random.Random, vocab: list[str], cum: list[float]) -> Quest:
    home = Home(root / "home")
    home.init()
    quest = home.create_quest("bench", quest_id="bench")
    def cards() -> Iterator[CardWritten]:
        for i in range(n):
            kind = KINDS[i % len(KINDS)]
            title, body, tags = _card(rng, vocab, cum)
            yield CardWritten(card_id=f"{SINGULAR[kind]}-{i:08x}", kind=kind, title=title, body=body, tags=tags,
                              source_quest="bench")  # fmt: skip

    append_in_batches(quest.log, cards(), _BATCH)
    quest.views.catch_up(keep=False)
    quest.views.materialise(full=True)
    return quest


def _card(rng: random.Random, vocab: list[str], cum: list[float]) -> tuple[str, str, list[str]]:
    # A title of six words and a body of forty drawn Zipf-like (a few common words, a
    # long tail): two random cards share few words, so writes are not near-duplicates.
    title = " ".join(rng.choices(vocab, cum_weights=cum, k=6))
    body = " ".join(rng.choices(vocab, cum_weights=cum, k=40))
    return title, body, [rng.choice(vocab[:50])]


# -- the two sides ------------------------------------------------------------------

_seen: dict[int, dict[str, int]] = {}


def _write(mem: MemoryContext, card: tuple[str, str, list[str]]) -> None:
    title, body, tags = card
    kind = "knowledge"
    write = getattr(svc, "write", None)
    if write is not None and hasattr(svc, "WriteCard"):  # the typed service
        status = write(mem, svc.WriteCard(kind=kind, title=title, body=body, tags=tags)).status
    else:  # the base commit's keyword service
        status = svc.write_card(mem, kind, title, body, tags=tags)["status"]
    counts = _seen.setdefault(id(mem), {})
    counts[status] = counts.get(status, 0) + 1


def _statuses(mem: MemoryContext) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(_seen.get(id(mem), {}).items()))


def _raw_write(root: Path, fd: int, card: tuple[str, str, list[str]]) -> None:
    title, body, tags = card
    text = f"---\nid: knowledge-0\ntitle: {title}\ntags: {tags}\n---\n\n{body}\n".encode()
    write_atomic(root / "knowledge" / f"k-{random.getrandbits(32):08x}.md", text)
    line = b'{"seq":1,"type":"memory.card_written","payload":' + text.replace(b"\n", b" ") + b"}\n"
    os.write(fd, line)
    os.fdatasync(fd)


# -- timing -------------------------------------------------------------------------


def _p50(items: list[Any], fn: Callable[[Any], object]) -> float:
    times = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:7.2f} ms [{min(values) * 1e3:.2f}-{max(values) * 1e3:.2f}]"


def _x(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f}x [{min(values):.2f}-{max(values):.2f}]"


if __name__ == "__main__":
    main()
