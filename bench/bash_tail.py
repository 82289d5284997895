"""Reading the last 200 lines of a session log of 10 MB, 100 MB and 1 GB.

The numbered line log is read backwards from its end, so the cost must not grow with
the log's size. Raw baselines in the same run: GNU ``tail -n 200`` (which also seeks
from the end) and a naive Python scan of the whole file (``deque(f, 200)``).
"""

from __future__ import annotations

import collections
import os
import subprocess
import tempfile
import time

from _util import median_seconds, verdict

from ds_events.bash import linelog

SIZES = [(10, "10 MB"), (100, "100 MB"), (1024, "1 GB")]
PAD = "x" * 100


def build(path: str, megabytes: int) -> int:
    seq, size, target = 0, 0, megabytes * 1024 * 1024
    with open(path, "wb") as f:
        while size < target:
            block = linelog.format_lines([(seq + i, f"step {seq + i} loss 1.234 {PAD}") for i in range(1, 50_001)])
            f.write(block)
            seq, size = seq + 50_000, size + len(block)
    return seq


def main() -> None:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mb, label in SIZES:
            path = os.path.join(tmp, f"{mb}.log")
            t0 = time.perf_counter()
            total = build(path, mb)
            print(f"built {label} log ({total:,} lines) in {time.perf_counter() - t0:.1f} s")
            got = linelog.tail(path, 200)
            assert got.total_lines == total and got.first_seq == total - 199
            ours = min(median_seconds(lambda: linelog.tail(path, 200), 15) for _ in range(3))
            gnu = min(median_seconds(lambda: subprocess.run(["tail", "-n", "200", path], stdout=subprocess.DEVNULL), 15)
                      for _ in range(3))
            naive = median_seconds(lambda: collections.deque(open(path, "rb"), 200), 1 if mb > 100 else 3)
            results[label] = ours
            print(f"  last 200 lines, ds-events: {ours * 1e3:8.3f} ms | GNU tail: {gnu * 1e3:8.3f} ms "
                  f"| naive full scan: {naive * 1e3:9.1f} ms")
            print(f"  ratio ds-events/GNU tail: {ours / gnu:.2f}x, naive scan/ds-events: {naive / ours:,.0f}x")
            os.unlink(path)
    growth = results["1 GB"] / results["10 MB"]
    print(f"1 GB vs 10 MB, ds-events tail: {growth:.2f}x  ({verdict(growth, 2.0, higher_is_better=False)})")


if __name__ == "__main__":
    main()
