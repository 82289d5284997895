"""Real failures of a quest log's append, injected at the edge of the world (the OS calls
the log makes), as the tests in tests/core do: the log's own code runs unchanged.

- :class:`FullDisk`: ``os.write`` to the log's file fails with ENOSPC, so nothing of the
  event reaches the file (a full disk).
- :class:`FailingSync`: ``os.fdatasync`` of the log's file fails once with EIO after the
  line was written (a failing disk): the append raises, the line stays in the file.

Both touch only descriptors of the log file (matched by inode); every other write and
sync of the process (git objects, materialised files) goes through.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

__all__ = ["FullDisk", "FailingSync", "log_path"]


def log_path(root: Path) -> Path:
    return root / ".ds" / "events.jsonl"


class FullDisk:
    """While ``on``, every write to the log file fails with ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.ino = os.stat(log_path(root)).st_ino
        self.on = True
        self.refused = 0
        real = os.write

        def write(fd: int, data: bytes) -> int:
            if self.on and os.fstat(fd).st_ino == self.ino:
                self.refused += 1
                raise OSError(errno.ENOSPC, "No space left on device")
            return real(fd, data)

        monkeypatch.setattr(os, "write", write)


class FailingSync:
    """The next ``fdatasync`` of the log file fails with EIO (the real call is skipped);
    later ones run for real."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.ino = os.stat(log_path(root)).st_ino
        self.failed = 0
        real = os.fdatasync

        def fdatasync(fd: int) -> None:
            if not self.failed and os.fstat(fd).st_ino == self.ino:
                self.failed += 1
                raise OSError(errno.EIO, "simulated I/O error")
            real(fd)

        monkeypatch.setattr(os, "fdatasync", fdatasync)
