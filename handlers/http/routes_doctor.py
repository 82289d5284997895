"""``GET /api/doctor``: the report ``ds doctor --json`` prints, for this daemon's home
(:mod:`ds_events.doctor` does the work; :mod:`.doctor_runs` shares one run between
requests). Always 200: a failed check is part of the answer (``ok: false``), not an
error of the request."""

from __future__ import annotations

import msgspec
from aiohttp import web

from .keys import DOCTOR, HOME

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/doctor")
async def doctor(request: web.Request) -> web.Response:
    report = await request.app[DOCTOR].report(request.app[HOME])
    return web.Response(body=msgspec.json.encode(report), content_type="application/json")
