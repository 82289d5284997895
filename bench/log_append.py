"""Durable single append vs a raw os.write + os.fsync loop of the same bytes."""

from __future__ import annotations

import os
import tempfile

from _util import best_rate, verdict

from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog

N = 2000


def main() -> None:
    events = [ConversationMessage(role="user", content=f"message number {i} " + "x" * 100) for i in range(N)]
    with tempfile.TemporaryDirectory() as tmp:
        # The raw baseline writes exactly the bytes the log writes.
        with EventLog(os.path.join(tmp, "ref.jsonl"), quest_id="bench", actor="bench", policy="never") as ref:
            lines = [encode(e) + b"\n" for e in ref.append(events)]

        def raw() -> int:
            path = os.path.join(tmp, "raw.jsonl")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
            for line in lines:
                os.write(fd, line)
                os.fsync(fd)
            os.close(fd)
            return N

        def ours() -> int:
            path = os.path.join(tmp, "ours.jsonl")
            for suffix in ("", ".idx", ".lock"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
            with EventLog(path, quest_id="bench", actor="bench", policy="always") as log:
                for event in events:
                    log.append(event)
            return N

        raw_rate, our_rate = 0.0, 0.0
        for _ in range(3):  # interleave so drift hits both sides alike
            raw_rate = max(raw_rate, best_rate(raw, repeats=1))
            our_rate = max(our_rate, best_rate(ours, repeats=1))
    ratio = our_rate / raw_rate
    print(f"raw os.write+os.fsync: {raw_rate:,.0f} appends/s")
    print(f"EventLog.append (always): {our_rate:,.0f} appends/s")
    print(f"ratio ours/raw: {ratio:.2f}x ({verdict(ratio, 0.7)})")


if __name__ == "__main__":
    main()
