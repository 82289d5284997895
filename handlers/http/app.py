"""The app factory: ``make_app(home, token=..., host=...)`` wires middlewares, routes and
the background resources (open quests, one follower per streamed quest).

Middlewares, outermost first: every failure in our error shape (``errors.py``); what a
page on another origin could send refused (``guard.py``); the request's own text
checked (``text.py``); the token, when one is configured (``auth.py``).

Routes are module-level handlers, one ``web.RouteTableDef`` per module (``routes_quests``,
``stream``, ``routes_views``, ``routes_state``, ``routes_doctor``, ``page``); each reads
what it needs from ``request.app`` by a typed key (``keys.py``). The knobs are one frozen
:class:`~handlers.http.settings.Settings`.

The hub (the open quests, the worker threads, the log followers) lives in the app's
``cleanup_ctx``: it is made at startup, before the first request, and closed and awaited
at cleanup, after ``on_shutdown`` has ended the open streams. Before startup and after
cleanup there is none to use: :func:`running_hub` says so instead of a ``KeyError``.
Serve the app with :func:`handlers.http.server.make_runner` (``ds serve`` does), so that
requests aiohttp refuses before any middleware are answered in the same shape."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.typedefs import Middleware

from ds_events.home import Home

from . import page, routes_doctor, routes_quests, routes_state, routes_views, stream
from .auth import auth_middleware
from .doctor_runs import DoctorRuns
from .errors import error_middleware
from .guard import guard_middleware
from .hub import Hub
from .keys import DOCTOR, HOME, HUB, SETTINGS, STATIC_FILES
from .settings import (
    DEFAULT_KEEPALIVE,
    DEFAULT_MAX_BODY,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_QUEUE_SIZE,
    DEFAULT_RETRY_MS,
    DEFAULT_WORKERS,
    Settings,
    StreamSettings,
)
from .text import text_middleware

__all__ = ["make_app", "running_hub", "HUB", "HOME", "SETTINGS", "DEFAULT_MAX_BODY"]

# In registration order (aiohttp matches a request against routes in this order).
_ROUTES = (routes_quests.routes, stream.routes, routes_views.routes, routes_state.routes, routes_doctor.routes, page.routes)


def make_app(
    home: Home,
    *,
    token: str | None = None,
    host: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    queue_size: int = DEFAULT_QUEUE_SIZE,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    keepalive: float = DEFAULT_KEEPALIVE,
    retry_ms: int = DEFAULT_RETRY_MS,
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
    Values out of range (a ``workers`` of 0, say) raise ``ValueError``.
    """
    stream_settings = StreamSettings(keepalive=keepalive, retry_ms=retry_ms, queue_size=queue_size, poll_interval=poll_interval)
    settings = Settings(token=token, host=host, max_body=max_body, workers=workers, stream=stream_settings)
    middlewares: list[Middleware] = [error_middleware, guard_middleware(settings.host), text_middleware]
    if settings.token:
        middlewares.append(auth_middleware(settings.token))
    app = web.Application(middlewares=middlewares, client_max_size=settings.max_body)
    app[HOME] = home
    app[SETTINGS] = settings
    app[STATIC_FILES] = page.static_files()
    app[DOCTOR] = DoctorRuns()
    for table in _ROUTES:
        app.add_routes(table)
    app.cleanup_ctx.append(_hub)
    app.on_shutdown.append(_end_streams)
    return app


def running_hub(app: web.Application) -> Hub:
    """The app's hub: it exists from the app's startup (``await runner.setup()``, or a
    test client's start) on. Asked for before, a ``RuntimeError`` that says so."""
    hub = app.get(HUB)
    if hub is None:
        raise RuntimeError("the app has not started: its hub is made at startup (await AppRunner.setup() first)")
    return hub


async def _hub(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    # Nothing runs yet: the worker threads start with the first call, a follower with a
    # quest's first stream.
    hub = app[HUB] = Hub(
        app[HOME],
        poll_interval=settings.stream.poll_interval,
        queue_size=settings.stream.queue_size,
        workers=settings.workers,
    )
    yield
    await hub.close()  # followers cancelled and awaited, running calls waited for, quests closed


async def _end_streams(app: web.Application) -> None:
    hub = app.get(HUB)  # None when startup failed before the hub was made
    if hub is not None:
        hub.end_streams()  # open streams write their last frame and end cleanly
