"""The append lock through its own interface (``ds_events.log.lock``)."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest

from ds_events.log import append_lock
from ds_events.log.lock import FileLock


@pytest.fixture
def lock(tmp_path):
    lk = FileLock(str(tmp_path / "events.jsonl.lock"))
    yield lk
    lk.close()


def held_by_another_process(path: str) -> bool:
    """Whether the flock is held by another open file (as another process would see it)."""
    probe = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(probe)
    return False


def test_the_lock_is_reentrant_in_its_owner_and_takes_the_flock_once(lock):
    with lock:
        assert lock.held_by_me() and lock.owner == threading.get_ident()
        with lock:  # an append inside the thread's own transaction
            assert held_by_another_process(lock.path)
        assert held_by_another_process(lock.path)  # the inner exit kept it
    assert lock.owner is None
    assert not held_by_another_process(lock.path)


def test_another_thread_waits_until_the_owner_lets_go(lock):
    order: list[str] = []
    with lock:
        t = threading.Thread(target=lambda: (lock.__enter__(), order.append("other"), lock.release()))
        t.start()
        t.join(0.2)
        assert t.is_alive() and order == []  # still waiting on the thread lock
        order.append("owner")
    t.join(30)
    assert order == ["owner", "other"]


def test_try_acquire_declines_without_waiting_when_the_lock_is_held(lock, tmp_path):
    with append_lock(str(tmp_path / "events.jsonl")):  # another process, say ds repair
        assert not lock.try_acquire()
    assert lock.try_acquire()
    try:
        assert lock.held_by_me() and held_by_another_process(lock.path)
        got: list[bool] = []
        t = threading.Thread(target=lambda: got.append(lock.try_acquire()))
        t.start()
        t.join(30)
        assert got == [False]  # another thread of this process
    finally:
        lock.release()
    assert not held_by_another_process(lock.path)


def test_try_acquire_declines_inside_the_owners_own_hold(lock):
    # A write from the loop thread must wait for that thread's transaction to end,
    # not slip into it.
    with lock:
        assert not lock.try_acquire()
        assert lock.held_by_me()
    assert not held_by_another_process(lock.path)
