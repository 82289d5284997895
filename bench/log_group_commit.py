"""Group commit: 32 concurrent appenders vs single durable appends, same log code."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading

from _util import best_rate, verdict

from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog

APPENDERS = 32
SINGLE_N = 1500
PER_APPENDER = 250


def fresh(tmp: str, name: str, policy: str) -> EventLog:
    path = os.path.join(tmp, name)
    for suffix in ("", ".idx", ".lock"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return EventLog(path, quest_id="bench", actor="bench", policy=policy)  # type: ignore[arg-type]


def event(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"message {i} " + "x" * 100)


def main() -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get('BENCH_DIR')) as tmp:

        def single() -> int:
            with fresh(tmp, "single.jsonl", "always") as log:
                for i in range(SINGLE_N):
                    log.append(event(i))
            return SINGLE_N

        def grouped_async() -> int:
            async def run() -> None:
                with fresh(tmp, "async.jsonl", "group") as log:

                    async def appender(k: int) -> None:
                        for i in range(PER_APPENDER):
                            await log.append_async(event(k * PER_APPENDER + i))

                    await asyncio.gather(*(appender(k) for k in range(APPENDERS)))

            asyncio.run(run())
            return APPENDERS * PER_APPENDER

        def grouped_threads() -> int:
            with fresh(tmp, "threads.jsonl", "group") as log:

                def appender(k: int) -> None:
                    for i in range(PER_APPENDER):
                        log.append(event(k * PER_APPENDER + i))

                threads = [threading.Thread(target=appender, args=(k,)) for k in range(APPENDERS)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            return APPENDERS * PER_APPENDER

        # The disk's own ceiling: the bytes our log writes, 32 lines per write, one fsync each.
        with fresh(tmp, "ref.jsonl", "never") as ref:
            stored = ref.append([event(i) for i in range(APPENDERS * PER_APPENDER)])
        lines = [encode(e) + b"\n" for e in stored]  # type: ignore[union-attr]
        groups = [b"".join(lines[i : i + APPENDERS]) for i in range(0, len(lines), APPENDERS)]

        def raw_groups() -> int:
            fd = os.open(os.path.join(tmp, "raw.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
            for group in groups:
                os.write(fd, group)
                os.fsync(fd)
            os.close(fd)
            return len(lines)

        single_rate = async_rate = thread_rate = raw_rate = 0.0
        for _ in range(2):
            raw_rate = max(raw_rate, best_rate(raw_groups, repeats=1))
            single_rate = max(single_rate, best_rate(single, repeats=1))
            async_rate = max(async_rate, best_rate(grouped_async, repeats=1))
            thread_rate = max(thread_rate, best_rate(grouped_threads, repeats=1))
    print(f"single durable appends (always): {single_rate:,.0f} events/s")
    print(f"raw os.write of {APPENDERS} lines + os.fsync (the disk's ceiling for groups of {APPENDERS}): "
          f"{raw_rate:,.0f} events/s = {raw_rate / single_rate:.1f}x single appends")
    print(f"{APPENDERS} asyncio appenders, group commit: {async_rate:,.0f} events/s "
          f"-> {async_rate / single_rate:.1f}x ({verdict(async_rate / single_rate, 20)}); "
          f"{async_rate / raw_rate:.2f}x of the raw group ceiling")
    print(f"{APPENDERS} threads, group commit: {thread_rate:,.0f} events/s "
          f"-> {thread_rate / single_rate:.1f}x ({verdict(thread_rate / single_rate, 20)})")


if __name__ == "__main__":
    main()
