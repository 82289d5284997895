"""A real full file system for tests (not a test module).

:func:`small_fs` mounts a small tmpfs (as root); :func:`fill` then takes all of its
free space. Where no mount can be had (not root, no tmpfs), :func:`small_fs` yields a
plain temporary directory and :class:`InjectedFullDisk` fakes the edge instead: it
wraps ``os.write`` so that writes to files under that directory fail with ``ENOSPC``
once it is "full" (after writing what still fit, as a real disk does).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_fs(size: str = "4m") -> Iterator[tuple[Path, bool]]:
    """``(directory, real)``: a tmpfs of ``size`` if one can be mounted (``real``),
    else a plain temporary directory."""
    where = Path(tempfile.mkdtemp(prefix="ds-fullfs-"))
    mounted = (
        os.geteuid() == 0
        and not os.environ.get("DS_TEST_NO_MOUNT")  # to exercise the fallback
        and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True).returncode == 0
    )
    try:
        yield where, mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], check=False)
        shutil.rmtree(where, ignore_errors=True)


def fill(directory: Path, leave: int = 0) -> Path:
    """Take the file system's free space (all but about ``leave`` bytes) with a filler
    file; returns it (remove it to free the space)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        block = 1 << 16
        while block:
            free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
            if free <= leave:
                break
            try:
                os.write(fd, b"\0" * min(block, max(free - leave, 1)))
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                block //= 2
    finally:
        os.close(fd)
    return filler


class InjectedFullDisk:
    """Fallback for :func:`small_fs` without a mount: ``os.write`` to a file under
    ``directory`` writes at most ``room`` more bytes in all, then fails with ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
        self.directory = str(directory)
        self.room: int | None = None  # None: not full yet
        self.real = os.write
        monkeypatch.setattr(os, "write", self)

    def fill(self, leave: int = 0) -> None:
        self.room = leave

    def free(self) -> None:
        self.room = None

    def __call__(self, fd: int, data: bytes) -> int:
        if self.room is not None:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                target = ""
            if target.startswith(self.directory):
                if self.room == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                n = self.real(fd, bytes(data[: self.room]))
                self.room -= n
                return n
        return self.real(fd, data)


class FullDisk:
    """One interface over both: ``fill()`` then ``free()`` the disk under ``path``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path, real: bool) -> None:
        self.path, self.real = path, real
        self._filler: Path | None = None
        self._injected = None if real else InjectedFullDisk(monkeypatch, path)

    def fill(self, leave: int = 0) -> None:
        if self._injected is not None:
            self._injected.fill(leave)
        else:
            self._filler = fill(self.path, leave)

    def free(self) -> None:
        if self._injected is not None:
            self._injected.free()
        elif self._filler is not None:
            self._filler.unlink()
            self._filler = None
