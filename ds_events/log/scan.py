"""Reading complete lines out of a log file by byte offset.

Readers never take the append lock: they consume only ``\\n``-terminated lines, so a
write in progress (or a line torn by a crash) is invisible until it is whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from .format import line_more

__all__ = ["scan_lines", "CHUNK", "FIRST_CHUNK"]

CHUNK = 1 << 20  # the largest read: a long scan (a replay) reads the file in these
FIRST_CHUNK = 16 << 10  # the first read; each next one doubles, up to CHUNK


def scan_lines(fd: int, offset: int, end: int | None = None, *, whole_batches: bool = False) -> Iterator[tuple[bytes, int]]:
    """Complete lines of ``fd`` from ``offset`` up to ``end`` (default: the file's end now).

    Yields ``(line without newline, offset after it)``. A final line without its
    newline is not yielded: it is a write in progress (or torn; recovery's job).
    With ``whole_batches``, neither are the lines of a batch whose last line (the one
    saying no more follow) is not there yet, so a batch is seen whole or not at all.
    Only the last batch of a log can be incomplete (recovery removes it before anyone
    appends after it), so a reader that knows where complete batches end reads up to
    there without it, and uses it only for bytes beyond.

    Reads start small and double: a caller that stops after a page of lines (a read
    with a limit) has read about twice what it used, wherever in the file it started,
    while a long scan soon reads ``CHUNK`` bytes at a time.
    """
    if end is None:
        end = os.fstat(fd).st_size
    pieces: list[bytes] = []  # a line longer than what was read so far, in pieces
    pos = offset
    size = FIRST_CHUNK
    held: list[tuple[bytes, int]] = []  # lines of a batch whose last line is still to come
    while pos < end:
        chunk = os.pread(fd, min(size, end - pos), pos)
        if not chunk:
            break
        size = min(size * 2, CHUNK)
        base = pos
        pos += len(chunk)
        if chunk.find(b"\n") < 0:  # inside one long line: keep the piece, copy nothing yet
            pieces.append(chunk)
            continue
        lines = chunk.split(b"\n")
        rest = lines.pop()  # after the last newline: partial (or empty)
        if pieces:
            # Each byte is copied once more at most: a long line's pieces are joined
            # once, when its newline arrives (re-joining a growing carry per chunk
            # would cost the square of the line's length).
            head = len(lines[0])
            pieces.append(lines[0])
            lines[0] = b"".join(pieces)
            base -= len(lines[0]) - head  # where that line starts
            pieces = []
        if rest:
            pieces.append(rest)
        if not whole_batches:
            for line in lines:
                base += len(line) + 1
                yield line, base
            continue
        for line in lines:
            base += len(line) + 1
            more = line_more(line)
            if held or more:
                held.append((line, base))
                if more:
                    continue
                yield from held
                held = []
                continue
            yield line, base
