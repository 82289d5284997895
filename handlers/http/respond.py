"""Answer a request from a worker thread: the work and its JSON encoding run off the
event loop (see :meth:`Hub.run`), only the finished bytes go out on it."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from aiohttp import web

from .hub import Hub

__all__ = ["answer"]


async def answer(hub: Hub, work: Callable[[], object], *, status: int = 200) -> web.Response:
    """``work()`` (the service call) on a worker thread, its result (builtins, a msgspec
    Struct, a TypedDict) as a JSON response.

    A domain error raised by ``work`` propagates to the error middleware as before.
    """
    body = await hub.run(lambda: msgspec.json.encode(work()))
    return web.Response(body=body, status=status, content_type="application/json")
