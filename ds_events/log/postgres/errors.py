"""Database failures as the store contract's errors."""

from __future__ import annotations

from ...errors import DiskFull, LogError, ServiceError

__all__ = ["as_log_error"]


def as_log_error(exc: BaseException, what: str) -> BaseException:
    """A database failure as the store contract's error (``DiskFull`` for a full disk)."""
    import psycopg

    if isinstance(exc, (LogError, ServiceError)) or not isinstance(exc, psycopg.Error):
        return exc
    if isinstance(exc, psycopg.errors.DiskFull):
        return DiskFull(f"{what}: the database server's disk is full: {exc}")
    return LogError(f"{what}: {type(exc).__name__}: {exc}".rstrip(": "))
