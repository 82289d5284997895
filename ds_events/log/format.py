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

from ..errors import ServiceError
from ..events import Event, EventDecodeError, encode, new_event_ids, utc_now

__all__ = ["line_hash", "line_seq", "line_id", "line_type", "line_prev", "line_more", "Encoded", "encode_batches"]

_ID_MARK = b'"id":"'
_SEQ_MARK = b'"seq":'
_PREV_MARK = b'"prev":"'
_MORE_MARK = b',"more":'


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


def line_more(line: bytes) -> int:
    """How many lines of the same batch follow this stored line (0 for a batch's last
    line, and for lines written before batches were marked).

    Read where the envelope puts it, right after ``prev`` (an empty string or 32 hex
    digits), so a payload field that happens to be called ``more`` is never taken for it.
    """
    at = line.find(_PREV_MARK)
    if at < 0:
        return 0
    at += len(_PREV_MARK)
    at = at + 1 if line[at : at + 1] == b'"' else at + 33  # after prev's closing quote
    if not line.startswith(_MORE_MARK, at):
        return 0
    start = stop = at + len(_MORE_MARK)
    while stop < len(line) and 48 <= line[stop] <= 57:
        stop += 1
    return int(line[start:stop]) if stop > start else 0


def line_type(line: bytes) -> bytes:
    """The type tag of a stored line (``{"type":"<tag>"`` comes first)."""
    end = line.find(b'"', 9)
    return line[9:end]


class Encoded:
    """Appends turned into stored lines, ready for one write.

    ``results`` holds each append's events as stored (new or found already stored),
    or the error that refused that append (an event too large) and none of its events;
    ``lines`` the new lines (no newlines) in order, ``starts`` the file offset at which
    each begins; ``seq``, ``prev`` and ``end`` describe the log after them; ``ids`` maps
    each new event id to its seq; ``duplicates`` says whether any event was already
    stored (its first append may still be syncing).
    """

    __slots__ = ("results", "lines", "starts", "ids", "seq", "prev", "end", "duplicates")

    def __init__(self, seq: int, prev: str, end: int) -> None:
        self.results: list[list[Event] | ServiceError] = []
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
    run_id: str | None = None,
    stored: Callable[[int], Event],
    max_bytes: int | None = None,
) -> Encoded:
    """Assign the envelope of every new event of ``batches`` after ``(seq, prev)``.

    ``offset`` is where the first line will start. An event that carries an id is new
    unless ``known(id)`` (the log) or an earlier event of these batches has that id;
    then ``stored(seq)`` gives the stored event (for one stored before these batches).
    Each new line says how many lines of its batch follow it (``more``).

    A batch with a line longer than ``max_bytes`` is refused whole (its result is a
    :class:`ServiceError` with code ``event_too_large``); the other batches of a group
    are encoded as if it had not been there.

    This is the hot path of every append (and of group commit, once per group), so it
    binds what it calls to locals.
    """
    out = Encoded(seq, prev, offset)
    ts = utc_now()
    replace, enc, blake = msgspec.structs.replace, encode, hashlib.blake2b
    next_id = iter(new_event_ids(sum(map(len, batches)))).__next__
    first_seq = seq
    lines, starts, new_ids = out.lines, out.starts, out.ids
    written: list[Event] = []  # the new events, in line order
    for events in batches:
        undo = (seq, prev, offset, len(lines))
        # First decide which events are new (and their seqs), then encode them: each
        # line says how many lines of its batch follow it, which needs the count.
        results: list[Event | None] = [None] * len(events)
        later: list[tuple[int, int]] = []  # (position, seq): a duplicate of a new event
        new: list[tuple[int, Event, str, int]] = []  # (position, event, id, seq)
        for position, event in enumerate(events):
            event_id = event.id
            if event_id:
                existing = new_ids.get(event_id) or known(event_id)
                if existing:
                    out.duplicates = True
                    if existing > first_seq:  # stored earlier in these same batches
                        later.append((position, existing))
                    else:
                        results[position] = stored(existing)
                    continue
            else:
                event_id = next_id()
            seq += 1
            new_ids[event_id] = seq
            new.append((position, event, event_id, seq))
        more = len(new)
        for position, event, event_id, event_seq in new:
            more -= 1
            event = replace(
                event,
                seq=event_seq,
                id=event_id,
                ts=event.ts or ts,
                quest_id=event.quest_id or quest_id,
                actor=event.actor or actor,
                run_id=event.run_id or run_id,
                prev=prev,
                more=more,
            )
            try:
                line = enc(event)
                refusal = _too_large(len(line), max_bytes) if max_bytes is not None and len(line) > max_bytes else None
            except UnicodeEncodeError:
                # A lone surrogate got past the edges' check (a caller that skipped
                # decode_command): the line could never be UTF-8. Refuse it like any bad
                # batch, before anything of it is written.
                refusal = _not_text(event)
            if refusal is not None:
                out.results.append(refusal)
                seq, prev, offset, kept = undo  # as if this batch had never come
                del lines[kept:], starts[kept:], written[kept:]
                for _p, _e, refused_id, _s in new:
                    new_ids.pop(refused_id, None)
                break
            prev = blake(line, digest_size=16).hexdigest()
            starts.append(offset)
            offset += len(line) + 1
            lines.append(line)
            written.append(event)
            results[position] = event
        else:
            for position, event_seq in later:
                results[position] = written[event_seq - first_seq - 1]
            filled = [e for e in results if e is not None]
            assert len(filled) == len(results), "every event of a batch is written or found stored"
            out.results.append(filled)
    out.seq, out.prev, out.end = seq, prev, offset
    return out


def _not_text(event: Event) -> ServiceError:
    return ServiceError(
        f"a {event.type} event holds text that is not valid Unicode (a lone surrogate, or bytes that are not UTF-8): "
        "nothing of this append was written; send well-formed text",
        code="invalid_text",
    )


def _too_large(size: int, limit: int) -> ServiceError:
    return ServiceError(
        f"an event of {size:,} bytes is larger than the log accepts ({limit:,} bytes, log.max_event_bytes): "
        "nothing of this append was written; keep large data in a file and record its path",
        code="event_too_large",
        size=size,
        limit=limit,
    )
