"""How memory events become the index's rows: one card row each, a full-text row while the
card is active, its tags, and the document frequency of every word it holds.

:func:`apply_lines` folds stored log lines into the rows in one transaction and records
the seq it reached beside them (:mod:`.schema`); only ``memory.*`` lines are decoded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from ds_events.events import Event, decode_line
from ds_events.events.memory import CardImported, CardSuperseded, CardWritten

from ..text import content_words, words
from .schema import SCHEMA_VERSION, active_count, applied_seq

__all__ = ["Behind", "is_memory_line", "apply_lines", "apply_event", "upsert", "title_key", "hints_of"]

_MEMORY_PREFIX = b"memory."


class Behind(Exception):
    """The index's seq went down between reading the log and applying it."""


def is_memory_line(line: bytes) -> bool:
    """Whether a stored log line is a ``memory.*`` event (without decoding it)."""
    return line[9 : 9 + len(_MEMORY_PREFIX)] == _MEMORY_PREFIX


def apply_lines(conn: sqlite3.Connection, lines: list[tuple[int, bytes]], *, reset: bool) -> int:
    """Fold ``lines`` (seq, stored line) into the rows in one transaction, with the seq
    reached; returns how many memory events were applied. ``reset`` empties the rows
    first. :class:`Behind` when the file's seq is below the lines' start (a fresh file
    was swapped in since the caller read it)."""
    count = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        if reset:
            for table in ("meta", "cards", "card_tags", "fts", "term_df"):
                conn.execute(f"DELETE FROM {table}")
        applied = applied_seq(conn)  # re-read: another process may have synced meanwhile
        if lines and applied < lines[0][0] - 1:
            raise Behind  # a fresh file was swapped in since we read the seq
        last_line = None
        active = active_count(conn)
        for seq, line in lines:
            if seq <= applied:
                continue
            if is_memory_line(line):
                active += apply_event(conn, decode_line(line))
                count += 1
            applied, last_line = seq, line
        if last_line is not None or reset:
            last_id = decode_line(last_line).id if last_line is not None else ""
            conn.executemany(
                "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
                [("seq", str(applied)), ("event_id", last_id), ("schema", SCHEMA_VERSION), ("active", str(active))],
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return count


def apply_event(conn: sqlite3.Connection, event: Event) -> int:
    """Apply one event; returns the change in the number of active cards."""
    match event:
        case CardWritten():
            hints = hints_of(event.metadata, event.record_type)
            return upsert(conn, event.card_id, event.kind, event.title, event.body, event.tags, hints, event.seq,
                          quest_id=event.source_quest or event.quest_id, record_type=event.record_type)
        case CardImported():
            row = conn.execute("SELECT active, quest_id, record_type FROM cards WHERE card_id=?", (event.card_id,)).fetchone()
            if row is not None and row[0]:
                hints = hints_of(event.metadata, row[2])
                return upsert(conn, event.card_id, event.kind, event.title, event.body, event.tags, hints,
                              event.seq, quest_id=row[1], record_type=row[2])
        case CardSuperseded(card_id=card_id):
            row = conn.execute("SELECT rowid, active FROM cards WHERE card_id=?", (card_id,)).fetchone()
            if row is not None:
                conn.execute("UPDATE cards SET active=0, seq=? WHERE rowid=?", (event.seq, row[0]))
                delete_text(conn, row[0])
                return -1 if row[1] else 0
    return 0


def upsert(conn: sqlite3.Connection, card_id: str, kind: str, title: str, body: str, tags: list[str],
           hints: str, seq: int, *, quest_id: str, record_type: str) -> int:  # fmt: skip
    row = conn.execute("SELECT rowid, active FROM cards WHERE card_id=?", (card_id,)).fetchone()
    if row is None:
        cur = conn.execute(
            "INSERT INTO cards(card_id, kind, title, quest_id, record_type, active, seq, title_key) VALUES(?,?,?,?,?,1,?,?)",
            (card_id, kind, title, quest_id, record_type, seq, title_key(title)),
        )
        rowid, active, added = cur.lastrowid, 1, 1
    else:
        rowid, active = row
        added = 0
        conn.execute("UPDATE cards SET kind=?, title=?, seq=?, title_key=? WHERE rowid=?",
                     (kind, title, seq, title_key(title), rowid))  # fmt: skip
        delete_text(conn, rowid)
    if active:
        text = (title, body, " ".join(tags), hints)
        conn.execute("INSERT INTO fts(rowid, title, body, tags, hints) VALUES(?,?,?,?,?)", (rowid, *text))
        count_terms(conn, text, +1)
        conn.executemany("INSERT OR IGNORE INTO card_tags(tag, card_rowid) VALUES(?, ?)",
                         [(t.lower(), rowid) for t in tags])  # fmt: skip
    return added


def title_key(title: str) -> str:
    """The distinct content words of a title, sorted: two cards with the same key have
    the same title as far as the near-duplicate check is concerned (similarity 1.0)."""
    return " ".join(sorted(set(content_words(title))))


def count_terms(conn: sqlite3.Connection, text: Sequence[str], delta: int) -> None:
    """Add ``delta`` to the document frequency of each distinct word of a card's text.

    ``term_df`` lets the near-duplicate check find a card's rarest words with one
    lookup, where counting FTS5 matches per word cost a millisecond or more per write and
    grew with the store. Its words are :func:`words` tokens, the ones queries are made of;
    FTS5 also stems them, so a word's count of matching cards can be somewhat higher.
    """
    terms = {t for column in text for t in words(column)}
    if delta > 0:
        conn.executemany("INSERT INTO term_df(term, df) VALUES(?, 1) ON CONFLICT(term) DO UPDATE SET df = df + 1",
                         [(t,) for t in terms])  # fmt: skip
    else:
        rows = [(t,) for t in terms]
        conn.executemany("UPDATE term_df SET df = df - 1 WHERE term = ?", rows)
        conn.executemany("DELETE FROM term_df WHERE term = ? AND df <= 0", rows)


def delete_text(conn: sqlite3.Connection, rowid: int) -> None:
    """Remove a card's full-text row, its tags and its words' counts."""
    old = conn.execute("SELECT title, body, tags, hints FROM fts WHERE rowid=?", (rowid,)).fetchone()
    if old is not None:
        count_terms(conn, [c or "" for c in old], -1)
    conn.execute("DELETE FROM fts WHERE rowid=?", (rowid,))
    conn.execute("DELETE FROM card_tags WHERE card_rowid=?", (rowid,))


def hints_of(metadata: dict[str, Any], record_type: str) -> str:
    """The text of the ``hints`` column: retrieval hints, stage and summary from the card's
    metadata, and its record type in words."""
    hints = metadata.get("retrieval_hints") or []
    if isinstance(hints, str):
        hints = [hints]
    parts = [str(h) for h in hints] if isinstance(hints, list) else []
    for key in ("stage", "summary"):
        if isinstance(metadata.get(key), str):
            parts.append(metadata[key])
    if record_type:
        parts.append(record_type.replace("_", " "))
    return " ".join(parts)

