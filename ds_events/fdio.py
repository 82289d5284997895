"""Small helpers over raw file descriptors and paths.

Shared by the event log, ``verify`` and the bash session line log. A leaf module: it
imports nothing of ours, so every layer may use it. Everything here works on bytes and
offsets; what a line means is the caller's business.
"""

from __future__ import annotations

import errno
import os

__all__ = [
    "end_of_last_line",
    "last_line",
    "write_all",
    "fsync_dir",
    "stat_or_none",
    "file_size",
    "truncate_file",
]


def end_of_last_line(fd: int, end: int) -> int:
    """Offset just after the last newline in the first ``end`` bytes of ``fd`` (0 if none).

    Reads backwards in growing blocks, so it costs the length of the last line, not of
    the file. The log uses it to find its tail; session output logs to find their end.
    """
    step = 64 * 1024
    pos = end
    while pos > 0:
        start = max(0, pos - step)
        nl = os.pread(fd, pos - start, start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
        step *= 2
    return 0


def last_line(fd: int, size: int) -> tuple[int, bytes]:
    """``(offset, bytes)`` of the last line of the first ``size`` bytes (newline kept)."""
    # A trailing newline belongs to the last line; look for the one before it.
    search_end = size - 1 if os.pread(fd, 1, size - 1) == b"\n" else size
    start = end_of_last_line(fd, search_end)
    return start, os.pread(fd, size - start, start)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` (``os.write`` may write less than asked).

    An ``OSError`` (a full disk, say) propagates; some of ``data`` may be in the file
    by then, and the caller must know where it started to undo it.
    """
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except InterruptedError:  # pragma: no cover - signal during write
            continue
        view = view[written:]


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a created, renamed or removed file) durable."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # pragma: no cover
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


def stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def file_size(path: str) -> int:
    """The size of the file at ``path``; 0 if there is none."""
    st = stat_or_none(path)
    return st.st_size if st else 0


def truncate_file(path: str, size: int) -> None:
    """Cut the file at ``path`` down to ``size`` bytes if it is longer."""
    if file_size(path) > size:
        os.truncate(path, size)
