"""The stored line format: one compact JSON event per line, chained by hash.

A stored line is ``encode(event)`` without its newline; it starts with
``{"type":"<tag>","seq":N,"id":"…"`` because msgspec encodes the tag field first and
then the envelope in declaration order. That fixed prefix lets the log peek at a line's
seq, id and type without decoding it. Each event's ``prev`` is :func:`line_hash` of the
line before it, so editing, removing or moving a line breaks the chain.

:func:`encode_batches` turns appends into stored lines: it assigns seq, id, ts, actor
and ``prev``, and resolves events whose id is already stored (idempotent retries).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import msgspec

from ..events import Event, EventDecodeError, decode_line, encode, new_event_ids, utc_now

__all__ = ["line_hash", "line_seq", "line_id", "line_type", "line_prev", "Encoded", "encode_batches"]

_ID_MARK = b'"id":"'
_SEQ_MARK = b'"seq":'
_PREV_MARK = b'"prev":"'


def line_hash(line: bytes) -> str:
    """The chain hash of one stored line (without its newline)."""
    return hashlib.blake2b(line, digest_size=16).hexdigest()


def line_seq(line: bytes) -> int:
    """The ``seq`` of a stored line without decoding all of it."""
    at = line.find(_SEQ_MARK)
    if at < 0:
        raise EventDecodeError("line has no seq")
    end = at + len(_SEQ_MARK)
    stop = end
    while stop < len(line) and 48 <= line[stop] <= 57:
        stop += 1
    if stop == end:
        raise EventDecodeError("line has no numeric seq")
    return int(line[end:stop])


def line_id(line: bytes) -> str | None:
    """The ``id`` of a stored line without decoding it (None if it has none)."""
    at = line.find(_ID_MARK)
    if at < 0:
        return None
    start = at + len(_ID_MARK)
    end = line.find(b'"', start)
    return line[start:end].decode() if end > start else None


def line_prev(line: bytes) -> str | None:
    """The ``prev`` hash of a stored line without decoding it (None if it has none).

    The envelope's ``prev`` is the first such key in the line: a payload string cannot
    hold an unescaped quote, and payload fields come after the envelope.
    """
    at = line.find(_PREV_MARK)
    if at < 0:
        return None
    start = at + len(_PREV_MARK)
    end = line.find(b'"', start)
    return line[start:end].decode() if end >= start else None


def line_type(line: bytes) -> bytes:
    """The type tag of a stored line (``{"type":"<tag>"`` comes first)."""
    end = line.find(b'"', 9)
    return line[9:end]


class Encoded:
    """Appends turned into stored lines, ready for one write.

    ``results`` holds each append's events as stored (new or found already stored);
    ``lines`` the new lines (no newlines) in order, ``starts`` the file offset at which
    each begins; ``seq``, ``prev`` and ``end`` describe the log after them; ``ids`` maps
    each new event id to its seq; ``duplicates`` says whether any event was already
    stored (its first append may still be syncing).
    """

    __slots__ = ("results", "lines", "starts", "ids", "seq", "prev", "end", "duplicates")

    def __init__(self, seq: int, prev: str, end: int) -> None:
        self.results: list[list[Event]] = []
        self.lines: list[bytes] = []
        self.starts: list[int] = []
        self.ids: dict[str, int] = {}
        self.seq, self.prev, self.end = seq, prev, end
        self.duplicates = False

    def data(self) -> bytes:
        """The bytes to write: every line with its newline."""
        return b"\n".join(self.lines) + b"\n" if self.lines else b""


def encode_batches(
    batches: Sequence[Sequence[Event]],
    *,
    seq: int,
    prev: str,
    offset: int,
    quest_id: str,
    actor: str,
    known: Callable[[str], int | None],
    stored: Callable[[int], Event],
) -> Encoded:
    """Assign the envelope of every new event of ``batches`` after ``(seq, prev)``.

    ``offset`` is where the first line will start. An event that carries an id is new
    unless ``known(id)`` (the log) or an earlier event of these batches has that id;
    then ``stored(seq)`` gives the stored event (for one stored before these batches).

    This is the hot path of every append (and of group commit, once per group), so it
    binds what it calls to locals.
    """
    out = Encoded(seq, prev, offset)
    ts = utc_now()
    replace, enc, blake = msgspec.structs.replace, encode, hashlib.blake2b
    next_id = iter(new_event_ids(sum(map(len, batches)))).__next__
    first_seq = seq
    lines, starts, new_ids = out.lines, out.starts, out.ids
    for events in batches:
        results: list[Event] = []
        for event in events:
            event_id = event.id
            if event_id:
                existing = new_ids.get(event_id) or known(event_id)
                if existing:
                    if existing > first_seq:  # stored earlier in these same batches
                        results.append(decode_line(lines[existing - first_seq - 1]))
                    else:
                        results.append(stored(existing))
                    out.duplicates = True
                    continue
            else:
                event_id = next_id()
            seq += 1
            new_ids[event_id] = seq
            event = replace(
                event,
                seq=seq,
                id=event_id,
                ts=event.ts or ts,
                quest_id=event.quest_id or quest_id,
                actor=event.actor or actor,
                prev=prev,
            )
            line = enc(event)
            prev = blake(line, digest_size=16).hexdigest()
            starts.append(offset)
            offset += len(line) + 1
            lines.append(line)
            results.append(event)
        out.results.append(results)
    out.seq, out.prev, out.end = seq, prev, offset
    return out
