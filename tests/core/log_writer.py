"""A writer process for the multi-process and crash tests (not a test module).

Usage: python log_writer.py LOG_PATH NAME COUNT POLICY [BATCH] [PAD]
Appends COUNT messages (in batches of BATCH) and prints "seq id" of every event whose
append returned, flushing after each, so a parent that kills it knows exactly which
events were acknowledged.

POLICY ``group-async`` appends from 8 asyncio tasks at once through ``append_async``
with the ``group`` policy (task k's messages read ``NAME-k-i``); the others append from
one thread through ``append`` (messages read ``NAME-i``).
"""

from __future__ import annotations

import asyncio
import sys

from ds_events.events import ConversationMessage
from ds_events.log import EventLog

ASYNC_TASKS = 8


def main() -> None:
    path, name, count, policy = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    # A long payload makes a kill during write() more likely to tear a line.
    pad = "x" * (int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    out = sys.stdout
    if policy == "group-async":
        asyncio.run(_append_async(path, name, count, batch, pad))
        return
    with EventLog(path, quest_id="q", actor=name, policy=policy) as log:  # type: ignore[arg-type]
        i = 0
        print("ready", flush=True)
        while i < count:
            events = [ConversationMessage(role="user", content=f"{name}-{i + k}{pad}") for k in range(min(batch, count - i))]
            for event in log.append(events):  # type: ignore[union-attr]
                out.write(f"{event.seq} {event.id}\n")
            out.flush()
            i += len(events)


async def _append_async(path: str, name: str, count: int, batch: int, pad: str) -> None:
    out = sys.stdout
    with EventLog(path, quest_id="q", actor=name, policy="group") as log:

        async def task(k: int) -> None:
            i = 0
            mine = count // ASYNC_TASKS + (k < count % ASYNC_TASKS)
            while i < mine:
                n = min(batch, mine - i)
                events = [ConversationMessage(role="user", content=f"{name}-{k}-{i + j}{pad}") for j in range(n)]
                for event in await log.append_async(events):  # type: ignore[union-attr]
                    out.write(f"{event.seq} {event.id}\n")
                out.flush()
                i += n

        print("ready", flush=True)
        await asyncio.gather(*(task(k) for k in range(ASYNC_TASKS)))


if __name__ == "__main__":
    main()
