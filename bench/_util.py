"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def best_rate(fn: Callable[[], int], repeats: int = 3) -> float:
    """Highest ops/second over ``repeats`` runs of ``fn`` (which returns its op count)."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        n = fn()
        rates.append(n / (time.perf_counter() - start))
    return max(rates)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def verdict(ratio: float, target: float, higher_is_better: bool = True) -> str:
    met = ratio >= target if higher_is_better else ratio <= target
    return f"target {'>=' if higher_is_better else '<='} {target}x: {'met' if met else 'NOT met'}"


def vocabulary(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct pronounceable made-up words in a seeded random order (for cards)."""
    consonants, vowels = "bcdfghklmnprstvz", "aeiou"
    found: set[str] = set()
    while len(found) < n:
        found.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4))))
    # Sorted first: a set's order follows the per-process string hash seed, which made
    # each run rank a different word as the most common (and a reused home mismatch).
    return sorted(sorted(found), key=lambda w: rng.random())


def append_in_batches(log: Any, events: Iterable[Any], batch: int) -> None:
    """Append ``events`` to ``log`` ``batch`` at a time: how the benches build a long
    log (or a big store) in seconds instead of one service call per event."""
    chunk: list[Any] = []
    for event in events:
        chunk.append(event)
        if len(chunk) == batch:
            log.append(chunk)
            chunk = []
    if chunk:
        log.append(chunk)
