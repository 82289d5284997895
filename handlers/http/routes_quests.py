"""Quests: health, list, create, show, post a message, pause/stop/resume.

Bodies are read on the loop; the service calls (opening quests, appending, git) run on
a worker thread (:meth:`Hub.run`)."""

from __future__ import annotations

from typing import Annotated

import msgspec
from aiohttp import web
from msgspec import Meta

from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering
from ds_events.services.commands import Command, decode_command

from .errors import read_json
from .hub import Hub
from .respond import answer

__all__ = ["add_routes", "NewQuest"]


class NewQuest(Command):
    """The body of ``POST /api/quests`` (what ``ds quest new`` takes)."""

    title: Annotated[str, Meta(description="One-line title of the quest.")]
    id: Annotated[str | None, Meta(description="Quest id; default: from the title.")] = None
    brief: str = ""


def add_routes(app: web.Application, hub: Hub) -> None:
    async def health(request: web.Request) -> web.Response:
        return await answer(hub, lambda: {"status": "ok", "quests": len(hub.home.quest_ids()), "streams": hub.open_streams})

    async def list_quests(request: web.Request) -> web.Response:
        return await answer(hub, lambda: {"quests": [_summary(hub, qid) for qid in hub.home.quest_ids()]})

    async def create_quest(request: web.Request) -> web.Response:
        cmd = decode_command(NewQuest, await read_json(request))

        def work() -> dict[str, object]:
            q = hub.adopt(hub.home.create_quest(cmd.title, quest_id=cmd.id, brief=cmd.brief, actor="daemon"))
            return {"quest_id": q.id, "root": str(q.root), "last_seq": q.log.last_seq}

        return await answer(hub, work, status=201)

    async def show_quest(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> dict[str, object]:
            q = hub.quest(qid)
            return msgspec.to_builtins(q.state("status")) | {"root": str(q.root)}

        return await answer(hub, work)

    async def post_message(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        await hub.run(hub.quest, qid)  # an unknown quest is a 404 before the body is judged
        cmd = decode_command(quest_service.PostMessage, await read_json(request))

        def work() -> dict[str, object]:
            event = quest_service.post_message(hub.quest(qid), cmd, source="http")
            return {"seq": event.seq, "id": event.id}

        return await answer(hub, work, status=201)

    async def control(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        await hub.run(hub.quest, qid)
        cmd = decode_command(quest_service.Control, await read_json(request))

        def work() -> dict[str, object]:
            q = hub.quest(qid)
            event = steering.control(q, cmd)
            return {"seq": event.seq, "action": cmd.action, "status": q.state("status").status}

        return await answer(hub, work)

    async def set_runner(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        await hub.run(hub.quest, qid)
        cmd = decode_command(quest_service.SetRunner, await read_json(request))

        def work() -> dict[str, object]:
            event = quest_service.set_runner(hub.quest(qid), cmd)
            return {"seq": event.seq, "runner": cmd.runner, "model": cmd.model}

        return await answer(hub, work)

    app.router.add_get("/api/health", health)
    app.router.add_get("/api/quests", list_quests)
    app.router.add_post("/api/quests", create_quest)
    app.router.add_get("/api/quests/{quest_id}", show_quest)
    app.router.add_post("/api/quests/{quest_id}/messages", post_message)
    app.router.add_post("/api/quests/{quest_id}/control", control)
    app.router.add_post("/api/quests/{quest_id}/runner", set_runner)


def _summary(hub: Hub, quest_id: str) -> dict[str, object]:
    """A list row: what the page's quest list shows (``updated_at``: the last event's time;
    ``open_requests``: decision requests still waiting for the user)."""
    q = hub.quest(quest_id)
    q.views.catch_up(keep=False)
    # Lent, not handed out: the page polls this list, and a handed-out state makes the
    # next event copy it.
    with q.views.lend("status") as s, q.views.lend("interactions") as inbox:
        return {
            "quest_id": quest_id, "title": s.title, "status": s.status, "anchor": s.anchor, "last_seq": s.last_seq,
            "updated_at": s.updated_at, "open_requests": len(inbox.open_requests),
        }  # fmt: skip
