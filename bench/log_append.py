"""Durable single appends vs a raw loop of os.write + os.fdatasync of the same bytes.

Like with like: both sides sync with ``fdatasync`` (what the log uses) after every
write, into a fresh file of the same directory. Printed: the median of >= 10
interleaved rounds and its spread, for the rates and for the per-round ratio.

Usage: python3 bench/log_append.py [--rounds N] [--n APPENDS_PER_ROUND] [--dir DIR]
"""

from __future__ import annotations

import argparse
import inspect
import os
import tempfile

from _rounds import ROUNDS, ratios, run_rounds, spread, timed, verdict

import _util  # noqa: F401 - puts the repository on sys.path
from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog

# Appends sign the log's head anchor when the log has a key (every quest does): measure
# that too (an EventLog from before anchors takes no key).
SIGNED = {"key": os.urandom(32)} if "key" in inspect.signature(EventLog).parameters else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--n", type=int, default=200, help="appends per round")
    parser.add_argument("--dir", help="directory for the files (default: the system temp directory)")
    args = parser.parse_args()
    n = args.n
    events = [ConversationMessage(role="user", content=f"message number {i} " + "x" * 100) for i in range(n)]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        # The raw baseline writes exactly the bytes the log writes.
        with EventLog(os.path.join(tmp, "ref.jsonl"), quest_id="bench", actor="bench", policy="never") as ref:
            lines = [encode(e) + b"\n" for e in ref.append(events)]  # type: ignore[union-attr]

        def raw() -> None:
            fd = os.open(os.path.join(tmp, "raw.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
            for line in lines:
                os.write(fd, line)
                os.fdatasync(fd)
            os.close(fd)

        def ours() -> None:
            path = os.path.join(tmp, "ours.jsonl")
            for name in os.listdir(tmp):
                if name.startswith("ours.jsonl"):
                    os.remove(os.path.join(tmp, name))
            with EventLog(path, quest_id="bench", actor="bench", policy="always", **SIGNED) as log:
                for event in events:
                    log.append(event)

        times = run_rounds({"raw": lambda: timed(raw), "ours": lambda: timed(ours)}, args.rounds)
    raw_rates = [n / t for t in times["raw"]]
    our_rates = [n / t for t in times["ours"]]
    per_round = ratios(our_rates, raw_rates)
    print(f"{n} appends per round, {args.rounds} rounds, interleaved")
    print(f"raw os.write + os.fdatasync: {spread(raw_rates, '{:,.0f}', ' appends/s')}")
    print(f"EventLog.append (always): {spread(our_rates, '{:,.0f}', ' appends/s')}")
    print(f"ratio ours/raw: {spread(per_round, '{:.2f}', 'x')} ({verdict(per_round, 0.7)})")


if __name__ == "__main__":
    main()
