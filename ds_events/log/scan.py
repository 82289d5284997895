"""Reading complete lines out of a log file by byte offset.

Readers never take the append lock: they consume only ``\\n``-terminated lines, so a
write in progress (or a line torn by a crash) is invisible until it is whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["scan_lines", "CHUNK"]

CHUNK = 1 << 20


def scan_lines(fd: int, offset: int, end: int | None = None) -> Iterator[tuple[bytes, int]]:
    """Complete lines of ``fd`` from ``offset`` up to ``end`` (default: the file's end now).

    Yields ``(line without newline, offset after it)``. A final line without its
    newline is not yielded: it is a write in progress (or torn; recovery's job).
    """
    if end is None:
        end = os.fstat(fd).st_size
    carry = b""
    pos = offset
    while pos < end:
        chunk = os.pread(fd, min(CHUNK, end - pos), pos)
        if not chunk:
            break
        base = pos - len(carry)
        pos += len(chunk)
        lines = (carry + chunk if carry else chunk).split(b"\n")
        carry = lines.pop()  # after the last newline: partial (or empty)
        for line in lines:
            base += len(line) + 1
            yield line, base
