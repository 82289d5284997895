"""Rounds for the log benchmarks: every figure is a median over >= 10 rounds, with spread.

Each round runs every measurement once, interleaved (ours next to its baseline), so
drift on a shared machine hits both sides alike; a ratio is computed per round and its
median reported with the lowest and highest round, never a best-of.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

ROUNDS = 10


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_rounds(measures: dict[str, Callable[[], float]], rounds: int = ROUNDS) -> dict[str, list[float]]:
    """Call every measure once per round, in order, for ``rounds`` rounds."""
    out: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(rounds):
        for name, measure in measures.items():
            out[name].append(measure())
    return out


def ratios(top: list[float], bottom: list[float]) -> list[float]:
    """Per-round ratios ``top[i] / bottom[i]``."""
    return [t / b for t, b in zip(top, bottom, strict=False)]


def spread(values: list[float], fmt: str = "{:.2f}", unit: str = "") -> str:
    """``median (min–max over n rounds)`` of ``values``."""
    med = statistics.median(values)
    return f"{fmt.format(med)}{unit} (spread {fmt.format(min(values))}–{fmt.format(max(values))}{unit} over {len(values)} rounds)"


def verdict(values: list[float], target: float, higher_is_better: bool = True) -> str:
    """Whether the median of ``values`` meets ``target``."""
    med = statistics.median(values)
    met = med >= target if higher_is_better else med <= target
    return f"target {'>=' if higher_is_better else '<='} {target}x: {'met' if met else 'NOT met'}"
