"""Group commit: appends are acknowledged only once a sync covers them, syncs pipeline
with writes, a failed sync stops acknowledgements, and the loop never waits on the lock.

``os.fdatasync`` is wrapped (the real call still runs) to see what each sync covered:
the file size when it started. An append is durable once a sync that started after its
last byte was written has returned.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading

import pytest

from ds_events.events import ConversationMessage, Event
from ds_events.log import EventLog, LogError
from ds_events.verify import verify_log


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


class SyncRecorder:
    """Wraps ``os.fdatasync``: records the size each sync covered; can hold or fail one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
        self.path = path
        self.real = os.fdatasync
        self.covered: list[int] = []  # sizes covered by syncs that returned, in order
        self.acked: list[tuple[int, int]] = []  # (seq, durable size when its append returned)
        self.calls = 0
        self.hold_first = False
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_call: int | None = None
        self.lock = threading.Lock()
        monkeypatch.setattr(os, "fdatasync", self)

    def __call__(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        with self.lock:
            self.calls += 1
            call = self.calls
        if call == 1 and self.hold_first:
            self.started.set()
            assert self.release.wait(30), "the test never released the held sync"
        if call == self.fail_call:
            raise OSError(errno.EIO, "simulated I/O error")
        self.real(fd)
        with self.lock:
            self.covered.append(size)

    def durable_size(self) -> int:
        with self.lock:
            return max(self.covered, default=0)

    def ack(self, *events: Event) -> None:
        """Note that the appends of ``events`` returned now (from any thread)."""
        with self.lock:
            durable = max(self.covered, default=0)
            self.acked.extend((e.seq, durable) for e in events)

    def late_acks(self) -> list[tuple[int, int, int]]:
        """(seq, durable size, end of its line) of each append acknowledged too early."""
        ends = end_offsets(self.path)
        return [(seq, durable, ends[seq]) for seq, durable in self.acked if durable < ends[seq]]


class HeldLock:
    """Another handle holds the append lock (a transaction) in its own thread, having
    appended ``append`` inside, until :meth:`release`. ``released_in_time`` records
    whether it was released before ``timeout`` or gave up waiting."""

    def __init__(self, other: EventLog, *append: ConversationMessage, timeout: float = 30) -> None:
        self.inside, self._release = threading.Event(), threading.Event()
        self.released_in_time: list[bool] = []

        def hold() -> None:
            with other.transaction() as txn:
                if append:
                    txn.append(list(append))
                self.inside.set()
                self.released_in_time.append(self._release.wait(timeout))

        self._thread = threading.Thread(target=hold)
        self._thread.start()
        assert self.inside.wait(30), "the other handle never took the lock"

    def release(self) -> None:
        self._release.set()
        self._thread.join(30)


def end_offsets(path: str) -> dict[int, int]:
    """seq -> byte offset just after its line."""
    ends, offset = {}, 0
    with open(path, "rb") as f:
        for seq, line in enumerate(f, start=1):
            offset += len(line)
            ends[seq] = offset
    return ends


async def test_an_async_append_returns_only_after_a_sync_that_covers_it(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        syncs = SyncRecorder(monkeypatch, path)

        async def appender(k: int) -> None:
            for i in range(40):
                syncs.ack(*await log.append_async([msg(k * 100 + i)] * (1 + i % 3)))

        await asyncio.gather(*(appender(k) for k in range(16)))
    assert len(syncs.acked) == len(end_offsets(path))
    late = syncs.late_acks()
    assert not late, f"acknowledged before a sync covered them: {late[:3]}"
    assert syncs.calls < len(syncs.acked) / 4  # appends really shared syncs
    assert verify_log(path).ok


def test_a_threaded_append_returns_only_after_a_sync_that_covers_it(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        syncs = SyncRecorder(monkeypatch, path)

        def appender(k: int) -> None:
            for i in range(40):
                syncs.ack(log.append(msg(k * 100 + i)))

        threads = [threading.Thread(target=appender, args=(k,)) for k in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(seq for seq, _ in syncs.acked) == list(range(1, 481))
    assert not syncs.late_acks()
    assert verify_log(path).ok


async def test_the_next_group_is_written_while_the_last_one_syncs(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    loop = asyncio.get_running_loop()
    with EventLog(path, policy="group") as log:
        syncs = SyncRecorder(monkeypatch, path)
        syncs.hold_first = True
        first = asyncio.ensure_future(log.append_async(msg(1)))
        assert await loop.run_in_executor(None, syncs.started.wait, 30)
        size_in_first_sync = os.path.getsize(path)

        second = asyncio.ensure_future(log.append_async(msg(2)))
        for _ in range(10_000):  # let the flusher run; the held sync blocks nothing here
            await asyncio.sleep(0)
            if os.path.getsize(path) > size_in_first_sync:
                break
        # msg 2 was written while msg 1's sync was still in flight, and neither returned.
        assert os.path.getsize(path) > size_in_first_sync
        assert not first.done() and not second.done()

        syncs.release.set()
        one, two = await first, await second
    assert (one.seq, two.seq) == (1, 2)
    assert syncs.calls == 2 and syncs.covered == [size_in_first_sync, os.path.getsize(path)]
    assert verify_log(path).ok


async def test_a_failed_sync_fails_its_appends_and_every_later_one(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        log.append(msg(0))
        syncs = SyncRecorder(monkeypatch, path)
        syncs.fail_call = 1
        results = await asyncio.gather(*(log.append_async(msg(i)) for i in range(1, 5)), return_exceptions=True)
        assert all(isinstance(r, LogError) and "sync failed" in str(r) for r in results)
        with pytest.raises(LogError, match="earlier sync failed"):
            await log.append_async(msg(5))
        with pytest.raises(LogError, match="earlier sync failed"):
            log.append(msg(6))
        with pytest.raises(LogError, match="earlier sync failed"):
            with log.transaction():
                pass
    # What was written is still a well-formed log; a new handle appends again.
    assert verify_log(path).ok
    with EventLog(path, policy="group") as again:
        assert again.last_seq == 5
        assert (await again.append_async(msg(7))).seq == 6


async def test_the_loop_keeps_running_while_another_appender_holds_the_lock(tmp_path):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log, EventLog(path, policy="group") as other:
        log.append(msg(0))
        # Only the loop lets go of the lock: if the append blocked the loop on the
        # lock, the holder times out instead.
        held = HeldLock(other, msg(1), timeout=10)
        pending = asyncio.ensure_future(log.append_async(msg(2)))
        for _ in range(200):  # the loop turns while the append waits for the lock
            await asyncio.sleep(0)
        assert not pending.done()
        held.release()
        stored = await pending
    assert held.released_in_time == [True]
    assert stored.seq == 3  # caught up with the other handle's append first
    assert verify_log(path).ok


async def test_async_appends_under_policy_never_write_without_syncing(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="never") as log:
        syncs = SyncRecorder(monkeypatch, path)
        stored = await asyncio.gather(*(log.append_async(msg(i)) for i in range(50)))
    assert sorted(e.seq for e in stored) == list(range(1, 51))
    assert syncs.calls == 0
    assert verify_log(path).ok


async def test_a_burst_larger_than_one_group_is_split_and_keeps_each_append_whole(tmp_path):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        batches = await asyncio.gather(*(log.append_async([msg(k * 1000 + i) for i in range(100)]) for k in range(12)))
    for stored in batches:
        seqs = [e.seq for e in stored]
        assert seqs == list(range(seqs[0], seqs[0] + 100))  # one append stays contiguous
    assert sorted(e.seq for b in batches for e in b) == list(range(1, 1201))
    assert verify_log(path).ok


def test_one_log_serves_successive_event_loops_and_close_ends_its_sync_thread(tmp_path):
    path = str(tmp_path / "events.jsonl")
    log = EventLog(path, policy="group")

    async def burst(base: int) -> list[int]:
        stored = await asyncio.gather(*(log.append_async(msg(base + i)) for i in range(20)))
        return [e.seq for e in stored]

    first = asyncio.run(burst(0))
    second = asyncio.run(burst(100))  # a new loop: acknowledgements go to it, not the closed one
    assert sorted(first + second) == list(range(1, 41))
    # This log's own sync thread (named by its path): a log another test in this worker
    # process left open keeps its own (seen under xdist with two CPU hogs).
    own = f"ds-log-sync {path}"
    assert any(t.name == own for t in threading.enumerate())
    log.close()
    assert not any(t.name == own and t.is_alive() for t in threading.enumerate())
    with pytest.raises(LogError, match="closed"):
        log.append(msg(99))
    assert verify_log(path).ok


async def test_appends_in_flight_when_the_log_closes_are_acknowledged_or_refused(tmp_path):
    path = str(tmp_path / "events.jsonl")
    log = EventLog(path, policy="group")
    await log.append_async(msg(0))  # the sync thread is running
    size = os.path.getsize(path)
    written = [asyncio.ensure_future(log.append_async(msg(i))) for i in range(1, 30)]
    for _ in range(1000):  # until the flusher has written them (not yet synced)
        await asyncio.sleep(0)
        if os.path.getsize(path) > size:
            break
    assert os.path.getsize(path) > size
    queued = [asyncio.ensure_future(log.append_async(msg(i))) for i in range(30, 35)]
    log.close()  # syncs and acknowledges what was written; what was only queued is refused
    stored = await asyncio.gather(*written)
    refused = await asyncio.gather(*queued, return_exceptions=True)
    assert sorted(e.seq for e in stored) == list(range(2, 31))
    assert all(isinstance(r, LogError) and "closed" in str(r) for r in refused)
    with EventLog(path) as again:
        assert [e.seq for e in again.read()] == list(range(1, 31))
    assert verify_log(path).ok


async def test_async_appends_with_preset_ids_are_idempotent_within_and_across_groups(tmp_path):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        await log.append_async([msg(i) for i in range(100)])  # ids unknown to the handle yet
        retry = ConversationMessage(role="user", content="once", id="0" * 32)
        first, again = await asyncio.gather(log.append_async(retry), log.append_async(retry))
        later = await log.append_async(retry)
        assert first.seq == again.seq == later.seq == 101
        assert log.last_seq == 101
    assert verify_log(path).ok
