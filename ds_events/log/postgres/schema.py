"""The events table and the statements that read and write its rows.

One table holds every quest's events, keyed by ``(quest_id, seq)``, each event id unique
within its quest. A row keeps the stored line byte for byte (``encode(event)``, exactly
what the file log writes) and that line's hash, so the chain is the file log's: the next
event's ``prev`` is :func:`~ds_events.log.format.line_hash` of the row's ``line``, and a
log moves between the stores unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ...errors import LogError
from ...events import Event, decode_line
from ...store import Head
from ..format import line_hash, line_id, line_seq, line_type

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "SCHEMA",
    "CHANNEL",
    "LOCK_CLASS",
    "PAGE",
    "ensure_schema",
    "insert_lines",
    "read_head",
    "read_event",
    "HEAD_SQL",
    "KNOWN_SQL",
    "PAGE_SQL",
    "FOLLOW_SQL",
]

CHANNEL = "ds_events"  # NOTIFY payload: {"quest_id": ..., "seq": <new last seq>}
# pg_advisory_lock(LOCK_CLASS, hashtext(quest_id)): the two-key form keeps our locks
# apart from other users of the database; two quests sharing a hash only take turns.
LOCK_CLASS = 0x64734576  # "dsEv"
PAGE = 1000  # rows fetched per query by iter_lines, verify and follow

SCHEMA = """
CREATE TABLE IF NOT EXISTS ds_events (
    quest_id text NOT NULL,
    seq bigint NOT NULL CHECK (seq > 0),
    id text NOT NULL,
    type text NOT NULL,
    hash text NOT NULL,
    line bytea NOT NULL,
    PRIMARY KEY (quest_id, seq),
    UNIQUE (quest_id, id)
);
CREATE INDEX IF NOT EXISTS ds_events_by_type ON ds_events (quest_id, type, seq);
COMMENT ON COLUMN ds_events.line IS 'the stored line, byte for byte: encode(event); the chain hashes these bytes';
COMMENT ON COLUMN ds_events.hash IS 'line_hash(line): the next event''s prev';
"""

HEAD_SQL = "SELECT seq, hash FROM ds_events WHERE quest_id = %s ORDER BY seq DESC LIMIT 1"
KNOWN_SQL = "SELECT id, seq FROM ds_events WHERE quest_id = %s AND id = ANY(%s)"
PAGE_SQL = "SELECT seq, line, id, type, hash FROM ds_events WHERE quest_id = %s AND seq > %s ORDER BY seq LIMIT %s"
FOLLOW_SQL = "SELECT seq, line FROM ds_events WHERE quest_id = %s AND seq > %s ORDER BY seq LIMIT %s"


def ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """Create the events table and its index if missing (safe from many processes at once)."""
    with conn.transaction():
        if conn.execute("SELECT to_regclass('ds_events')").fetchone() == (None,):
            # Concurrent CREATE ... IF NOT EXISTS can still collide in the catalog: one at a time.
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))
            conn.execute(SCHEMA)


def insert_lines(conn: psycopg.Connection[Any], quest_id: str, lines: Sequence[bytes]) -> None:
    """Store ``lines`` (stored lines, in seq order) as rows of ``quest_id`` and notify
    followers at commit. The caller holds the quest's lock and has checked that they
    continue its chain: appends here, and ``ds store migrate`` copying a log verbatim."""
    conn.execute(
        _INSERT,
        (
            quest_id,
            [line_seq(line) for line in lines],
            [_line_id(line) for line in lines],
            [line_type(line).decode() for line in lines],
            [line_hash(line) for line in lines],
            list(lines),
            CHANNEL,
            _notice.encode({"quest_id": quest_id, "seq": line_seq(lines[-1])}).decode(),
        ),
    )


def read_head(conn: psycopg.Connection[Any], quest_id: str) -> Head:
    """The quest's last seq and its hash (``(0, "")`` when it has no rows)."""
    row = conn.execute(HEAD_SQL, (quest_id,)).fetchone()
    return Head(0, "") if row is None else Head(row[0], row[1])


def read_event(conn: psycopg.Connection[Any], quest_id: str, seq: int) -> Event | None:
    """The quest's event with this seq, or None."""
    row = conn.execute("SELECT line FROM ds_events WHERE quest_id = %s AND seq = %s", (quest_id, seq)).fetchone()
    return None if row is None else decode_line(row[0])


# -- private helpers ----------------------------------------------------------------------

_INSERT = (
    "WITH rows AS (INSERT INTO ds_events (quest_id, seq, id, type, hash, line) "
    "SELECT %s, * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::bytea[])) "
    "SELECT pg_notify(%s, %s)"
)
_notice = msgspec.json.Encoder()


def _line_id(line: bytes) -> str:
    found = line_id(line)
    if not found:  # (every line appended since ids exist has one)
        raise LogError(f"a line without an event id cannot be stored: {line[:80]!r}")
    return found
