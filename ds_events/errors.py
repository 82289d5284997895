"""Domain errors with stable codes: the one vocabulary every edge speaks.

This module imports nothing of ours, so every layer may raise these. Services raise
them before anything is written; adapters choose how to show them at the edge (an exit
code and one line in the CLI, a ``ToolError`` whose text is ``{"error": code, ...}`` in
MCP, an HTTP status in the daemon). The mapping of codes to transport details lives in
the adapters, never here.

Every code is catalogued once, by the area that raises it (:class:`ErrorCode`): each
domain's ``ds_events/services/<domain>/errors.py``, the command vocabulary's in
``ds_events/services/commands.py``, the edges' own in ``handlers``. A test holds the
catalogues and the raise sites equal; ``docs/errors.md`` lists them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "ServiceError",
    "NotFound",
    "Invalid",
    "Conflict",
    "LogError",
    "DiskFull",
    "LogUnavailable",
    "LogConnectionLost",
    "LogTimeout",
    "LogDatabaseError",
    "ErrorCode",
    "catalogue",
    "CODES",
]


class ServiceError(Exception):
    """A request the service refuses. ``code`` is stable; ``details`` is JSON-able."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class NotFound(ServiceError):
    """The quest, card, session ... named in the request does not exist."""

    code = "not_found"


class Invalid(ServiceError):
    """The request itself is wrong: a bad value, a missing field, an unknown option."""

    code = "invalid"


class Conflict(ServiceError):
    """The request is well formed but clashes with the current state."""

    code = "conflict"


class LogError(RuntimeError):
    """The log cannot be used as asked (closed, unreadable, corrupt where it must not be,
    a failed write or sync). Reopening the log, or ``ds verify`` / ``ds repair``, is the fix."""


class DiskFull(LogError):
    """A write to the log failed because the disk is full: nothing was appended."""

    code = "disk_full"


class LogUnavailable(LogError):
    """The store that holds the log cannot be used now: its database server is down,
    restarting, unreachable or refusing us. The log itself is fine; try again later.

    Every edge shows one code for the family, ``log_unavailable``, with the specific
    ``code`` of the subclass as ``reason`` (:meth:`to_dict`), so a caller that only
    needs to know "wait and retry" checks one code.
    """

    code = "log_unavailable"

    def to_dict(self) -> dict[str, Any]:
        return {"error": LogUnavailable.code, "reason": self.code, "message": str(self)}


class LogConnectionLost(LogUnavailable):
    """The connection to the database broke while an operation ran (the server
    restarted or crashed, the network failed) and no new one could finish it. An append
    in flight may or may not have been stored: retrying it with the same event ids
    stores it exactly once."""

    code = "log_connection_lost"


class LogTimeout(LogUnavailable):
    """No connection to the database came within the configured wait
    (``log.connection_wait_seconds``), or the server cancelled a statement that ran too
    long. Nothing was written."""

    code = "log_timeout"


class LogDatabaseError(LogUnavailable):
    """The database refused the operation for a reason waiting may not fix (a missing
    table or privilege, a read-only server); the message names the database's error.
    Nothing was written."""

    code = "log_database_error"


class ErrorCode(NamedTuple):
    """One entry of an error catalogue: the stable code, the HTTP status the daemon
    answers it with (400 for :class:`Invalid`, 404 for :class:`NotFound`, 409 for
    :class:`Conflict`, the edge's own otherwise), and what it means to whoever got it."""

    code: str
    status: int
    meaning: str


def catalogue(*entries: ErrorCode) -> dict[str, ErrorCode]:
    """A catalogue keyed by code; a code listed twice is a programming error."""
    found: dict[str, ErrorCode] = {}
    for entry in entries:
        if entry.code in found:
            raise ValueError(f"error code {entry.code!r} is catalogued twice")
        found[entry.code] = entry
    return found


# The codes the core raises (the home, config, paths, the log and its stores, migration).
CODES = catalogue(
    ErrorCode("unknown_quest", 404, "No quest of that id in this home: see `ds quest list`."),
    ErrorCode("invalid_quest_id", 400, "A quest id is 1-64 characters of a-z, 0-9, '_' and '-', starting with a letter or digit."),
    ErrorCode("reserved_quest_id", 400, "The id names one of the home's own logs (global memory, the baseline registry): choose another."),
    ErrorCode("quest_exists", 409, "A quest with that id exists already: choose another id."),
    ErrorCode("missing_title", 400, "A quest needs a non-empty title."),
    ErrorCode("invalid_title", 400, "A quest title is one line of at most 200 characters."),
    ErrorCode("unknown_projection", 404, "No projection of that name: the message lists the known ones."),
    ErrorCode("bad_config", 400, "config.yaml is not valid (YAML, a section, a key, a value): the message names it; fix or delete it."),
    ErrorCode("invalid_path", 400, "A path from the caller is not usable (empty, a directory where a file is needed)."),
    ErrorCode("path_outside_root", 400, "A path from the caller leads outside where it belongs (the quest, a worktree): give one inside."),
    ErrorCode("path_too_long", 400, "A component of the path is longer than the file system allows."),
    ErrorCode("event_too_large", 400, "An event is larger than log.max_event_bytes: nothing was written; keep large data in a file."),
    ErrorCode("file_store_only", 400, "The command works on the file store only (the JSONL log), not on PostgreSQL."),
    ErrorCode("same_store", 400, "ds store migrate: the log is in the target store already."),
    ErrorCode("history_differs", 409, "ds store migrate: the target holds a different history for this log; nothing was copied."),
    ErrorCode("disk_full", 507, "The disk is full: nothing was appended; free some space."),
    ErrorCode("log_unavailable", 503, "The log's store cannot be used now (its database is down); `reason` says why. Retry later."),
    ErrorCode(
        "log_connection_lost", 503,
        "reason of log_unavailable: the connection broke mid-operation; a retry with the same ids lands once.",
    ),
    ErrorCode("log_timeout", 503, "reason of log_unavailable: no connection came within log.connection_wait_seconds; nothing was written."),
    ErrorCode("log_database_error", 503, "reason of log_unavailable: the database refused the operation (a missing table or privilege)."),
)
