"""The read models of the views helper (``services/quest/read_models.py``): workflow, node
traces and the three Canvas views (JSON, or SVG with ``format=svg``); and a Canvas
node's details for the page (``services/views/nodes.py``).

Each runs on a worker thread (:meth:`Hub.run`): the branch view reads git, and any of
them may first fold events other processes appended."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ds_events.errors import Invalid

from .hub import Hub
from .params import int_param
from .respond import answer

__all__ = ["add_routes"]


def _models() -> Any:
    from ds_events.services.quest import read_models as read_models  # imported on first use (the views helper's module)

    return read_models


def add_routes(app: web.Application, hub: Hub) -> None:
    async def workflow(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> Any:
            q = hub.quest(qid)  # an unknown quest is a 404 whatever else is wrong
            limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
            return _models().workflow(q, limit=limit)

        return await answer(hub, work)

    async def node_traces(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        return await answer(hub, lambda: _models().node_traces(hub.quest(qid)))

    async def node_trace(request: web.Request) -> web.Response:
        qid, ref = request.match_info["quest_id"], request.match_info["ref"]
        return await answer(hub, lambda: _models().node_trace(hub.quest(qid), ref))

    async def node_details(request: web.Request) -> web.Response:
        qid, ref = request.match_info["quest_id"], request.match_info["ref"]
        from ds_events.services.views.nodes import node_details as details

        return await answer(hub, lambda: details(hub.quest(qid), ref))

    async def canvas(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        view = request.query.get("view", "branch")
        fmt = request.query.get("format", "json")

        def check() -> Any:
            q = hub.quest(qid)
            if fmt not in ("json", "svg"):
                raise Invalid(f"unknown format {fmt!r}: use json or svg", code="invalid_format", argument="format")
            return q

        if fmt == "svg":
            svg = await hub.run(lambda: _models().canvas_svg(check(), view))
            return web.Response(text=svg, content_type="image/svg+xml")
        return await answer(hub, lambda: _models().canvas(check(), view))

    app.router.add_get("/api/quests/{quest_id}/workflow", workflow)
    app.router.add_get("/api/quests/{quest_id}/node-traces", node_traces)
    app.router.add_get("/api/quests/{quest_id}/node-traces/{ref}", node_trace)
    app.router.add_get("/api/quests/{quest_id}/canvas", canvas)
    app.router.add_get("/api/quests/{quest_id}/nodes/{ref}", node_details)
