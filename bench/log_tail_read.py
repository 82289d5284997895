"""A page of 100 events at the head, the middle and the tail of a 1,000,000-event log.

A page should cost what it returns, wherever it is. The baseline, measured in the same
run, is decoding the same 100 stored lines already in memory (what returning 100
events costs at the least). Printed per position: the median time of a page over >= 10
interleaved rounds (each round the median of 20 reads) with its spread, its ratio to
the baseline, the bytes it read from the file, and head/tail and middle/tail ratios.

Usage: python3 bench/log_tail_read.py [--rounds N] [--events N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import _util  # noqa: F401 - puts the repository on sys.path
from _rounds import ROUNDS, ratios, run_rounds, spread, verdict

from ds_events.events import ConversationMessage, decode_line
from ds_events.log import EventLog

PAGE = 100


def median_of(fn, calls: int = 20) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bytes_read(fn) -> int:
    """Bytes ``fn`` reads through os.pread / os.read."""
    real_pread, real_read, total = os.pread, os.read, 0

    def pread(fd, n, offset):
        nonlocal total
        data = real_pread(fd, n, offset)
        total += len(data)
        return data

    def read(fd, n):
        nonlocal total
        data = real_read(fd, n)
        total += len(data)
        return data

    os.pread, os.read = pread, read
    try:
        fn()
    finally:
        os.pread, os.read = real_pread, real_read
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    n = args.events
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        start = time.perf_counter()
        with EventLog(path, quest_id="bench", actor="bench", policy="never") as log:
            for base in range(0, n, 20_000):
                log.append([ConversationMessage(role="user", content=f"message {base + i}") for i in range(min(20_000, n - base))])
        print(f"built a {n:,}-event log ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - start:.0f} s")

        positions = {"head": 0, "middle": n // 2, "tail": n - PAGE}
        with EventLog(path, quest_id="bench") as log:
            assert log.last_seq == n
            for after in positions.values():
                assert [e.seq for e in log.read(after_seq=after, limit=PAGE)] == list(range(after + 1, after + PAGE + 1))
            in_memory = [line for _seq, line in log.iter_lines(after_seq=n // 2)][:PAGE]

            def page(after: int):
                return lambda: median_of(lambda: log.read(after_seq=after, limit=PAGE))

            measures = {"baseline": lambda: median_of(lambda: [decode_line(line) for line in in_memory])}
            measures.update({name: page(after) for name, after in positions.items()})
            times = run_rounds(measures, args.rounds)
            read = {name: bytes_read(lambda a=after: log.read(after_seq=a, limit=PAGE)) for name, after in positions.items()}
        # Opening the log does not scan it either.
        t_open = statistics.median(
            [median_of(lambda: EventLog(path, quest_id="bench").close(), 5) for _ in range(args.rounds)]
        )
    print(f"{args.rounds} rounds, interleaved; median (spread)")
    print(f"baseline, decoding {PAGE} stored lines already in memory: {spread([t * 1e3 for t in times['baseline']], '{:.3f}', ' ms')}")
    for name, after in positions.items():
        print(
            f"{name} page ({PAGE} events after seq {after:,}): {spread([t * 1e3 for t in times[name]], '{:.3f}', ' ms')}, "
            f"{spread(ratios(times[name], times['baseline']), '{:.2f}', 'x')} the baseline, reads {read[name] / 1024:,.0f} KiB"
        )
    head_tail = ratios(times["head"], times["tail"])
    middle_tail = ratios(times["middle"], times["tail"])
    print(f"ratio head/tail: {spread(head_tail, '{:.2f}', 'x')} ({verdict(head_tail, 2.0, higher_is_better=False)})")
    print(f"ratio middle/tail: {spread(middle_tail, '{:.2f}', 'x')} ({verdict(middle_tail, 2.0, higher_is_better=False)})")
    print(f"opening the {n:,}-event log: {t_open * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
