"""Connections to the database: the pool stores share, and what each connection is set to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .schema import ensure_schema

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["open_pool", "configure_connection", "CONNECT_TIMEOUT"]

CONNECT_TIMEOUT = 10  # seconds: opening a store fails after this long without a connection


def open_pool(dsn: str, *, max_size: int, name: str) -> ConnectionPool:
    """A connection pool on ``dsn`` for stores to share, the events table ensured once.
    It connects once directly first, so a wrong address or a server that is down fails
    here at once (``psycopg.Error``), not after the pool's wait for its first connection."""
    import psycopg
    from psycopg_pool import ConnectionPool

    with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT) as conn:
        ensure_schema(conn)
    return ConnectionPool(dsn, min_size=1, max_size=max_size, configure=configure_connection, open=True, name=name)


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """What every connection of a store's pool is set to: an append is acknowledged only
    once its commit is durable (whatever the server's default); reads run outside any
    transaction (appends open their own), so nothing is left open between uses."""
    conn.autocommit = True
    conn.execute("SET synchronous_commit = on")
