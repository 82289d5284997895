"""Connections to the database: the pool stores share, and what each connection is set to."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .schema import ensure_schema

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["open_pool", "configure_connection", "connect_timeout", "CONNECT_TIMEOUT", "CONNECTION_WAIT"]

CONNECT_TIMEOUT = 10  # seconds: a follower's (re)connection gives up after this long
# Seconds an operation waits for a connection by default (``log.connection_wait_seconds``
# in config.yaml): long enough for a pool busy with a burst, short enough that a writer
# meeting a server that is down hears so in seconds, not after the pool's own 30.
CONNECTION_WAIT = 5.0


def open_pool(dsn: str, *, max_size: int, name: str, wait: float = CONNECTION_WAIT) -> ConnectionPool:
    """A connection pool on ``dsn`` for stores to share, the events table ensured once.

    It connects once directly first, so a wrong address or a server that is down fails
    here at once (``psycopg.Error``), not after the pool's wait for its first connection.
    ``wait`` bounds that connection, and is the pool's own wait for a connection when
    a caller names none.
    """
    import psycopg
    from psycopg_pool import ConnectionPool

    with psycopg.connect(dsn, connect_timeout=connect_timeout(wait)) as conn:
        ensure_schema(conn)
    return ConnectionPool(
        dsn,
        min_size=1,
        max_size=max_size,
        configure=configure_connection,
        open=True,
        name=name,
        timeout=wait,
        # While the server is away the pool retries each lost connection with a doubling
        # delay; left at its 5 minutes, the delay grows past a minute, and a server back
        # sooner waits for that. Giving up after a few waits' worth instead lets the next
        # request start a fresh attempt, so connections come back within about a wait.
        reconnect_timeout=max(3 * wait, 10.0),
        kwargs={"connect_timeout": connect_timeout(wait)},
    )


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """What every connection of a store's pool is set to: an append is acknowledged only
    once its commit is durable (whatever the server's default); reads run outside any
    transaction (appends open their own), so nothing is left open between uses."""
    conn.autocommit = True
    conn.execute("SET synchronous_commit = on")


def connect_timeout(wait: float) -> int:
    """libpq's ``connect_timeout`` for a wait of ``wait`` seconds (whole seconds, at
    least 2: libpq reads anything less as 2)."""
    return max(2, math.ceil(wait))
