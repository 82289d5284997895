"""The append lock: one appender at a time across threads and processes.

An exclusive ``flock`` on ``<log>.lock`` serialises processes; a thread lock in front
of it serialises the threads of one process (a ``flock`` is held per open file, so two
threads sharing the descriptor would both "hold" it). :class:`FileLock` is re-entrant
in the thread that owns it: a plain append made inside that thread's own transaction
keeps the ``flock`` instead of dropping it on the way out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator

__all__ = ["FileLock", "append_lock"]


class FileLock:
    """The thread lock plus the ``flock`` of one open lock file.

    ``with lock:`` takes both (the ``flock`` once, by the outermost use in the owning
    thread); :meth:`try_acquire` takes them only if that needs no waiting.
    """

    def __init__(self, path: str | None) -> None:
        """``path`` None: a thread lock only (a read-only handle, which never takes
        the append lock and creates no lock file)."""
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644) if path is not None else None
        self._thread_lock = threading.RLock()
        self._depth = 0  # how deep the owning thread is (the flock is taken at depth 1)
        self._owner: int | None = None

    @property
    def owner(self) -> int | None:
        """The ``threading.get_ident()`` of the thread holding the lock, if any."""
        return self._owner

    @property
    def threads(self) -> threading.RLock:
        """The thread lock alone: excludes this process's other writers, not other
        processes (enough to update what this handle has read)."""
        return self._thread_lock

    def held_by_me(self) -> bool:
        return self._owner == threading.get_ident()

    def __enter__(self) -> FileLock:
        self._thread_lock.acquire()
        if self._depth == 0:
            try:
                if self._fd is not None:
                    try:
                        fcntl.flock(self._fd, fcntl.LOCK_EX)
                    except InterruptedError:  # pragma: no cover - a signal during the wait
                        _flock(self._fd)
            except BaseException:
                self._thread_lock.release()
                raise
            self._owner = threading.get_ident()
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1  # (release(), inlined: this is on every append's path)
        try:
            if self._depth == 0:
                self._owner = None
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def try_acquire(self) -> bool:
        """Take the lock if it is free now, without waiting; release with :meth:`release`.

        False (and nothing held) if another thread or process holds it, or if this
        thread already does (inside its own transaction a new write must wait for the
        transaction's end, not join it).
        """
        if not self._thread_lock.acquire(blocking=False):
            return False
        if self._depth:
            self._thread_lock.release()
            return False
        try:
            if self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, InterruptedError):
            self._thread_lock.release()
            return False
        self._owner = threading.get_ident()
        self._depth = 1
        return True

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0:
                self._owner = None
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def append_lock(path: str) -> Iterator[None]:
    """Hold the append lock of the log at ``path`` without opening the log, for a tool
    that rewrites the file (``ds repair``): every appender waits until it is released."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _flock(fd)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _flock(fd: int) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        except InterruptedError:  # pragma: no cover - signal during wait
            continue
