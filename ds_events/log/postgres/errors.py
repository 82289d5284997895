"""Database failures as the store contract's errors: nothing of psycopg's leaves the store.

Every ``psycopg.Error`` (the pool's ``PoolTimeout`` is one) becomes a
:class:`~ds_events.errors.LogError` subclass with a stable code, chosen by what the
caller can do about it:

============================  ======================================================
``disk_full``                 the server's disk is full (:class:`DiskFull`)
``log_connection_lost``       the connection broke during the operation and no other
                              finished it: an append may have been stored; retry it
                              with the same ids
``log_timeout``               no connection within the wait, or a statement cancelled
                              by a server timeout: nothing was written
``log_unavailable``           the server cannot be reached or refuses connections
                              (down, starting, shutting down, too many clients)
``log_database_error``        anything else the database refused (a missing table or
                              privilege, a read-only server)
============================  ======================================================

The last four are :class:`~ds_events.errors.LogUnavailable`: the daemon answers 503
``log_unavailable`` with the code as ``reason``.
"""

from __future__ import annotations

from ...errors import (
    DiskFull,
    LogConnectionLost,
    LogDatabaseError,
    LogError,
    LogTimeout,
    LogUnavailable,
    ServiceError,
)

__all__ = ["as_log_error", "connection_lost"]


def as_log_error(
    exc: BaseException, what: str, *, lost: bool = False, wait: float | None = None, after: str = ""
) -> BaseException:
    """``exc`` as the store contract's error; ``what`` names the log (or the operation).

    ``lost``: the connection the operation ran on is broken (``conn.broken``), so the
    outcome on the server is unknown (``after``: what that means for the caller, said
    after the driver's words). ``wait``: the seconds a connection was waited for, said
    in a pool timeout's message. Errors that are already ours, and anything that
    is not a database error, are returned as they are.
    """
    import psycopg

    if isinstance(exc, (LogError, ServiceError)) or not isinstance(exc, psycopg.Error):
        return exc
    said = _said(exc)
    if isinstance(exc, psycopg.errors.DiskFull):
        return DiskFull(f"{what}: the database server's disk is full: {exc}")
    if _pool_timeout(exc):
        within = f" within {wait:g} s" if wait is not None else ""
        return LogTimeout(
            f"{what}: no connection to the database{within} (the server is down, restarting or unreachable, or "
            "every connection of this process's pool is busy): nothing was written; try again once it answers"
        )
    if lost:
        return connection_lost(what, exc, after=after)
    if isinstance(exc, psycopg.errors.QueryCanceled) or _connect_timeout(exc):
        return LogTimeout(f"{what}: the database did not answer in time ({said}): nothing was written")
    if isinstance(exc, psycopg.OperationalError):  # cannot connect, shutting down, too many clients, pool closed
        return LogUnavailable(f"{what}: the database cannot be used now ({said}); try again once it answers")
    return LogDatabaseError(f"{what}: the database refused the operation ({said}): nothing was written")


def connection_lost(what: str, exc: BaseException, *, after: str = "") -> LogConnectionLost:
    """The error for an operation whose connection ``exc`` broke (``after``: what
    happened next, e.g. no new connection within the wait)."""
    return LogConnectionLost(
        f"{what}: the connection to the database was lost ({_said(exc)}){after}: an append in flight may or may "
        "not have been stored; retrying it with the same event ids stores it once"
    )


# -- private helpers ----------------------------------------------------------------------


def _said(exc: BaseException) -> str:
    """The driver's words, on one line (a server's message may span several)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split()).rstrip(":")


def _pool_timeout(exc: BaseException) -> bool:
    try:
        from psycopg_pool import PoolTimeout
    except ImportError:  # psycopg without its pool: no store here opened one
        return False
    return isinstance(exc, PoolTimeout)


def _connect_timeout(exc: BaseException) -> bool:
    import psycopg

    timeout = getattr(psycopg.errors, "ConnectionTimeout", None)  # psycopg >= 3.2
    return timeout is not None and isinstance(exc, timeout)
