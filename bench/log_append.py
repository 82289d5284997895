"""Durable single appends vs a raw loop of os.write + os.fdatasync of the same bytes.

Like with like: both sides sync with ``fdatasync`` (what the log uses) after every
write, into a fresh file of the same directory. Printed: the median of >= 10
interleaved rounds and its spread, for the rates and for the per-round ratio.

Also what the head anchor alone costs per append (the update every append makes after
its sync: ``HeadAnchor.write`` of each successive head, signing it and, where the code
has one, the home's witness), as microseconds and as a share of a raw durable write in
the same round, so the anchor of one version can be set against another's. It is
measured in a log's steady state (heads after seq 4096, where a past head is recorded
once per 1,024 seqs); the appends above start a fresh log, whose first 1,024 heads
record ten past heads.

Usage: python3 bench/log_append.py [--rounds N] [--n APPENDS_PER_ROUND] [--dir DIR]
"""

from __future__ import annotations

import argparse
import inspect
import os
import tempfile

import _util  # noqa: F401 - puts the repository on sys.path
from _rounds import ROUNDS, ratios, run_rounds, spread, timed, verdict

from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog, line_hash

# Appends sign the log's head anchor when the log has a key (every quest does), and keep
# the home's witness of it where the code has one: measure that too (an EventLog from
# before anchors takes no key, one from before witnesses no witness).
_PARAMS = inspect.signature(EventLog).parameters
SIGNED: dict[str, object] = {"key": os.urandom(32)} if "key" in _PARAMS else {}
WITNESSED = "witness" in _PARAMS


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

        witness = os.path.join(tmp, "home", "heads", "bench.head")
        extra = {**SIGNED, **({"witness": witness} if WITNESSED else {})}

        def ours() -> None:
            path = os.path.join(tmp, "ours.jsonl")
            _clear(tmp, "ours.jsonl", witness)
            with EventLog(path, quest_id="bench", actor="bench", policy="always", **extra) as log:  # type: ignore[arg-type]
                for event in events:
                    log.append(event)

        start = 4096  # the steady state: no past head is due among these heads
        heads = [(start + i, line_hash(line[:-1])) for i, line in enumerate(lines, start=1)]

        def anchor_only() -> float:
            from ds_events.log.anchor import HeadAnchor

            path = os.path.join(tmp, "anchor.jsonl")
            _clear(tmp, "anchor.jsonl", witness)
            with open(path, "wb") as f:
                f.writelines(lines)
            fd = os.open(path, os.O_RDONLY)
            anchor = HeadAnchor(path, SIGNED.get("key"), **({"witness": witness} if WITNESSED else {}))  # type: ignore[arg-type]
            try:
                anchor.write(start, heads[0][1], fd)  # the file exists and names an earlier head
                return timed(lambda: [anchor.write(seq, h, fd) for seq, h in heads])
            finally:
                anchor.close()
                os.close(fd)

        times = run_rounds(
            {"raw": lambda: timed(raw), "ours": lambda: timed(ours), "anchor": anchor_only}, args.rounds
        )
    raw_rates = [n / t for t in times["raw"]]
    our_rates = [n / t for t in times["ours"]]
    per_round = ratios(our_rates, raw_rates)
    print(f"{n} appends per round, {args.rounds} rounds, interleaved")
    print(f"raw os.write + os.fdatasync: {spread(raw_rates, '{:,.0f}', ' appends/s')}")
    print(f"EventLog.append (always): {spread(our_rates, '{:,.0f}', ' appends/s')}")
    print(f"ratio ours/raw: {spread(per_round, '{:.2f}', 'x')} ({verdict(per_round, 0.7)})")
    anchor_us = [t / n * 1e6 for t in times["anchor"]]
    share = ratios(times["anchor"], times["raw"])
    what = "signed" + (", with the home's witness" if WITNESSED else "") if SIGNED else "unsigned"
    print(f"head anchor update alone ({what}): {spread(anchor_us, '{:.1f}', ' us/append')}")
    print(f"head anchor update / raw durable write: {spread([100 * r for r in share], '{:.2f}', '%')}")


def _clear(tmp: str, prefix: str, witness: str) -> None:
    """Remove the files of an earlier round (the log's and the witness)."""
    for name in os.listdir(tmp):
        if name.startswith(prefix):
            os.remove(os.path.join(tmp, name))
    if os.path.exists(witness):
        os.remove(witness)


if __name__ == "__main__":
    main()
