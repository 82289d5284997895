"""The read models of the views helper (``services/read_models.py``): workflow, node
traces and the three Canvas views (JSON, or SVG with ``format=svg``)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ds_events.errors import Invalid

from .hub import Hub
from .params import int_param

__all__ = ["add_routes"]


def _models() -> Any:
    from ds_events.services import read_models  # imported on first use (the views helper's module)

    return read_models


def add_routes(app: web.Application, hub: Hub) -> None:
    def quest(request: web.Request) -> Any:
        return hub.quest(request.match_info["quest_id"])

    async def workflow(request: web.Request) -> web.Response:
        q = quest(request)
        limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
        return web.json_response(_models().workflow(q, limit=limit))

    async def node_traces(request: web.Request) -> web.Response:
        q = quest(request)  # an unknown quest is a 404 whatever else is wrong
        return web.json_response(_models().node_traces(q))

    async def node_trace(request: web.Request) -> web.Response:
        q = quest(request)
        return web.json_response(_models().node_trace(q, request.match_info["ref"]))

    async def canvas(request: web.Request) -> web.Response:
        q = quest(request)
        view = request.query.get("view", "branch")
        fmt = request.query.get("format", "json")
        if fmt not in ("json", "svg"):
            raise Invalid(f"unknown format {fmt!r}: use json or svg", code="invalid_format", argument="format")
        if fmt == "svg":
            return web.Response(text=_models().canvas_svg(q, view), content_type="image/svg+xml")
        return web.json_response(_models().canvas(q, view))

    app.router.add_get("/api/quests/{quest_id}/workflow", workflow)
    app.router.add_get("/api/quests/{quest_id}/node-traces", node_traces)
    app.router.add_get("/api/quests/{quest_id}/node-traces/{ref}", node_trace)
    app.router.add_get("/api/quests/{quest_id}/canvas", canvas)
