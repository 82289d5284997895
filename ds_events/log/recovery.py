"""Finding the tail of a log, and moving a torn tail out of it.

A writer killed inside ``write()`` (or refused by a full disk) leaves a last line
without its newline, a last line that does not decode, or the first lines of a batch
whose last line is missing (each line says how many lines of its batch follow it).
Opening the log for appending moves all of those bytes to a quarantine file next to the
log, truncates the log to the end of its last complete batch and records a
``log.recovered`` event: a batch is in the log whole or not at all. Nothing in the
middle of the log is ever touched here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..events import EventDecodeError, LogRecovered, decode_line, new_event_id
from ..fdio import last_line, write_all
from .format import line_hash, line_more, line_seq

__all__ = ["Tail", "Torn", "find_tail", "torn_after", "quarantine", "lines_backwards"]


@dataclass(frozen=True)
class Tail:
    """Where the log's complete lines end, and its last event's seq and line hash."""

    size: int = 0
    last_seq: int = 0
    last_hash: str = ""


@dataclass(frozen=True)
class Torn:
    """Bytes at the end of the log that are not complete batches of events.

    ``events`` counts the complete event lines among them (an incomplete batch).
    """

    offset: int
    data: bytes
    reason: str
    events: int = 0


def find_tail(fd: int) -> tuple[Tail, Torn | None]:
    """The tail of the log open at ``fd``: where its last complete batch ends, and what
    follows if anything does. Reads about the last batch; changes nothing."""
    size = os.fstat(fd).st_size
    if size == 0:
        return Tail(), None
    end, reason = size, ""
    last_start, last = last_line(fd, size)
    if not last.endswith(b"\n"):
        end, reason = last_start, "torn last line (no newline)"
    else:
        try:
            decode_line(last[:-1])
        except EventDecodeError as exc:
            end, reason = last_start, f"undecodable last line: {exc}"
        else:
            if line_more(last[:-1]) == 0:  # the usual case: it ends a batch
                return Tail(size, line_seq(last), line_hash(last[:-1])), None
    # The complete lines before ``end`` that belong to a batch whose last line is missing.
    dropped = 0
    tail = Tail()
    for start, line in lines_backwards(fd, end):
        if line_more(line) == 0:
            tail = Tail(start + len(line) + 1, line_seq(line), line_hash(line))
            break
        end, dropped = start, dropped + 1
    if dropped:
        reason = _batch_reason(dropped, reason)
    if end == size:
        return tail, None
    return tail, Torn(end, os.pread(fd, size - end, end), reason, dropped)


def torn_after(fd: int, offset: int, size: int) -> Torn:
    """The bytes in ``[offset, size)`` that follow the last complete batch, as a Torn."""
    data = os.pread(fd, size - offset, offset)
    lines = data.count(b"\n")
    reason = "torn last line (no newline)" if not data.endswith(b"\n") else ""
    return Torn(offset, data, _batch_reason(lines, reason) if lines else reason, lines)


def lines_backwards(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, line without newline)`` of the lines before ``end``, last first.

    ``end`` is 0 or just after a newline. Reads backwards in blocks that double
    without bound, so walking back over lines costs about their length, however long
    one line is (each byte is read once and copied a bounded number of times).
    """
    pos, buf, stop, block = end, b"", 0, 64 * 1024  # buf holds [pos, pos + len(buf)); unsplit: buf[:stop]
    while True:
        nl = buf.rfind(b"\n", 0, stop - 1) if stop else -1
        if nl >= 0:
            yield pos + nl + 1, buf[nl + 1 : stop - 1]
            stop = nl + 1
            continue
        if pos == 0:
            if stop:
                yield 0, buf[: stop - 1]
            return
        start = max(0, pos - block)
        block *= 2
        head = os.pread(fd, pos - start, start)
        buf, stop, pos = head + buf[:stop], len(head) + stop, start


def _batch_reason(lines: int, torn: str) -> str:
    what = f"incomplete batch: {lines} line(s) written of a batch whose last line is missing"
    return f"{what}; {torn}" if torn else what


def quarantine(fd: int, path: str, torn: Torn) -> LogRecovered:
    """Copy ``torn`` to ``quarantine/`` beside the log at ``path`` (durably), truncate the
    log where it starts, and return the ``log.recovered`` event to append (no envelope)."""
    qdir = os.path.join(os.path.dirname(path), "quarantine")
    os.makedirs(qdir, exist_ok=True)
    qpath = os.path.join(qdir, f"{os.path.basename(path)}.{new_event_id()}.torn")
    fd_q = os.open(qpath, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        write_all(fd_q, torn.data)
        os.fsync(fd_q)
    except BaseException:
        os.close(fd_q)
        os.unlink(qpath)  # a partial copy is no copy: the log keeps the bytes
        raise
    os.close(fd_q)
    os.ftruncate(fd, torn.offset)
    os.fsync(fd)
    return LogRecovered(
        reason=torn.reason,
        offset=torn.offset,
        length=len(torn.data),
        quarantine_path=os.path.relpath(qpath, os.path.dirname(path)),
        dropped_events=torn.events,
    )
