"""One middleware that turns every failure into ``{"error": code, "message": ...}``.

Domain errors keep the code the service gave them (the MCP tools and the CLI show the
same codes); the HTTP status is chosen here, at the edge. Bad input never becomes a 500.

A client that goes away mid-request is not an error: the ``ConnectionError`` that the
next read or write raises (``ConnectionResetError``, aiohttp's
``ClientConnectionResetError``) is logged at debug level, and the answer goes nowhere.
Streams end on it themselves (``stream.py``); this catches it for every other route.

``CODES`` catalogues the codes the HTTP edge gives itself (the guard, the body and
cursor checks, aiohttp's own refusals, ``server.py``'s parse errors); the services'
codes are in their domains' catalogues, the shared ones (``invalid_argument``,
``invalid_limit``, ``invalid_text``, ``invalid_filter``) in the command vocabulary's.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from ds_events.errors import Conflict, DiskFull, ErrorCode, LogError, LogUnavailable, NotFound, ServiceError, catalogue

from .body import parse_json

__all__ = ["CODES", "error_middleware", "error_response", "error_body", "read_json", "status_of", "client_gone"]

log = logging.getLogger("ds_events.http")

CODES = catalogue(
    ErrorCode("unauthorized", 401, "The daemon has a token and the request does not carry it: send Authorization: Bearer <token>."),
    ErrorCode("misdirected_request", 421, "Host names none of the daemon's own addresses (a page under another name: DNS rebinding)."),
    ErrorCode("forbidden_origin", 403, "A browser says another page sent the request (Origin, Sec-Fetch-Site): only the daemon's may."),
    ErrorCode("unsupported_media_type", 415, "A POST whose Content-Type is not application/json (a form or text another page can send)."),
    ErrorCode("body_too_large", 413, "The body is larger than the daemon accepts (max_bytes)."),
    ErrorCode("too_deeply_nested", 400, "The body nests arrays or objects deeper than the daemon decodes (max_depth)."),
    ErrorCode("invalid_json", 400, "The body is not UTF-8 JSON (or holds a number that is not finite)."),
    ErrorCode("request_line_too_long", 414, "The request line (method, path and query) is longer than the server reads (max_bytes)."),
    ErrorCode("headers_too_large", 431, "A header is longer, or the headers more, than the server reads (max_bytes, max_headers)."),
    ErrorCode("bad_request", 400, "The request is not valid HTTP/1.1 (the server could not parse it)."),
    ErrorCode("not_found", 404, "No route for this method and path, or no file of the page by that name."),
    ErrorCode("method_not_allowed", 405, "The path exists, but not for this method."),
    ErrorCode("http_error", 400, "Another refusal of the HTTP server's own; the answer's status is the server's."),
    ErrorCode("timeout", 504, "The request took longer than the server waits for an answer."),
    ErrorCode("internal_error", 500, "A bug of the daemon's: the message names the exception, the daemon's log has the traceback."),
    ErrorCode("client_closed_request", 499, "The client closed the connection before the answer (nobody reads this one)."),
    ErrorCode("invalid_cursor", 400, "after, before, tail or Last-Event-ID is not a seq the page or stream can start "
                                     "from; a session/list cursor is not one ds acp handed out."),
    ErrorCode("cursor_beyond_head", 400, "The cursor is beyond the log's head (last_seq): the client follows another log; start again."),
    ErrorCode("invalid_format", 400, "format names no format of the route (events: raw or acp; canvas: json or svg)."),
)  # fmt: skip


def status_of(exc: ServiceError) -> int:
    """Invalid -> 400, NotFound -> 404, Conflict -> 409, any other refusal -> 400."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    return 400


def error_response(status: int, code: str, message: str, **extra: Any) -> web.Response:
    """``{"error": code, "message": message, **extra}`` with ``status``."""
    return web.json_response({"error": code, "message": message, **extra}, status=status)


def error_body(*, code: str, **fields: Any) -> dict[str, Any]:
    """``{"error": code, **fields}``, the fields in the order given (for answers made
    where no middleware runs: ``server.py``)."""
    return {"error": code, **fields}


async def read_json(request: web.Request) -> Any:
    """The request body as JSON (an empty body is ``{}``), or ``Invalid``: ``invalid_json``,
    ``too_deeply_nested`` (see ``body.py``)."""
    raw = await request.read()  # over client_max_size: HTTPRequestEntityTooLarge (413)
    return parse_json(raw)


def client_gone(request: web.BaseRequest) -> bool:
    """The client closed the connection (so nothing more can be written to it)."""
    transport = request.transport
    return transport is None or transport.is_closing()


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except ServiceError as exc:
        return web.json_response(exc.to_dict(), status=status_of(exc))
    except web.HTTPRequestEntityTooLarge:
        limit = request.app._client_max_size  # aiohttp keeps it only there
        return error_response(413, "body_too_large", f"the body is larger than {limit} bytes", max_bytes=limit)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_refusal(request, exc)
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


def _http_refusal(request: web.Request, exc: web.HTTPException) -> web.Response:
    """aiohttp's own refusals (no route, a method the route lacks, ...) in our vocabulary."""
    if exc.status == 404:
        return error_response(404, "not_found", f"no route {request.method} {request.path}")
    if exc.status == 405:
        return error_response(405, "method_not_allowed", exc.reason)
    if exc.status == 401:
        return error_response(401, "unauthorized", exc.reason)
    return error_response(exc.status, "http_error", exc.reason)
