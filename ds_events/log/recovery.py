"""Finding the tail of a log, and moving a torn tail out of it.

A writer killed inside ``write()`` leaves a last line without its newline (or a line
that does not decode). Opening the log for appending moves those bytes to a quarantine
file next to the log, truncates the log to its last good line and records a
``log.recovered`` event; nothing in the middle of the log is ever touched here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..events import EventDecodeError, LogRecovered, decode_line, new_event_id
from ..fdio import last_line
from .format import line_hash, line_seq

__all__ = ["Tail", "Torn", "find_tail", "quarantine"]


@dataclass(frozen=True)
class Tail:
    """Where the log's complete lines end, and its last event's seq and line hash."""

    size: int = 0
    last_seq: int = 0
    last_hash: str = ""


@dataclass(frozen=True)
class Torn:
    """Bytes at the end of the log that are not a complete event."""

    offset: int
    data: bytes
    reason: str


def find_tail(fd: int) -> tuple[Tail, Torn | None]:
    """The tail of the log open at ``fd``, and what follows it if that is torn.

    Reads only the last line (or two, if the last is torn); changes nothing.
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return Tail(), None
    last_start, last = last_line(fd, size)
    torn: Torn | None = None
    if not last.endswith(b"\n"):
        torn = Torn(last_start, last, "torn last line (no newline)")
    else:
        try:
            decode_line(last[:-1])
        except EventDecodeError as exc:
            torn = Torn(last_start, last, f"undecodable last line: {exc}")
    if torn is not None:
        size = torn.offset
        if size == 0:
            return Tail(), torn
        last_start, last = last_line(fd, size)
    line = last.rstrip(b"\n")
    return Tail(size, line_seq(line), line_hash(line)), torn


def quarantine(fd: int, path: str, torn: Torn) -> LogRecovered:
    """Copy ``torn`` to ``quarantine/`` beside the log at ``path`` (durably), truncate the
    log where it starts, and return the ``log.recovered`` event to append (no envelope)."""
    qdir = os.path.join(os.path.dirname(path), "quarantine")
    os.makedirs(qdir, exist_ok=True)
    qpath = os.path.join(qdir, f"{os.path.basename(path)}.{new_event_id()}.torn")
    with open(qpath, "wb") as f:
        f.write(torn.data)
        f.flush()
        os.fsync(f.fileno())
    os.ftruncate(fd, torn.offset)
    os.fsync(fd)
    return LogRecovered(
        reason=torn.reason,
        offset=torn.offset,
        length=len(torn.data),
        quarantine_path=os.path.relpath(qpath, os.path.dirname(path)),
    )
