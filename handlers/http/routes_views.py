"""The quest's read models (``services/quest/read_models.py``): workflow, node traces and
the three Canvas views (JSON, or SVG with ``format=svg``); and a Canvas node's details
for the page (``services/views/nodes.py``).

Each runs on a worker thread (:meth:`Hub.run`): the branch view reads git, and any of
them may first fold events other processes appended."""

from __future__ import annotations

from aiohttp import web

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.services.quest import read_models
from ds_events.services.views import nodes

from .keys import HUB
from .params import int_param
from .respond import answer

__all__ = ["routes"]

routes = web.RouteTableDef()
_CANVAS_FORMATS = ("json", "svg")


@routes.get("/api/quests/{quest_id}/workflow")
async def workflow(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]

    def work() -> object:
        q = hub.quest(qid)  # an unknown quest is a 404 whatever else is wrong
        limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
        return read_models.workflow(q, limit=limit)

    return await answer(hub, work)


@routes.get("/api/quests/{quest_id}/node-traces")
async def node_traces(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    return await answer(hub, lambda: read_models.node_traces(hub.quest(qid)))


@routes.get("/api/quests/{quest_id}/node-traces/{ref}")
async def node_trace(request: web.Request) -> web.Response:
    hub, qid, ref = request.app[HUB], request.match_info["quest_id"], request.match_info["ref"]
    return await answer(hub, lambda: read_models.node_trace(hub.quest(qid), ref))


@routes.get("/api/quests/{quest_id}/canvas")
async def canvas(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    view = request.query.get("view", "branch")
    fmt = request.query.get("format", "json")

    def quest() -> Quest:
        q = hub.quest(qid)  # an unknown quest is a 404 before a bad format is a 400
        if fmt not in _CANVAS_FORMATS:
            raise Invalid(f"unknown format {fmt!r}: use json or svg", code="invalid_format", argument="format")
        return q

    if fmt == "svg":
        svg = await hub.run(lambda: read_models.canvas_svg(quest(), view))
        return web.Response(text=svg, content_type="image/svg+xml")
    return await answer(hub, lambda: read_models.canvas(quest(), view))


@routes.get("/api/quests/{quest_id}/nodes/{ref}")
async def node_details(request: web.Request) -> web.Response:
    hub, qid, ref = request.app[HUB], request.match_info["quest_id"], request.match_info["ref"]
    return await answer(hub, lambda: nodes.node_details(hub.quest(qid), ref))
