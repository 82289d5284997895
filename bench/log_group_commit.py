"""Group commit: 32 concurrent appenders vs single durable appends, same log code.

Also measured in the same run, to show where a group's time goes and what any
implementation could reach on this disk:

- the disk's ceiling: 32 of our lines per ``os.write`` + ``os.fdatasync``, back to back;
- a log that does no work: 32 asyncio appenders whose "append" hands a ready-made line to
  a flusher that writes the group and has a thread sync it (the same hand-off as ours),
  so it pays only asyncio, the hand-off and the disk;
- our own asyncio path with policy ``never`` (no sync): the CPU an append costs.

Every figure is the median of >= 10 interleaved rounds with its spread (lowest and
highest round); ratios are computed per round.

Usage: python3 bench/log_group_commit.py [--dir DIR] [--rounds N]   (DIR: where the logs
go, e.g. a mount of another disk; default: the system temp directory)
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import statistics
import tempfile
import threading

import _util  # noqa: F401 - puts the repository on sys.path
from _rounds import ROUNDS, ratios, run_rounds, spread, timed, verdict

from ds_events.events import ConversationMessage, encode
from ds_events.log import EventLog

# Appends sign the log's head anchor when the log has a key (every quest does): measure
# that too (an EventLog from before anchors takes no key).
SIGNED = {"key": os.urandom(32)} if "key" in inspect.signature(EventLog).parameters else {}

APPENDERS = 32
SINGLE_N = 300
PER_APPENDER = 100
TOTAL = APPENDERS * PER_APPENDER


def fresh(tmp: str, name: str, policy: str) -> EventLog:
    path = os.path.join(tmp, name)
    for name in os.listdir(tmp):  # the log and its side files (.idx, .lock ...)
        if name.startswith(os.path.basename(path)):
            os.remove(os.path.join(tmp, name))
    return EventLog(path, quest_id="bench", actor="bench", policy=policy, **SIGNED)  # type: ignore[arg-type]


def event(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"message {i} " + "x" * 100)


def single(tmp: str) -> int:
    with fresh(tmp, "single.jsonl", "always") as log:
        for i in range(SINGLE_N):
            log.append(event(i))
    return SINGLE_N


def grouped_async(tmp: str, policy: str = "group") -> int:
    async def run() -> None:
        with fresh(tmp, "async.jsonl", policy) as log:

            async def appender(k: int) -> None:
                for i in range(PER_APPENDER):
                    await log.append_async(event(k * PER_APPENDER + i))

            await asyncio.gather(*(appender(k) for k in range(APPENDERS)))

    asyncio.run(run())
    return TOTAL


def grouped_threads(tmp: str) -> int:
    with fresh(tmp, "threads.jsonl", "group") as log:

        def appender(k: int) -> None:
            for i in range(PER_APPENDER):
                log.append(event(k * PER_APPENDER + i))

        threads = [threading.Thread(target=appender, args=(k,)) for k in range(APPENDERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return TOTAL


def raw_groups(tmp: str, lines: list[bytes]) -> int:
    groups = [b"".join(lines[i : i + APPENDERS]) for i in range(0, len(lines), APPENDERS)]
    fd = os.open(os.path.join(tmp, "raw.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
    for group in groups:
        os.write(fd, group)
        os.fdatasync(fd)
    os.close(fd)
    return len(lines)


def workless_log(tmp: str, line: bytes) -> int:
    """32 asyncio appenders over a 'log' that only writes a ready line and syncs it."""

    async def run() -> None:
        loop = asyncio.get_running_loop()
        fd = os.open(os.path.join(tmp, "workless.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o644)
        wake_r, wake_w = os.pipe()
        queued: list[asyncio.Future[None]] = []
        handed: list[list[asyncio.Future[None]]] = []
        flusher: asyncio.Task[None] | None = None

        def syncer() -> None:
            while os.read(wake_r, 4096) != b"q":
                os.fdatasync(fd)
                loop.call_soon_threadsafe(acknowledge)

        def acknowledge() -> None:
            for fut in handed.pop(0):
                fut.set_result(None)

        async def flush() -> None:
            nonlocal queued
            while queued:
                await asyncio.sleep(0)
                group, queued = queued, []
                os.write(fd, line * len(group))
                handed.append(group)
                os.write(wake_w, b"s")

        async def append(_event: ConversationMessage) -> None:
            nonlocal flusher
            fut = loop.create_future()
            queued.append(fut)
            if flusher is None or flusher.done():
                flusher = loop.create_task(flush())
            await fut

        async def appender(k: int) -> None:
            for i in range(PER_APPENDER):
                await append(event(k * PER_APPENDER + i))

        thread = threading.Thread(target=syncer)
        thread.start()
        await asyncio.gather(*(appender(k) for k in range(APPENDERS)))
        os.write(wake_w, b"q")
        thread.join()
        for fd_ in (fd, wake_r, wake_w):
            os.close(fd_)

    asyncio.run(run())
    return TOTAL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="directory for the logs (default: the system temp directory)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        with fresh(tmp, "ref.jsonl", "never") as ref:
            stored = ref.append([event(i) for i in range(TOTAL)])
        lines = [encode(e) + b"\n" for e in stored]  # type: ignore[union-attr]

        def rate(fn) -> float:  # events/s of one run of fn (which returns its event count)
            count = 0

            def run() -> None:
                nonlocal count
                count = fn()

            seconds = timed(run)
            return count / seconds

        rates = run_rounds(
            {
                "single": lambda: rate(lambda: single(tmp)),
                "raw": lambda: rate(lambda: raw_groups(tmp, lines)),
                "workless": lambda: rate(lambda: workless_log(tmp, lines[0])),
                "cpu": lambda: rate(lambda: grouped_async(tmp, "never")),
                "async": lambda: rate(lambda: grouped_async(tmp)),
                "threads": lambda: rate(lambda: grouped_threads(tmp)),
            },
            args.rounds,
        )

    def per_single(name: str) -> list[float]:
        return ratios(rates[name], rates["single"])

    def med(name: str) -> float:
        return statistics.median(rates[name])

    print(f"logs in: {args.dir or tempfile.gettempdir()}; {args.rounds} rounds, interleaved; median (spread)")
    print(f"single durable appends (always): {spread(rates['single'], '{:,.0f}', ' events/s')}")
    print(f"raw os.write of {APPENDERS} lines + os.fdatasync, back to back (the disk's ceiling): "
          f"{spread(rates['raw'], '{:,.0f}', ' events/s')} = {spread(per_single('raw'), '{:.1f}', 'x')} single appends")
    print(f"a log that does no work (ready lines, same asyncio flusher and sync thread): "
          f"{spread(rates['workless'], '{:,.0f}', ' events/s')} = {spread(per_single('workless'), '{:.1f}', 'x')} single appends")
    print(f"{APPENDERS} asyncio appenders, group commit: {spread(rates['async'], '{:,.0f}', ' events/s')} "
          f"-> {spread(per_single('async'), '{:.1f}', 'x')} ({verdict(per_single('async'), 20)}); "
          f"{spread(ratios(rates['async'], rates['workless']), '{:.2f}', 'x')} of the log that does no work")
    print(f"{APPENDERS} threads, group commit: {spread(rates['threads'], '{:,.0f}', ' events/s')} "
          f"-> {spread(per_single('threads'), '{:.1f}', 'x')} ({verdict(per_single('threads'), 20)})")
    group_ms = APPENDERS / med("async") * 1e3
    sync_ms = APPENDERS / med("raw") * 1e3
    cpu_ms = APPENDERS / med("cpu") * 1e3
    print(f"one group of {APPENDERS} takes {group_ms:.3f} ms (medians): write+sync at the disk's best {sync_ms:.3f} ms, "
          f"CPU on the loop {cpu_ms:.3f} ms ({cpu_ms * 1e3 / APPENDERS:.1f} us/append, measured with policy never), "
          f"the rest ({max(group_ms - sync_ms - cpu_ms, 0):.3f} ms) hand-offs and a slower sync after idle")
    print(f"20x needs a group every {APPENDERS / (20 * med('single')) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
