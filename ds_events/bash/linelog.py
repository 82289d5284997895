"""The numbered line log of a session's output: ``<seq>\\t<text>\\n`` per line.

Every stored line carries its own number (1, 2, 3 ...), so a reader needs no side index:
the last line's number is the line count, and a seq is found by bisecting byte offsets.
Reads therefore touch O(returned lines + log2(size) small probes) bytes, whatever the
log's size, and hold only what they return in memory.

The monitor writes whole lines with one ``write`` each batch; a reader ignores anything
after the last newline (a write in progress, or a line torn by a crash).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from ds_events.fdio import end_of_last_line

__all__ = [
    "LineLogWriter",
    "LogSlice",
    "format_lines",
    "count",
    "head",
    "tail",
    "window",
    "preview",
    "MAX_LINE_BYTES",
]

MAX_LINE_BYTES = 16 * 1024  # longer output lines are split: keeps every read bounded
_BLOCK = 64 * 1024


@dataclass
class LogSlice:
    """Lines ``(seq, text)`` read from a log, and where they sit in it."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    total_lines: int = 0
    size: int = 0
    omitted: tuple[int, int] | None = None  # (first, last) seq left out of a preview

    @property
    def first_seq(self) -> int | None:
        return self.lines[0][0] if self.lines else None

    @property
    def last_seq(self) -> int | None:
        return self.lines[-1][0] if self.lines else None

    def text(self) -> str:
        """The lines as text, with a marker where a preview left lines out."""
        out: list[str] = []
        for seq, line in self.lines:
            if self.omitted is not None and seq == self.omitted[1] + 1:
                first, last = self.omitted
                out.append(f"... {last - first + 1} lines omitted (seq {first}..{last}) ...")
            out.append(line)
        return "\n".join(out)


class LineLogWriter:
    """Splits raw output bytes into numbered lines and appends them to ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.seq = 0
        self.bytes = 0
        self._partial = b""

    def feed(self, data: bytes) -> list[tuple[int, str]]:
        """Consume output bytes; write and return the lines they completed."""
        self.bytes += len(data)
        buf = self._partial + data if self._partial else data
        parts = buf.split(b"\n")
        self._partial = parts.pop()
        while len(self._partial) > MAX_LINE_BYTES:
            parts.append(self._partial[:MAX_LINE_BYTES])
            self._partial = self._partial[MAX_LINE_BYTES:]
        return self._write(parts)

    def flush_partial(self) -> list[tuple[int, str]]:
        """Write a pending line that has no newline yet (at exit, or after a quiet spell)."""
        if not self._partial:
            return []
        pending, self._partial = self._partial, b""
        return self._write([pending])

    @property
    def has_partial(self) -> bool:
        return bool(self._partial)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _write(self, raw_lines: list[bytes]) -> list[tuple[int, str]]:
        if not raw_lines:
            return []
        lines: list[tuple[int, str]] = []
        for raw in raw_lines:
            for piece in _split_long(raw):
                self.seq += 1
                lines.append((self.seq, _clean(piece)))
        data = format_lines(lines)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        return lines


def format_lines(lines: list[tuple[int, str]]) -> bytes:
    """The stored form of numbered lines (also used to build large logs quickly)."""
    return "".join(f"{seq}\t{text}\n" for seq, text in lines).encode("utf-8", "surrogateescape")


def count(path: str | os.PathLike[str]) -> tuple[int, int]:
    """``(number of complete lines, bytes up to the last complete line)``."""
    with open(path, "rb") as f:
        size = _complete_size(f.fileno())
        if size == 0:
            return 0, 0
        last = _read_back(f.fileno(), size, 1)
        return (last[-1][0] if last else 0), size


def head(path: str | os.PathLike[str], n: int) -> LogSlice:
    """The first ``n`` lines."""
    return window(path, after_seq=0, limit=n)


def tail(path: str | os.PathLike[str], n: int) -> LogSlice:
    """The last ``n`` lines, read backwards from the end in blocks."""
    with open(path, "rb") as f:
        fd = f.fileno()
        size = _complete_size(fd)
        lines = _read_back(fd, size, n) if size and n > 0 else []
        total = lines[-1][0] if lines else (_read_back(fd, size, 1)[-1][0] if size else 0)
        return LogSlice(lines=lines, total_lines=total, size=size)


def window(
    path: str | os.PathLike[str], *, after_seq: int | None = None, before_seq: int | None = None, limit: int = 200
) -> LogSlice:
    """Lines with ``after_seq < seq < before_seq``, at most ``limit``.

    With ``after_seq`` the window starts just after it; with only ``before_seq`` it is the
    ``limit`` lines just before it (paging backwards).
    """
    total, size = count(path)
    if after_seq is None:
        end = total + 1 if before_seq is None else min(before_seq, total + 1)
        after_seq = max(0, end - 1 - limit)
    stop = total + 1 if before_seq is None else min(before_seq, total + 1)
    out: list[tuple[int, str]] = []
    if after_seq + 1 < stop and limit > 0:
        with open(path, "rb") as f:
            fd = f.fileno()
            offset = _offset_of(fd, size, after_seq + 1)
            for seq, text in _read_forward(fd, offset, size):
                if seq >= stop or len(out) >= limit:
                    break
                if seq > after_seq:
                    out.append((seq, text))
    return LogSlice(lines=out, total_lines=total, size=size)


def preview(path: str | os.PathLike[str], *, full_max_lines: int = 400, full_max_bytes: int = 256 * 1024,
            head_lines: int = 50, tail_lines: int = 150) -> LogSlice:
    """The whole log when small, else its head and tail with the middle left out."""
    total, size = count(path)
    if total <= full_max_lines and size <= full_max_bytes:
        return window(path, after_seq=0, limit=max(total, 1))
    first = head(path, head_lines)
    last = tail(path, tail_lines)
    last_lines = [(s, t) for s, t in last.lines if s > head_lines]
    omitted = (head_lines + 1, last_lines[0][0] - 1) if last_lines and last_lines[0][0] > head_lines + 1 else None
    return LogSlice(lines=first.lines + last_lines, total_lines=total, size=size, omitted=omitted)


# -- private helpers -------------------------------------------------------------------


def _split_long(raw: bytes) -> list[bytes]:
    if len(raw) <= MAX_LINE_BYTES:
        return [raw]
    return [raw[i : i + MAX_LINE_BYTES] for i in range(0, len(raw), MAX_LINE_BYTES)]


def _clean(raw: bytes) -> str:
    # A terminal shows only what follows the last carriage return (progress bars redraw
    # the line that way); a PTY also turns "\n" into "\r\n".
    raw = raw.rstrip(b"\r")
    if b"\r" in raw:
        raw = raw[raw.rfind(b"\r") + 1 :]
    return raw.decode("utf-8", "replace").replace("\x00", "")


def _parse(line: bytes) -> tuple[int, str]:
    tab = line.find(b"\t")
    if tab <= 0 or not line[:tab].isdigit():
        raise ValueError(f"not a numbered log line: {line[:40]!r}")
    return int(line[:tab]), line[tab + 1 :].decode("utf-8", "replace")


def _complete_size(fd: int) -> int:
    """File size up to and including the last newline."""
    return end_of_last_line(fd, os.fstat(fd).st_size)


def _read_back(fd: int, end: int, n: int) -> list[tuple[int, str]]:
    """The last ``n`` complete lines before byte ``end`` (which ends a line)."""
    chunks: list[bytes] = []
    newlines = 0
    pos = end
    while pos > 0 and newlines <= n:
        start = max(0, pos - _BLOCK)
        chunk = os.pread(fd, pos - start, start)
        chunks.append(chunk)
        newlines += chunk.count(b"\n")
        pos = start
    data = b"".join(reversed(chunks))
    raw = data.split(b"\n")[:-1]  # the piece after the final newline is empty
    if pos > 0:
        raw = raw[1:]  # the first piece may be the end of a longer line
    return [_parse(line) for line in raw[-n:]]


def _read_forward(fd: int, offset: int, end: int) -> Iterator[tuple[int, str]]:
    carry = b""
    pos = offset
    while pos < end:
        chunk = os.pread(fd, min(_BLOCK, end - pos), pos)
        if not chunk:
            return
        pos += len(chunk)
        data = carry + chunk if carry else chunk
        lines = data.split(b"\n")
        carry = lines.pop()
        for line in lines:
            yield _parse(line)


def _line_start_at_or_after(fd: int, pos: int, end: int) -> tuple[int, int] | None:
    """``(offset, seq)`` of the first line starting at or after byte ``pos``."""
    start = pos
    if pos > 0:
        probe = pos - 1  # pos starts a line exactly when the byte before it is a newline
        while True:
            chunk = os.pread(fd, min(4096, end - probe), probe)
            if not chunk:
                return None
            nl = chunk.find(b"\n")
            if nl >= 0:
                start = probe + nl + 1
                break
            probe += len(chunk)
    if start >= end:
        return None
    header = os.pread(fd, 24, start)
    tab = header.find(b"\t")
    if tab <= 0 or not header[:tab].isdigit():
        raise ValueError(f"not a numbered log line at byte {start}: {header!r}")
    return start, int(header[:tab])


def _offset_of(fd: int, end: int, seq: int) -> int:
    """Byte offset of the first line whose number is ``>= seq`` (``end`` if none)."""
    lo, hi = 0, end
    while lo < hi:
        mid = (lo + hi) // 2
        found = _line_start_at_or_after(fd, mid, end)
        if found is None or found[1] >= seq:
            hi = mid
        else:
            lo = mid + 1
    found = _line_start_at_or_after(fd, lo, end)
    return found[0] if found is not None else end
