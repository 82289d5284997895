"""Following a quest's rows as they are appended, by any process on any machine.

A follower listens on :data:`~.schema.CHANNEL` and reads by seq whenever a notification
for its quest arrives, and also every ``poll_interval`` in case one was missed, so a
lost notification delays, never loses. Its connection is its own (a pooled one would be
held for as long as the follower lives).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import msgspec

from ...events import Event, decode_line
from .errors import as_log_error
from .pool import CONNECT_TIMEOUT
from .schema import CHANNEL, FOLLOW_SQL, PAGE

if TYPE_CHECKING:
    import psycopg

__all__ = ["follow_rows"]

_LISTEN_ATTEMPTS = 20  # a follower whose connection died tries this often, 0.5 s apart, to listen again


async def follow_rows(dsn: str, quest_id: str, after_seq: int, *, poll_interval: float, location: str) -> AsyncIterator[Event]:
    """Every event of ``quest_id`` after ``after_seq`` as it is appended, forever.

    If its connection dies (a server restart), it connects and listens again and reads
    on from the last seq it yielded. ``location`` names the log in errors.
    """
    import psycopg

    seq = after_seq
    conn: psycopg.AsyncConnection[Any] | None = None
    caught_up = False  # the last read found less than a page: wait before the next
    try:
        while True:
            if conn is None:
                conn, caught_up = await _listen(dsn, location), False
            try:
                if caught_up:
                    await _notified(conn, quest_id, seq, poll_interval)
                cur = await conn.execute(FOLLOW_SQL, (quest_id, seq, PAGE))
                rows = await cur.fetchall()
            except psycopg.OperationalError as exc:
                if not conn.broken:
                    raise as_log_error(exc, location) from exc
                await conn.close()
                conn = None  # listen again, then read on from seq
                continue
            for row_seq, line in rows:
                seq = row_seq
                yield decode_line(line)
            caught_up = len(rows) < PAGE
    finally:
        if conn is not None:
            await conn.close()


# -- private helpers ----------------------------------------------------------------------

_notice_decode = msgspec.json.Decoder()


async def _listen(dsn: str, location: str) -> psycopg.AsyncConnection[Any]:
    """A connection listening for appends; retried while the server is restarting."""
    import asyncio  # loaded already: we run on its loop

    import psycopg

    for attempt in range(_LISTEN_ATTEMPTS):
        try:
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            try:
                await conn.execute(f"LISTEN {CHANNEL}")  # before the next read: nothing falls between
            except BaseException:  # failed, or the follower was cancelled here: the caller never sees conn
                await conn.close()
                raise
            return conn
        except psycopg.OperationalError as exc:
            if attempt == _LISTEN_ATTEMPTS - 1:
                raise as_log_error(exc, f"following {location}") from exc
            await asyncio.sleep(0.5)
    raise AssertionError("unreachable")  # pragma: no cover


async def _notified(conn: psycopg.AsyncConnection[Any], quest_id: str, seq: int, timeout: float) -> None:
    """Wait up to ``timeout`` for a notification that ``quest_id`` grew past ``seq``."""
    async for note in conn.notifies(timeout=timeout):
        try:
            notice = _notice_decode.decode(note.payload)
        except msgspec.DecodeError:
            continue
        if notice.get("quest_id") == quest_id and notice.get("seq", 0) > seq:
            return
