"""Bearer-token authentication: with a token configured, every route requires it."""

from __future__ import annotations

import hmac

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from .errors import error_response
from .page import is_public

__all__ = ["auth_middleware"]


def auth_middleware(token: str) -> Middleware:
    """A middleware refusing (401 ``unauthorized``) any request without ``Authorization:
    Bearer <token>``, except for the web page's own files (they hold no data, and the page
    must load to ask for the token). The comparison is constant-time, so timing reveals
    nothing."""
    expected = token.encode()

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD") and is_public(request.path):
            return await handler(request)
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), expected):
            resp = error_response(401, "unauthorized", "missing or wrong token: send Authorization: Bearer <token>")
            resp.headers["WWW-Authenticate"] = 'Bearer realm="ds-events"'
            return resp
        return await handler(request)

    return check
