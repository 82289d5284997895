"""One middleware that turns every failure into ``{"error": code, "message": ...}``.

Domain errors keep the code the service gave them (the MCP tools and the CLI show the
same codes); the HTTP status is chosen here, at the edge. Bad input never becomes a 500.

A client that goes away mid-request is not an error: the ``ConnectionError`` that the
next read or write raises (``ConnectionResetError``, aiohttp's
``ClientConnectionResetError``) is logged at debug level, and the answer goes nowhere.
Streams end on it themselves (``stream.py``); this catches it for every other route.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from ds_events.errors import Conflict, DiskFull, LogError, LogUnavailable, NotFound, ServiceError

from .body import parse_json

__all__ = ["error_middleware", "error_response", "read_json", "status_of", "client_gone"]

log = logging.getLogger("ds_events.http")


def status_of(exc: ServiceError) -> int:
    """Invalid -> 400, NotFound -> 404, Conflict -> 409, any other refusal -> 400."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    return 400


def error_response(status: int, code: str, message: str, **extra: Any) -> web.Response:
    return web.json_response({"error": code, "message": message, **extra}, status=status)


async def read_json(request: web.Request) -> Any:
    """The request body as JSON (an empty body is ``{}``), or ``Invalid``: ``invalid_json``,
    ``too_deeply_nested`` (see ``body.py``)."""
    raw = await request.read()  # over client_max_size: HTTPRequestEntityTooLarge (413)
    return parse_json(raw)


def client_gone(request: web.BaseRequest) -> bool:
    """The client closed the connection (so nothing more can be written to it)."""
    transport = request.transport
    return transport is None or transport.is_closing()


# aiohttp's own refusals, in our vocabulary.
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 401: "unauthorized"}


@web.middleware
async def error_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except ServiceError as exc:
        return web.json_response(exc.to_dict(), status=status_of(exc))
    except web.HTTPRequestEntityTooLarge:
        limit = request.app._client_max_size  # noqa: SLF001 (aiohttp keeps it only there)
        return error_response(413, "body_too_large", f"the body is larger than {limit} bytes", max_bytes=limit)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, "http_error")
        message = f"no route {request.method} {request.path}" if exc.status == 404 else exc.reason
        return error_response(exc.status, code, message)
    except DiskFull as exc:
        return error_response(507, "disk_full", f"{exc}: free some space; nothing was written")
    except LogUnavailable as exc:  # the store's server is away: log_unavailable, the specific code as reason
        return web.json_response(exc.to_dict(), status=503)
    except LogError as exc:
        return error_response(503, "log_unavailable", f"{exc}; run `ds verify`")
    except ConnectionError as exc:
        if not client_gone(request):
            log.exception("unhandled error on %s %s", request.method, request.path)  # a connection of ours (a webhook, ...)
            return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")
        log.debug("%s %s: the client went away (%s)", request.method, request.path, type(exc).__name__)
        # Nobody reads this answer; aiohttp's attempt to write it fails quietly.
        return error_response(499, "client_closed_request", "the client closed the connection before the answer")
    except Exception as exc:  # our bug: say so in the same shape, and log it
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")
