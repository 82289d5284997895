"""Group commit through its own interface (``ds_events.log.group``), over a real file.

The target is :class:`tests.core.line_file.LineFile`: real writes and syncs, with a gate
that stands for the append lock being held elsewhere. The same machinery under a real
``EventLog`` is tested in test_log_group_commit*.py.
"""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from ds_events.log.group import AsyncGroupCommit, ThreadGroupCommit
from tests.helpers import wait_until

from .line_file import LineFile


@pytest.fixture
def target(tmp_path):
    t = LineFile(str(tmp_path / "lines"))
    yield t
    t.close()


async def test_concurrent_async_appends_share_writes_and_all_land(target):
    group = AsyncGroupCommit(target)
    try:
        stored = await asyncio.gather(*(group.append([f"m{i}"]) for i in range(64)))
    finally:
        group.close()
    assert sorted(s[0][0] for s in stored) == list(range(1, 65))
    assert sorted(target.lines()) == sorted(f"m{i}" for i in range(64))
    assert target.writes < 64  # grouped: fewer writes than appends
    assert target.acks >= 1


async def test_an_async_group_is_bounded_and_keeps_each_append_whole(target):
    group = AsyncGroupCommit(target, group_size=10)
    try:
        await asyncio.gather(*(group.append([f"b{k}-{i}" for i in range(4)]) for k in range(12)))
    finally:
        group.close()
    for written in target.groups:
        assert sum(map(len, written)) <= 10 or len(written) == 1
        assert all(len(batch) == 4 for batch in written)  # an append is never split


def test_threads_queued_behind_a_leader_are_written_as_one_group(target):
    group = ThreadGroupCommit(target)
    target.gate.clear()  # the first leader waits for the "lock"
    results: dict[int, object] = {}

    def append(k: int) -> None:
        results[k] = group.append([f"t{k}"])

    first = threading.Thread(target=append, args=(0,))
    first.start()
    assert target.writing.wait(30)
    assert group.leading and group.queued() == 0  # it took its group, waits on the lock
    others = [threading.Thread(target=append, args=(k,)) for k in range(1, 16)]
    for t in others:
        t.start()
    wait_until(lambda: group.queued() == 15, what="15 appends queued behind the leader")
    target.gate.set()
    for t in [first, *others]:
        t.join(30)
    assert sorted(r[0][1] for r in results.values()) == sorted(f"t{k}" for k in range(16))  # type: ignore[index]
    assert target.writes == 2  # the leader's own group, then everyone queued meanwhile
    assert not group.leading


def test_a_failed_write_fails_every_member_of_its_group_and_the_next_group_proceeds(target):
    group = ThreadGroupCommit(target)
    real_write = target.write
    failures = iter([True])

    def failing_write(batches):
        if next(failures, False):
            raise OSError("simulated write failure")
        return real_write(batches)

    target.write = failing_write  # type: ignore[method-assign]
    with pytest.raises(OSError, match="simulated"):
        group.append(["lost"])
    assert group.append(["kept"]) == [(1, "kept")]
    assert target.lines() == ["kept"]


class Interrupted(Exception):
    pass


def test_a_follower_interrupted_by_a_signal_does_not_wedge_the_group(target):
    # Was a bug (review): the main thread queues behind leader T1 and is interrupted
    # (Ctrl-C, a SIGTERM handler raising). T1 then handed the lead to the dead
    # follower, so no leader ever ran again and every later append waited forever.
    group = ThreadGroupCommit(target)
    target.gate.clear()
    t1 = threading.Thread(target=group.append, args=(["one"],))
    t1.start()
    assert target.writing.wait(30)  # T1 leads, waits on the "lock"

    def raise_interrupted(signum, frame):
        raise Interrupted

    main = threading.get_ident()
    previous = signal.signal(signal.SIGUSR1, raise_interrupted)
    try:
        kicker = threading.Thread(
            target=lambda: wait_until(lambda: group.queued() == 1, 10) and signal.pthread_kill(main, signal.SIGUSR1)
        )
        kicker.start()
        with pytest.raises(Interrupted):
            group.append(["two"])  # a follower of T1, interrupted while it waits
        kicker.join(30)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    target.gate.set()
    t1.join(30)

    later_done = threading.Event()
    t3 = threading.Thread(target=lambda: (group.append(["three"]), later_done.set()), daemon=True)
    t3.start()
    assert later_done.wait(10), "a later append waited forever for a leader that no longer exists"
    assert target.lines() == ["one", "three"]


def test_two_loops_in_two_threads_each_get_their_acknowledgements(target):
    # Was a bug (review): loop 1's flusher is busy (the lock is held elsewhere) when
    # loop 2 appends, so loop 2 started no flusher; loop 1's flusher wrote loop 2's
    # append and resolved its future from loop 1's thread (Future.set_result is not
    # thread-safe): loop 2 was never woken. Each loop has its own queue now.
    group = AsyncGroupCommit(target)
    target.gate.clear()
    loops: dict[str, asyncio.AbstractEventLoop] = {}
    finished = {"one": threading.Event(), "two": threading.Event()}
    outcome: dict[str, object] = {}

    def run(name: str, item: str) -> None:
        async def main() -> None:
            loops[name] = asyncio.get_running_loop()
            try:
                outcome[name] = await group.append([item])
            finally:
                finished[name].set()

        asyncio.run(main())

    one = threading.Thread(target=run, args=("one", "a"), daemon=True)
    one.start()
    assert target.writing.wait(30)  # loop 1's flusher waits on the "lock" in the executor
    two = threading.Thread(target=run, args=("two", "b"), daemon=True)
    two.start()
    wait_until(lambda: "two" in loops and loops["two"] in group.loops(), what="loop 2's append queued")
    target.gate.set()
    try:
        assert finished["one"].wait(30)
        assert finished["two"].wait(10), "loop 2's append was written and synced but its loop was never woken"
    finally:
        group.close()
        one.join(30)
        two.join(30)
    assert sorted(outcome.values()) == [[(1, "a")], [(2, "b")]] or sorted(outcome.values()) == [[(1, "b")], [(2, "a")]]
    assert sorted(target.lines()) == ["a", "b"]
