"""Reading 100 events after seq N-100 of a 1,000,000-event log vs reading the first 100."""

from __future__ import annotations

import os
import tempfile
import time

from _util import median_seconds, verdict

from ds_events.events import ConversationMessage
from ds_events.log import EventLog

N = 1_000_000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        start = time.perf_counter()
        with EventLog(path, quest_id="bench", actor="bench", policy="never") as log:
            for base in range(0, N, 20_000):
                log.append([ConversationMessage(role="user", content=f"message {base + i}") for i in range(20_000)])
        print(f"built a {N:,}-event log ({os.path.getsize(path) / 1e6:.0f} MB) in {time.perf_counter() - start:.0f} s")

        with EventLog(path, quest_id="bench") as log:
            assert log.last_seq == N
            assert [e.seq for e in log.read(after_seq=N - 100, limit=100)] == list(range(N - 99, N + 1))

            def head() -> None:
                log.read(after_seq=0, limit=100)

            def tail() -> None:
                log.read(after_seq=N - 100, limit=100)

            t_head = t_tail = float("inf")
            for _ in range(5):  # interleaved, best of each
                t_head = min(t_head, median_seconds(head, 20))
                t_tail = min(t_tail, median_seconds(tail, 20))
        # Opening the log does not scan it either.
        t_open = median_seconds(lambda: EventLog(path, quest_id="bench").close(), 5)
    ratio = t_tail / t_head
    print(f"first 100 events: {t_head * 1e3:.3f} ms")
    print(f"100 events after seq N-100: {t_tail * 1e3:.3f} ms")
    print(f"ratio tail/head: {ratio:.2f}x ({verdict(ratio, 2.0, higher_is_better=False)})")
    print(f"opening the {N:,}-event log: {t_open * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
