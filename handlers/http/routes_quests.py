"""Quests: health, list, create, show, post a message, pause/stop/resume, the runner,
archive/unarchive and delete.

Bodies are read on the loop; the service calls (opening quests, appending, git) run on
a worker thread (:meth:`Hub.run`)."""

from __future__ import annotations

from typing import Annotated

from aiohttp import web
from msgspec import Meta

from ds_events.services import quest as quest_service
from ds_events.services.commands import Command, decode_command
from ds_events.services.quest import listing
from ds_events.services.runtime import removal, steering

from .errors import read_json
from .keys import HUB
from .params import flag_param
from .respond import answer

__all__ = ["routes", "NewQuest"]

routes = web.RouteTableDef()


class NewQuest(Command):
    """The body of ``POST /api/quests`` (what ``ds quest new`` takes)."""

    title: Annotated[str, Meta(description="One-line title of the quest.")]
    id: Annotated[str | None, Meta(description="Quest id; default: from the title.")] = None
    brief: str = ""


@routes.get("/api/health")
async def health(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    return await answer(hub, lambda: {"status": "ok", "quests": len(hub.home.quest_ids()), "streams": hub.open_streams})


@routes.get("/api/quests")
async def list_quests(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    archived = flag_param(request, "archived")  # archived quests too (each row says archived)
    return await answer(hub, lambda: listing.list_quests(hub.home, hub.quest, archived=archived))


@routes.post("/api/quests")
async def create_quest(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    cmd = decode_command(NewQuest, await read_json(request))

    def work() -> dict[str, object]:
        q = hub.adopt(hub.home.create_quest(cmd.title, quest_id=cmd.id, brief=cmd.brief, actor="daemon"))
        return {"quest_id": q.id, "root": str(q.root), "last_seq": q.log.last_seq}

    return await answer(hub, work, status=201)


@routes.get("/api/quests/{quest_id}")
async def show_quest(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    return await answer(hub, lambda: listing.show_quest(hub.quest(qid)))


@routes.post("/api/quests/{quest_id}/messages")
async def post_message(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)  # an unknown quest is a 404 before the body is judged
    cmd = decode_command(quest_service.PostMessage, await read_json(request))

    def work() -> dict[str, object]:
        event = quest_service.post_message(hub.quest(qid), cmd, source="http")
        return {"seq": event.seq, "id": event.id}

    return await answer(hub, work, status=201)


@routes.post("/api/quests/{quest_id}/control")
async def control(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)
    cmd = decode_command(quest_service.Control, await read_json(request))

    def work() -> dict[str, object]:
        q = hub.quest(qid)
        event = steering.control(q, cmd)
        return {"seq": event.seq, "action": cmd.action, "status": q.state("status").status}

    return await answer(hub, work)


@routes.post("/api/quests/{quest_id}/runner")
async def set_runner(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)
    cmd = decode_command(quest_service.SetRunner, await read_json(request))

    def work() -> dict[str, object]:
        event = quest_service.set_runner(hub.quest(qid), cmd)
        return {"seq": event.seq, "runner": cmd.runner, "model": cmd.model}

    return await answer(hub, work)


@routes.post("/api/quests/{quest_id}/archive")
async def archive(request: web.Request) -> web.Response:
    """Archive the quest (body: optional ``reason``); ``quest_archived`` when it is
    already, ``turn_running`` while a turn runs."""
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)
    cmd = decode_command(quest_service.Archive, await read_json(request))
    return await answer(hub, lambda: quest_service.archive(hub.quest(qid), cmd))


@routes.post("/api/quests/{quest_id}/unarchive")
async def unarchive(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)
    cmd = decode_command(quest_service.Archive, await read_json(request))
    return await answer(hub, lambda: quest_service.unarchive(hub.quest(qid), cmd))


@routes.delete("/api/quests/{quest_id}")
async def delete_quest(request: web.Request) -> web.Response:
    """Delete the quest: ``{"confirm": true}`` or ``?confirm=true`` (Content-Type:
    application/json either way, as for every DELETE); without it ``confirm_required``
    with the plan of what would go; ``turn_running`` while a turn runs."""
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    await hub.run(hub.quest, qid)
    confirm = flag_param(request, "confirm")
    cmd = decode_command(quest_service.DeleteQuest, await read_json(request))

    confirmed = confirm or cmd.confirm

    def work() -> quest_service.DeletePlan:
        done = removal.delete_quest(hub.quest(qid), confirm=confirmed)
        hub.forget(qid)
        return done

    if not confirmed:  # refused with the plan: nothing to let go of
        return await answer(hub, work)
    async with hub.letting_go(qid):  # this daemon's scheduler ends before the quest goes
        return await answer(hub, work)
