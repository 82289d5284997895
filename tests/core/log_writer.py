"""A writer process for the multi-process and crash tests (not a test module).

Usage: python log_writer.py TARGET NAME COUNT POLICY [BATCH] [PAD]
TARGET is a log file's path, or ``pg:QUEST:DSN`` for quest QUEST of the PostgreSQL store
at DSN (:func:`open_target`). Appends COUNT messages (in batches of BATCH) and prints
"seq id" of every event whose append returned, flushing after each, so a parent that
kills it knows exactly which events were acknowledged.

POLICY ``group-async`` appends from 8 asyncio tasks at once through ``append_async``
with the ``group`` policy (task k's messages read ``NAME-k-i``); ``txn`` appends from
one thread inside ``transaction()`` blocks of three ``txn.append`` calls each (a kill
lands inside a held transaction); ``claim`` claims ``claim-0`` ... ``claim-(COUNT-1)``
each in a transaction that appends the claim only if no process has made it (printing
only the claims it made); ``ids`` appends events whose ids are ``NAME-i`` (so running
it again is a retry); the others append from one thread through ``append`` (messages
read ``NAME-i``). The PostgreSQL store has no policy of its own:
there POLICY only chooses among these ways of appending.
"""

from __future__ import annotations

import asyncio
import sys

from ds_events.events import ConversationMessage
from ds_events.log import EventLog
from ds_events.store import EventStore

ASYNC_TASKS = 8


def open_target(target: str, actor: str = "", policy: str = "group") -> EventStore:
    """The store TARGET names: ``pg:QUEST:DSN`` or a log file's path."""
    if target.startswith("pg:"):
        from ds_events.log.postgres import PostgresStore

        _, quest_id, dsn = target.split(":", 2)
        return PostgresStore(dsn, quest_id=quest_id, actor=actor)
    file_policy = {"group-async": "group", "txn": "group", "claim": "group", "ids": "group"}.get(policy, policy)
    return EventLog(target, quest_id="q", actor=actor, policy=file_policy)  # type: ignore[arg-type]


def main() -> None:
    target, name, count, policy = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    # A long payload makes a kill during write() more likely to tear a line.
    pad = "x" * (int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    if policy == "group-async":
        asyncio.run(_append_async(target, name, count, batch, pad))
        return
    out = sys.stdout
    log = open_target(target, name, policy)
    try:
        i = 0
        print("ready", flush=True)
        while i < count:
            if policy == "claim":
                key = f"claim-{i}"
                with log.transaction() as txn:
                    if not any(e.content == key for e in log.read(types=["conversation.message"])):  # type: ignore[attr-defined]
                        _acknowledge(out, [txn.append(ConversationMessage(role="user", content=key))])
                i += 1
                continue
            if policy == "txn":
                with log.transaction() as txn:
                    for _ in range(3):
                        events = _messages(name, i, min(batch, count - i), pad)
                        if not events:
                            break
                        _acknowledge(out, txn.append(events))
                        i += len(events)
                continue
            events = _messages(name, i, min(batch, count - i), pad, ids=policy == "ids")
            _acknowledge(out, log.append(events))  # type: ignore[arg-type]
            i += len(events)
    finally:
        log.close()


def _messages(name: str, start: int, n: int, pad: str, *, ids: bool = False) -> list[ConversationMessage]:
    return [
        ConversationMessage(role="user", content=f"{name}-{start + k}{pad}", id=f"{name}-{start + k}" if ids else "")
        for k in range(n)
    ]


def _acknowledge(out, stored) -> None:  # type: ignore[no-untyped-def]
    for event in stored:
        out.write(f"{event.seq} {event.id}\n")
    out.flush()


async def _append_async(target: str, name: str, count: int, batch: int, pad: str) -> None:
    out = sys.stdout
    log = open_target(target, name, "group-async")
    try:

        async def task(k: int) -> None:
            i = 0
            mine = count // ASYNC_TASKS + (k < count % ASYNC_TASKS)
            while i < mine:
                n = min(batch, mine - i)
                events = [ConversationMessage(role="user", content=f"{name}-{k}-{i + j}{pad}") for j in range(n)]
                _acknowledge(out, await log.append_async(events))
                i += n

        print("ready", flush=True)
        await asyncio.gather(*(task(k) for k in range(ASYNC_TASKS)))
    finally:
        log.close()


if __name__ == "__main__":
    main()
