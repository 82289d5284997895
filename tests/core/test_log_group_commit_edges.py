"""EventLog group commit at its edges: failed syncs, retries, close, several event
loops, interrupted waiters, repair under a sync in flight.

Each of these was a real bug found in review (the comment above each test says what
used to happen). ``os.fdatasync`` is wrapped (the real call still runs) as in
test_log_group_commit.py. Every wait is bounded so that a hang shows up as a failure,
not a stuck run.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading

import pytest

from ds_events.events import ConversationMessage
from ds_events.log import EventLog, LogError
from ds_events.verify import verify_log
from tests.helpers import wait_until

from .test_log_group_commit import HeldLock, SyncRecorder, end_offsets, msg

# One test closes a loop whose flusher task never started; Python reports the coroutine
# when it is collected, which may happen during a later test.
pytestmark = pytest.mark.filterwarnings("ignore:coroutine 'AsyncGroupCommit._flush' was never awaited")


class FailFirstSync:
    """Wraps ``os.fdatasync``: holds the first call until released, then fails it (EIO).

    Later calls wait until the first one has failed, then run the real sync: they
    model a sync that starts after the failure and (as on Linux, where the error is
    reported once per file) succeeds.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.real = os.fdatasync
        self.calls = 0
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.release = threading.Event()
        self.failed = threading.Event()
        monkeypatch.setattr(os, "fdatasync", self)

    def __call__(self, fd: int) -> None:
        with self.lock:
            self.calls += 1
            call = self.calls
        if call == 1:
            self.started.set()
            assert self.release.wait(30), "the test never released the held sync"
            self.failed.set()
            raise OSError(errno.EIO, "simulated I/O error")
        assert self.failed.wait(30), "the first sync never failed"
        self.real(fd)


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


# -- a failed sync must stop acknowledgements ------------------------------------------


async def test_an_async_group_written_during_a_failed_sync_is_not_acknowledged(tmp_path, monkeypatch):
    # Was a bug (review): group 2 is written while the sync covering group 1 is in flight; that sync fails.
    # The sync thread then syncs again (which succeeds: the error was already reported)
    # and acknowledges group 2, although group 1's pages, which precede it, may be lost.
    path = str(tmp_path / "events.jsonl")
    loop = asyncio.get_running_loop()
    with EventLog(path, policy="group") as log:
        log.append(msg(0))
        syncs = FailFirstSync(monkeypatch)
        first = asyncio.ensure_future(log.append_async(msg(1)))
        assert await loop.run_in_executor(None, syncs.started.wait, 30)
        size = os.path.getsize(path)
        second = asyncio.ensure_future(log.append_async(msg(2)))
        for _ in range(10_000):
            await asyncio.sleep(0)
            if os.path.getsize(path) > size:
                break
        assert os.path.getsize(path) > size  # group 2 is written, not yet synced
        syncs.release.set()
        results = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), 30)
    assert isinstance(results[0], LogError)
    assert isinstance(results[1], LogError), f"acknowledged after an earlier sync failed: {results[1]!r}"


def test_a_threaded_group_synced_after_a_failed_sync_is_not_acknowledged(tmp_path, monkeypatch):
    # Was a bug (review): the same for threads: leader A hands the lead on and syncs (fails); B, already past
    # the usable check, writes and syncs after A's failure, and returns success.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        log.append(msg(0))
        syncs = FailFirstSync(monkeypatch)
        outcome: dict[str, object] = {}

        def append(name: str, i: int) -> None:
            try:
                outcome[name] = log.append(msg(i))
            except BaseException as exc:
                outcome[name] = exc

        a = threading.Thread(target=append, args=("a", 1))
        a.start()
        assert syncs.started.wait(30)
        size = os.path.getsize(path)
        b = threading.Thread(target=append, args=("b", 2))
        b.start()
        wait_until(lambda: os.path.getsize(path) > size)  # B wrote while A's sync is in flight
        syncs.release.set()
        a.join(30)
        b.join(30)
    assert isinstance(outcome["a"], LogError)
    assert isinstance(outcome["b"], LogError), f"acknowledged after an earlier sync failed: {outcome['b']!r}"


# -- an idempotent retry must not return before the stored event is durable -------------


@pytest.mark.parametrize("policy", ["group", "always"])
def test_a_duplicate_append_returns_only_once_the_original_is_durable(tmp_path, monkeypatch, policy):
    # Was a bug (review): A's append is written and its sync is in flight. B retries the same id: the
    # batch is all duplicates, so nothing is written, so nothing is synced, and B
    # returns the stored event although no sync covering it has returned.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy=policy) as log:
        syncs = SyncRecorder(monkeypatch, path)
        syncs.hold_first = True
        event = ConversationMessage(role="user", content="once", id="1" * 32)
        a = threading.Thread(target=log.append, args=(event,))
        a.start()
        assert syncs.started.wait(30)
        returned: list[tuple[int, int]] = []  # (seq, durable size when B returned)
        b_done = threading.Event()

        def retry() -> None:
            stored = log.append(event)
            returned.append((stored.seq, syncs.durable_size()))
            b_done.set()

        b = threading.Thread(target=retry)
        b.start()
        b_done.wait(1)  # a correct B waits for A's sync (or syncs itself); a wrong one returns at once
        syncs.release.set()
        a.join(30)
        b.join(30)
    [(seq, durable)] = returned
    assert seq == 1
    assert durable >= end_offsets(path)[1], "the retry was acknowledged before a sync covered the event"


# -- idempotency map ---------------------------------------------------------------------


def test_ids_assigned_in_the_batch_that_first_builds_the_id_map_are_remembered(tmp_path):
    # Was a bug (review): the first preset id on a fresh handle builds the id map from the file; the ids
    # generated for the other events of that same batch are never added to it, so
    # re-appending one of them (with its stored id) appends it a second time.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="never") as log:
        plain, _preset = log.append([msg(1), ConversationMessage(role="user", content="x", id="2" * 32)])
        again = log.append(ConversationMessage(role="user", content="retry", id=plain.id))
        assert again.seq == plain.seq == 1, f"re-appended as seq {again.seq}"
        assert log.last_seq == 2
    assert verify_log(path).ok


# -- close --------------------------------------------------------------------------------


def test_a_constructor_that_raises_does_not_leak_its_descriptors(tmp_path):
    path = tmp_path / "events.jsonl"
    with EventLog(path, policy="never") as log:
        log.append(msg(1))
    with open(path, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":2')  # torn tail
    before = open_fds()
    with pytest.raises(LogError, match="torn"):
        EventLog(path, recover=False)
    assert open_fds() == before


async def test_close_while_the_flusher_waits_on_an_executor_write_acknowledges_or_refuses(tmp_path):
    # Was a bug (review): the lock is busy, so the flusher writes in the executor. close() runs after that
    # write, before the flusher resumes: the flusher then hands the group to the
    # stopped sync thread (os.write on a closed pipe fd -> OSError escapes the
    # flusher) and the appender is never resolved.
    path = str(tmp_path / "events.jsonl")
    log = EventLog(path, policy="group")
    other = EventLog(path, policy="group")
    held: HeldLock | None = None
    pending: asyncio.Future[object] | None = None
    try:
        await log.append_async(msg(0))  # the sync thread is running
        held = HeldLock(other)
        size = os.path.getsize(path)
        pending = asyncio.ensure_future(log.append_async(msg(1)))
        for _ in range(200):  # the flusher is now waiting on the executor
            await asyncio.sleep(0)
        held.release()
        # Block the loop (no await) until the executor wrote, then close.
        wait_until(lambda: os.path.getsize(path) > size)
        log.close()
        done, _ = await asyncio.wait({pending}, timeout=5)
        assert done, "the append in flight at close() was neither acknowledged nor refused"
        exc = pending.exception()
        assert exc is None or isinstance(exc, LogError), f"{exc!r}"
    finally:
        if held is not None:
            held.release()
        if pending is not None:  # leave no pending task behind for GC to report later
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
        log.close()
        other.close()


# -- one log, several event loops ---------------------------------------------------------


def test_an_append_cancelled_with_its_loop_is_not_written_by_a_later_loop(tmp_path):
    # Was a bug (review): asyncio.run cancels the appender and the not-yet-started flusher; the append
    # stays in the log's pending list and is written by the next loop's flusher.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:

        async def fire_and_forget() -> None:
            asyncio.ensure_future(log.append_async(  # noqa: RUF006 - abandoned on purpose
                ConversationMessage(role="user", content="cancelled")))

        asyncio.run(fire_and_forget())
        asyncio.run(log.append_async(ConversationMessage(role="user", content="later")))
        contents = [e.content for e in log.read()]
    assert contents == ["later"], contents


def test_a_loop_closed_with_its_flusher_pending_does_not_wedge_later_loops(tmp_path):
    # Was a bug (review): the first loop stops before its flusher task ran and is closed; that task is
    # never done, so no later loop ever starts a flusher and its appends never return.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:

        async def fire_and_forget() -> None:
            asyncio.ensure_future(log.append_async(  # noqa: RUF006 - abandoned on purpose
                msg(1)))

        first = asyncio.new_event_loop()
        first.run_until_complete(fire_and_forget())
        first.close()

        async def bounded() -> object:
            return await asyncio.wait_for(log.append_async(msg(2)), 5)

        try:
            stored = asyncio.run(bounded())
        except TimeoutError:
            pytest.fail("an append on a new loop never returned")
        assert stored.seq >= 1


# (Two loops in two threads, and a follower interrupted by a signal: see test_log_group.py,
# which tests them through group commit's own interface.)


# -- behaviour verified correct (pinned; not covered by the other log tests) --------------


async def test_threads_and_asyncio_appending_to_one_log_are_each_acknowledged_after_a_covering_sync(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        syncs = SyncRecorder(monkeypatch, path)

        def threaded(k: int) -> None:
            for i in range(30):
                syncs.ack(log.append(msg(k * 100 + i)))

        async def asynced(k: int) -> None:
            for i in range(30):
                syncs.ack(await log.append_async(msg(k * 100 + i)))

        threads = [threading.Thread(target=threaded, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        await asyncio.gather(*(asynced(k) for k in range(4, 12)))
        for t in threads:
            t.join(60)
    assert sorted(seq for seq, _ in syncs.acked) == list(range(1, 361))
    assert not syncs.late_acks()
    assert verify_log(path).ok


def test_a_loop_closed_while_its_sync_is_in_flight_leaves_the_sync_thread_serving_later_loops(tmp_path, monkeypatch):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        syncs = SyncRecorder(monkeypatch, path)
        syncs.hold_first = True

        async def abandon() -> None:
            asyncio.ensure_future(log.append_async(  # noqa: RUF006 - abandoned on purpose
                msg(1)))
            # Return (cancelling the appender, closing the loop) with its sync in flight.
            assert await asyncio.get_running_loop().run_in_executor(None, syncs.started.wait, 30)

        asyncio.run(abandon())
        syncs.release.set()  # the sync thread now acknowledges to a closed loop

        async def bounded() -> object:
            return await asyncio.wait_for(log.append_async(msg(2)), 5)

        stored = asyncio.run(bounded())
        assert stored.seq == 2
        assert syncs.calls == 2
        assert any(t.name.startswith("ds-log-sync") and t.is_alive() for t in threading.enumerate())
    assert verify_log(path).ok


async def test_a_repair_while_a_pipelined_sync_is_in_flight_keeps_the_old_descriptor_for_it(tmp_path, monkeypatch):
    from ds_events.verify import repair_log

    path = tmp_path / "events.jsonl"
    loop = asyncio.get_running_loop()
    with EventLog(path, quest_id="q", policy="group") as log:
        log.append([msg(i) for i in range(5)])
        syncs = SyncRecorder(monkeypatch, str(path))
        syncs.hold_first = True
        first = asyncio.ensure_future(log.append_async(msg(5)))  # seq 6; its sync is held
        assert await loop.run_in_executor(None, syncs.started.wait, 30)
        lines = path.read_bytes().split(b"\n")[:-1]
        del lines[2]
        path.write_bytes(b"\n".join(lines) + b"\n")
        await loop.run_in_executor(None, lambda: repair_log(str(path), quest_id="q"))  # replaces the file
        second = asyncio.ensure_future(log.append_async(msg(6)))  # reopens the new file first
        for _ in range(10_000):
            await asyncio.sleep(0)
            if second.done() or b'"m6"' in path.read_bytes():
                break
        syncs.release.set()  # the held sync still runs on the old (retired, still open) fd
        one, two = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert one.seq == 6
    # Repair keeps seqs 1, 4, 5: seq 2 is unvouched (the line after it was deleted), and
    # so is seq 6, written but not yet synced, so no head anchor names it yet (repair
    # quarantines it and says so). 3 kept + log.repaired + this one.
    assert two.seq == 5
    assert verify_log(str(path)).ok


# -- the append lock is re-entrant in its owner --------------------------------------------


def test_an_append_inside_a_transaction_keeps_the_lock_until_the_transaction_ends(tmp_path):
    import fcntl

    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        probe = os.open(path + ".lock", os.O_RDWR)  # another open file: as another process
        try:
            with log.transaction() as txn:
                txn.append(msg(1))
                log.append(msg(2))  # a plain append from inside (it used to drop the flock)
                with pytest.raises(BlockingIOError):
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                txn.append(msg(3))
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once it ended
            fcntl.flock(probe, fcntl.LOCK_UN)
        finally:
            os.close(probe)
        assert [e.content for e in log.read()] == ["m1", "m2", "m3"]
    assert verify_log(path).ok


async def test_an_async_append_waits_for_a_transaction_held_on_the_loop_thread(tmp_path):
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, policy="group") as log:
        with log.transaction() as txn:
            txn.append(msg(1))
            other = asyncio.ensure_future(log.append_async(msg(2)))
            for _ in range(100):  # the flusher runs, but must not write inside our transaction
                await asyncio.sleep(0)
            assert not other.done()
            txn.append(msg(3))
        stored = await asyncio.wait_for(other, 10)
        assert stored.seq == 3
        assert [e.content for e in log.read()] == ["m1", "m3", "m2"]
    assert verify_log(path).ok
