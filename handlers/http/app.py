"""The app factory: ``make_app(home, token=..., host=...)`` wires middlewares, routes and
the background resources (open quests, one follower per streamed quest).

Middlewares, outermost first: every failure in our error shape (``errors.py``); what a
page on another origin could send refused (``guard.py``); the request's own text
checked (``text.py``); the token, when one is configured (``auth.py``).
Serve it with :func:`handlers.http.server.make_runner` (``ds serve`` does), so that
requests aiohttp refuses before any middleware are answered in the same shape."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from ds_events.home import Home

from . import page, routes_quests, routes_state, routes_views
from .auth import auth_middleware
from .errors import error_middleware
from .guard import guard_middleware
from .hub import DEFAULT_WORKERS, Hub
from .stream import STREAM_SETTINGS, events_route
from .text import text_middleware

__all__ = ["make_app", "HUB", "HOME", "DEFAULT_MAX_BODY"]

HUB = web.AppKey("ds_hub", Hub)
HOME = web.AppKey("ds_home", Home)
DEFAULT_MAX_BODY = 1 << 20  # 1 MiB: a message is at most 100,000 characters


def make_app(
    home: Home,
    *,
    token: str | None = None,
    host: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    queue_size: int = 1000,
    poll_interval: float = 0.05,
    keepalive: float = 15.0,
    retry_ms: int = 2000,
    workers: int = DEFAULT_WORKERS,
) -> web.Application:
    """The daemon's aiohttp application over ``home``.

    ``token``: every ``/api`` route then requires ``Authorization: Bearer <token>`` (the
    page's own files at ``/`` and ``/static/`` do not: see ``page.py``).
    ``host``: the address the daemon listens on (``ds serve --host``): requests may
    name it in ``Host`` and ``Origin`` besides the loopback names (see ``guard.py``;
    the port is always the one the connection arrived at).
    ``queue_size``: live events a stream may have unsent before it is dropped.
    ``poll_interval``: how often the one follower per quest looks for other processes'
    appends. ``keepalive``: seconds between comment lines on an idle stream.
    """
    middlewares: list[Any] = [error_middleware, guard_middleware(host), text_middleware]
    if token:
        middlewares.append(auth_middleware(token))
    app = web.Application(middlewares=middlewares, client_max_size=max_body)
    hub = Hub(home, poll_interval=poll_interval, queue_size=queue_size, workers=workers)
    app[HOME] = home
    app[HUB] = hub
    app[STREAM_SETTINGS] = {"keepalive": keepalive, "retry_ms": retry_ms}

    async def events(request: web.Request) -> web.StreamResponse:
        return await events_route(request, hub)

    routes_quests.add_routes(app, hub)
    app.router.add_get("/api/quests/{quest_id}/events", events)
    routes_views.add_routes(app, hub)
    routes_state.add_routes(app, hub)
    page.add_routes(app)

    async def hub_ctx(app: web.Application) -> AsyncIterator[None]:
        yield
        await hub.close()  # followers cancelled and awaited, running calls waited for, quests closed

    async def end_streams(app: web.Application) -> None:
        hub.end_streams()  # open streams write their last frame and end cleanly

    app.cleanup_ctx.append(hub_ctx)
    app.on_shutdown.append(end_streams)
    return app
