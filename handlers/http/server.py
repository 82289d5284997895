"""The daemon's HTTP server: aiohttp's, with our answer to requests it refuses itself.

aiohttp parses the request line and headers before any handler or middleware runs. A
request it cannot parse — a request line over ``MAX_REQUEST_LINE`` bytes, a header
over ``MAX_HEADER_FIELD`` bytes, more than ``MAX_HEADERS`` headers, a bad method —
is answered by ``RequestHandler.handle_error``, with a text/plain 400 and the traceback
logged at error level. aiohttp has no public hook for that answer (aio-libs/aiohttp
#3287), so the server's connection handler is a subclass whose ``handle_error``
answers in our shape: 414 ``request_line_too_long``, 431 ``headers_too_large``, 400
``bad_request``; a client's malformed request is logged at debug level, not as our
error. aiohttp's limits stay as they are (they are the protection against a client
that streams an endless header); only the answer changes.

The parser's ``LineTooLong`` carries its limit but not which line was too long, so the
two limits differ by a few bytes: the limit in the error says which it was.

:func:`make_runner` also makes the server cancel a handler whose client went away
(aiohttp's ``handler_cancellation``, which its test server always uses): a stream ends
as soon as its client closes it instead of at its next write. Work a handler handed to
a worker thread is not cancelled with it (:meth:`Hub.run` shields it).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler

from .errors import error_body

__all__ = ["make_runner", "MAX_REQUEST_LINE", "MAX_HEADER_FIELD", "MAX_HEADERS"]

MAX_REQUEST_LINE = 8190  # aiohttp's default
MAX_HEADER_FIELD = 8192  # a header's name and value together; distinct from the line's, see above
MAX_HEADERS = 128  # aiohttp's default

log = logging.getLogger("ds_events.http.server")


def make_runner(app: web.Application, **kwargs: Any) -> web.AppRunner:
    """An ``AppRunner`` for ``app`` whose server answers its own refusals as JSON."""
    kwargs.setdefault("handle_signals", False)
    kwargs.setdefault("handler_cancellation", True)
    kwargs.setdefault("max_line_size", MAX_REQUEST_LINE)
    kwargs.setdefault("max_field_size", MAX_HEADER_FIELD)
    kwargs.setdefault("max_headers", MAX_HEADERS)
    return _Runner(app, **kwargs)


class _JsonErrors(RequestHandler):
    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # as aiohttp: an answer has begun, the connection is broken
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        if isinstance(exc, HttpProcessingError):
            self.log_debug("Refused a malformed request from %s: %s", request.remote, exc)
            status, body = _parse_error(exc)
        elif status == 504:
            body = error_body(code="timeout", message="the request took too long")
        else:  # an error no middleware caught: ours
            log.error("unhandled error on %s", getattr(request, "path", "?"), exc_info=exc)
            body = error_body(code="internal_error", message=f"{type(exc).__name__}: {exc}" if exc else "internal error")
        resp = web.json_response(body, status=status)
        resp.force_close()
        return resp


def _parse_error(exc: HttpProcessingError) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, LineTooLong):
        limit = exc.args[1] if len(exc.args) > 1 else None
        if limit == MAX_REQUEST_LINE:
            message = f"the request line (method, path and query) is longer than {MAX_REQUEST_LINE} bytes"
            return 414, error_body(code="request_line_too_long", max_bytes=MAX_REQUEST_LINE, message=message)
        message = f"a header (name and value) is longer than {MAX_HEADER_FIELD} bytes"
        return 431, error_body(code="headers_too_large", max_bytes=MAX_HEADER_FIELD, message=message)
    text = str(getattr(exc, "message", "") or exc)
    if isinstance(exc, BadHttpMessage) and "too many headers" in text.lower():
        message = f"the request has more than {MAX_HEADERS} headers"
        return 431, error_body(code="headers_too_large", max_headers=MAX_HEADERS, message=message)
    return 400, error_body(code="bad_request", message=f"the request is not valid HTTP/1.1: {text}")


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _JsonErrors(self, loop=self._loop, **self._kwargs)


class _Runner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        # aiohttp builds the app's Server here (after the app's startup); ours is the same
        # server, only handing each connection to _JsonErrors.
        plain = await super()._make_server()
        return _Server(
            plain.request_handler, request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation, loop=plain._loop, **plain._kwargs,
        )  # fmt: skip
