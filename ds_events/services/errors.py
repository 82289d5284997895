"""Domain errors with stable codes. Adapters map them to exit codes, HTTP statuses or
MCP ``ToolError``s; services raise them before anything is written."""

from __future__ import annotations

from typing import Any

__all__ = ["ServiceError", "NotFound", "Invalid", "Conflict"]


class ServiceError(Exception):
    """A request the service refuses. ``code`` is stable; ``details`` is JSON-able."""

    code = "error"
    http_status = 400

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class NotFound(ServiceError):
    code = "not_found"
    http_status = 404


class Invalid(ServiceError):
    code = "invalid"
    http_status = 400


class Conflict(ServiceError):
    code = "conflict"
    http_status = 409
