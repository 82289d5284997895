"""Replay through the status projection vs plain typed msgspec decoding of the same file.

Median of >= 10 interleaved rounds with spread; the ratio is computed per round.

Usage: python3 bench/log_replay.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

import _util  # noqa: F401 - puts the repository on sys.path
import msgspec
from _rounds import ROUNDS, ratios, run_rounds, spread, timed, verdict

from ds_events.events import AnyEvent, ConversationMessage, QuestAnchorChanged, QuestControl, QuestCreated
from ds_events.log import EventLog
from ds_events.views import Views
from projections.status import PROJECTION as STATUS

N = 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "events.jsonl")
        with EventLog(path, quest_id="bench", actor="bench", policy="never") as log:
            log.append(QuestCreated(title="bench"))
            batch = []
            for i in range(N - 1):
                if i % 50 == 0:
                    batch.append(QuestAnchorChanged(anchor="experiment"))
                elif i % 97 == 0:
                    batch.append(QuestControl(action="pause"))
                else:
                    batch.append(ConversationMessage(role="user" if i % 2 else "assistant", content=f"message {i} about the run"))
                if len(batch) == 10_000:
                    log.append(batch)
                    batch = []
            log.append(batch)
        size = os.path.getsize(path)

        decoder = msgspec.json.Decoder(AnyEvent)

        def plain() -> None:
            with open(path, "rb") as f:
                for line in f:
                    decoder.decode(line)

        def replay() -> None:
            with EventLog(path, quest_id="bench") as log:
                views = Views(log, tmp, [STATUS])
                views.catch_up(keep=False)
                assert views.state("status").last_seq == N

        times = run_rounds({"plain": lambda: timed(plain), "replay": lambda: timed(replay)}, args.rounds)

        # Starting from a snapshot (state + seq) instead of folding the whole log.
        with EventLog(path, quest_id="bench") as log:
            Views(log, tmp, [STATUS]).load(use_snapshots=False).save_snapshots()

        def from_snapshot() -> None:
            with EventLog(path, quest_id="bench") as log:
                views = Views(log, tmp, [STATUS]).load()
                assert views.applied == 0 and views.state("status").last_seq == N

        snap = run_rounds({"snap": lambda: timed(from_snapshot)}, args.rounds)["snap"]
    plain_rates = [N / t for t in times["plain"]]
    replay_rates = [N / t for t in times["replay"]]
    per_round = ratios(replay_rates, plain_rates)
    print(f"log: {N:,} events, {size / 1e6:.1f} MB; {args.rounds} rounds, interleaved; median (spread)")
    print(f"plain typed msgspec decode: {spread(plain_rates, '{:,.0f}', ' events/s')}")
    print(f"replay through the status projection: {spread(replay_rates, '{:,.0f}', ' events/s')}")
    print(f"ratio replay/plain: {spread(per_round, '{:.2f}', 'x')} ({verdict(per_round, 0.3)})")
    t_replay = statistics.median(times["replay"])
    print(f"opening the views from a snapshot: {spread([t * 1e3 for t in snap], '{:.1f}', ' ms')} "
          f"vs {t_replay * 1e3:.0f} ms folding the log ({t_replay / statistics.median(snap):.0f}x faster)")


if __name__ == "__main__":
    main()
