"""Replay through the status projection vs plain typed msgspec decoding of the same file."""

from __future__ import annotations

import os
import tempfile
import typing

import msgspec
from _util import median_seconds, verdict

from ds_events.events import ALL_EVENT_TYPES, ConversationMessage, QuestAnchorChanged, QuestControl, QuestCreated
from ds_events.log import EventLog
from ds_events.views import Views
from projections.status import PROJECTION as STATUS

N = 200_000


def main() -> None:
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

        decoder = msgspec.json.Decoder(typing.Union[ALL_EVENT_TYPES])  # type: ignore[valid-type]

        def plain() -> None:
            with open(path, "rb") as f:
                for line in f:
                    decoder.decode(line)

        def replay() -> None:
            with EventLog(path, quest_id="bench") as log:
                views = Views(log, tmp, [STATUS])
                views.catch_up(keep=False)
                assert views.state("status").last_seq == N

        t_plain = median_seconds(plain, 3)
        t_replay = median_seconds(replay, 3)

        # Starting from a snapshot (state + seq) instead of folding the whole log.
        with EventLog(path, quest_id="bench") as log:
            Views(log, tmp, [STATUS]).load(use_snapshots=False).save_snapshots()

        def from_snapshot() -> None:
            with EventLog(path, quest_id="bench") as log:
                views = Views(log, tmp, [STATUS]).load()
                assert views.applied == 0 and views.state("status").last_seq == N

        t_snap = median_seconds(from_snapshot, 5)
    ratio = t_plain / t_replay
    print(f"log: {N:,} events, {size / 1e6:.1f} MB")
    print(f"plain typed msgspec decode: {N / t_plain:,.0f} events/s")
    print(f"replay through the status projection: {N / t_replay:,.0f} events/s")
    print(f"ratio replay/plain: {ratio:.2f}x ({verdict(ratio, 0.3)})")
    print(f"opening the views from a snapshot: {t_snap * 1e3:.1f} ms vs {t_replay * 1e3:.0f} ms folding the log ({t_replay / t_snap:.0f}x faster)")


if __name__ == "__main__":
    main()
