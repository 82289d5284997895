"""The log's open file and how much of it is known to be on disk.

Appends write under the append lock and sync after releasing it, so one sync can cover
several writers' groups (what is durable is always a prefix of the file). This module
keeps the bookkeeping that makes that safe: one sync at a time, the offset below which
this handle knows the file is on disk, and a failed sync that is final for the handle.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable

from ..errors import DiskFull, LogError
from .anchor import HeadAnchor

__all__ = ["DurableFile", "as_log_error", "DISK_FULL_ERRNOS"]

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def as_log_error(path: str, exc: OSError, what: str) -> LogError:
    """The error a caller sees for an ``OSError`` while ``what`` (a write, a sync ...):
    :class:`DiskFull` for a full disk or quota, else :class:`LogError`."""
    if exc.errno in DISK_FULL_ERRNOS:
        return DiskFull(f"{path}: the disk is full ({exc.strerror}) during {what}: {_NOTHING}; free some space and retry")
    return LogError(f"{path}: {what} failed ({exc}): {_NOTHING}; reopen the log and check it with ds verify")


_NOTHING = "nothing of this append was kept"


class DurableFile:
    """One open descriptor of the log at ``path`` and its durable prefix.

    ``intact()`` gives ``(offset, seq, line hash)`` of the end of the complete lines
    the owner has checked (its own writes included). A sync never records more than
    that offset as durable: bytes beyond it (another writer's line in progress) may yet
    be cut off by a recovery and replaced by shorter lines, and an offset that counted
    them would later let an append of ours that ends below it return without a sync.
    After each sync, ``anchor`` (if any) is told the head that is now durable.
    """

    def __init__(
        self,
        path: str,
        *,
        intact: Callable[[], tuple[int, int, str]],
        anchor: HeadAnchor | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.read_only = read_only
        try:
            self.fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except FileNotFoundError:
            raise LogError(f"there is no log at {path}") from None
        self._intact = intact
        self.anchor = anchor
        self.lock = threading.Lock()  # one sync at a time; guards everything below
        self.durable = 0  # the file's first ``durable`` bytes are known to be on disk
        self.written_end = 0  # the offset just after this handle's last write
        self.failed: OSError | None = None  # a sync failed: final for this handle
        self.write_failed: OSError | None = None  # a write failed: refuse until reopened
        self.refusal: LogError | None = None  # the log is not what it should be: refuse
        self.closed = False
        # Whether usable() would raise: one attribute read on every append's path, kept
        # true from the moment any of the reasons above is set.
        self.blocked = read_only
        self._retired: list[int] = []  # descriptors of replaced files (a sync may still use one)

    def note_written(self, end: int) -> None:
        self.written_end = end

    def usable(self) -> None:
        """Refuse to append through a closed or read-only handle, one whose sync or
        write failed, or one that found the log damaged."""
        if self.closed:
            raise LogError(f"log {self.path} is closed")
        if self.read_only:
            raise LogError(f"log {self.path} was opened read-only: nothing can be appended through this handle")
        if self.refusal is not None:
            raise self.refusal
        self.refuse_if_failed()
        if self.write_failed is not None:
            error = DiskFull if self.write_failed.errno in DISK_FULL_ERRNOS else LogError
            raise error(f"{self.path}: an earlier write failed ({self.write_failed.strerror or self.write_failed}); reopen the log")

    def refuse(self, error: LogError) -> None:
        """The log is not what it should be (see ``error``): append nothing more."""
        self.refusal = error
        self.blocked = True

    def fail_write(self, exc: OSError) -> None:
        """A write (or a recovery's truncation) failed: what this handle knows of the
        file's end may be wrong, so it appends nothing more until reopened."""
        self.write_failed = exc
        self.blocked = True

    def refuse_if_failed(self) -> None:
        if self.failed is not None:
            raise LogError(f"{self.path}: an earlier sync failed ({self.failed}); reopen the log")

    def sync_through(self, end: int) -> None:
        """Return once the file's first ``end`` bytes are on disk.

        One sync runs at a time. A sync that began after those bytes were written
        (ours or another thread's) is enough, so a caller whose bytes a sync already
        covered returns at once. A failed sync is final for this handle: the kernel
        may have dropped the pages it could not write, so a later sync that succeeds
        would prove nothing about them. Every later append and sync raises.
        """
        with self.lock:
            self.refuse_if_failed()
            if self.durable >= end:
                return
            if self.closed:
                raise LogError(f"log {self.path} was closed before the append was synced")
            self.sync_locked()

    def sync_locked(self) -> None:
        """Under :attr:`lock`: sync the open file and record how far it is durable.

        A failure is recorded for good (see :meth:`sync_through`) and raised.
        """
        # Everything written so far (by anyone) that we know to be whole lines.
        end, seq, line_hash = self._intact()
        covers = min(os.fstat(self.fd).st_size, end)
        try:
            os.fdatasync(self.fd)
        except OSError as exc:
            self.failed = exc
            self.blocked = True
            error = DiskFull if exc.errno in DISK_FULL_ERRNOS else LogError
            raise error(
                f"{self.path}: sync failed ({exc}); appends since the last good sync may not be on disk. "
                "Reopen the log (it recovers its tail) and check it with ds verify"
            ) from exc
        self.durable = max(self.durable, covers)
        if self.anchor is not None and covers == end and seq:
            self.anchor.write(seq, line_hash, self.fd)  # only ever a head that is on disk

    def sync_own_writes_locked(self) -> None:
        """Under :attr:`lock`: sync if this handle wrote past the durable offset."""
        if self.failed is None and self.written_end > self.durable:
            self.sync_locked()

    def forget(self) -> None:
        """The file shrank, was recovered or changed under us: offsets from before
        mean nothing now, so the next append syncs whatever this one covered."""
        with self.lock:
            self.durable = self.written_end = 0

    def reopen(self) -> None:
        """The path names a new file (``ds repair`` replaced it): switch to it.

        What we wrote to the old file is synced first, and its descriptor stays open
        until :meth:`close`: a thread may be about to sync it (and must not hit a
        reused number).
        """
        with self.lock:
            if not self.read_only:
                self.sync_own_writes_locked()
            self._retired.append(self.fd)
            flags = os.O_RDONLY if self.read_only else os.O_RDWR | os.O_APPEND | os.O_CREAT
            self.fd = os.open(self.path, flags, 0o644)
            self.durable = self.written_end = 0

    def close(self, *, sync: bool) -> bool:
        """Sync what this handle wrote (if ``sync``), then close. False if already closed."""
        with self.lock:
            if self.closed:
                return False
            if sync and not self.read_only:
                with contextlib.suppress(LogError):  # recorded: later syncs through this handle fail
                    self.sync_own_writes_locked()
            self.closed = True
            self.blocked = True
            for fd in (self.fd, *self._retired):
                os.close(fd)
            if self.anchor is not None:
                self.anchor.close()
            return True
