"""Read routes over the quest's state: artifacts, memory, bash sessions, git branches,
interactions (and the one write among them, a reply, through its service).

Each decodes its query and calls one service function; the answers are the services'
own results (``services/artifacts/listing.py``, ``services/interactions/queries.py``,
the memory and bash services). Every service call runs on a worker thread
(:meth:`Hub.run`): a memory search waiting for its index, a git walk or a session log
read never holds up the streams. Memory calls on one quest take turns
(:meth:`Hub.with_memory`)."""

from __future__ import annotations

from aiohttp import web

from ds_events.errors import Invalid
from ds_events.services import bash, interactions, memory
from ds_events.services.artifacts import listing as artifact_listing
from ds_events.services.commands import decode_command
from ds_events.services.interactions import queries as interaction_queries

from .errors import read_json
from .keys import HUB
from .params import flag_param, int_param
from .respond import answer

__all__ = ["routes"]

routes = web.RouteTableDef()
_QUEST = "/api/quests/{quest_id}"


@routes.get(f"{_QUEST}/artifacts")
async def artifacts(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    kind = request.query.get("kind")

    def work() -> object:
        q = hub.quest(qid)  # an unknown quest is a 404 whatever else is wrong
        limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
        return artifact_listing.list_artifacts(q, limit=limit, kind=kind)

    return await answer(hub, work)


@routes.get(f"{_QUEST}/memory")
async def memory_cards(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    kind = request.query.get("kind") or None
    scope = request.query.get("scope", "quest")
    text = request.query.get("q", "")

    def work() -> object:
        hub.quest(qid)  # an unknown quest is a 404 whatever else is wrong
        limit = int_param(request, "limit", 10, lo=1, hi=100, code="invalid_limit")
        if text.strip():
            search = memory.SearchCards(query=text, kind=kind, limit=limit, scope=scope)
            return hub.with_memory(qid, lambda mem: memory.search(mem, search))
        recent = memory.ListRecent(kind=kind, limit=limit, scope=scope)
        return hub.with_memory(qid, lambda mem: memory.list_recent(mem, recent))

    return await answer(hub, work)


@routes.get(f"{_QUEST}/memory/{{card_id}}")
async def memory_card(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]
    cmd = memory.ReadCard(card_id=request.match_info["card_id"], scope=request.query.get("scope", "quest"))
    return await answer(hub, lambda: hub.with_memory(qid, lambda mem: memory.read(mem, cmd)))


@routes.get(f"{_QUEST}/bash/sessions")
async def bash_sessions(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]

    def work() -> object:
        q = hub.quest(qid)
        include_ended = flag_param(request, "include_ended")
        limit = int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit")
        return bash.list_sessions(q, bash.ListSessions(include_ended=include_ended, limit=limit))

    return await answer(hub, work)


@routes.get(f"{_QUEST}/bash/sessions/{{bid}}")
async def bash_session(request: web.Request) -> web.Response:
    hub, qid, bid = request.app[HUB], request.match_info["quest_id"], request.match_info["bid"]
    return await answer(hub, lambda: bash.get_session(hub.quest(qid), bash.GetSession(id=bid)))


@routes.get(f"{_QUEST}/bash/sessions/{{bid}}/log")
async def bash_log(request: web.Request) -> web.Response:
    hub, qid, bid = request.app[HUB], request.match_info["quest_id"], request.match_info["bid"]

    def work() -> object:
        q = hub.quest(qid)
        cmd = bash.ReadOutput(
            id=bid,
            tail=int_param(request, "tail", None, lo=1, code="invalid_cursor"),
            after_seq=int_param(request, "after", None, code="invalid_cursor"),
            before_seq=int_param(request, "before", None, code="invalid_cursor"),
            limit=int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit"),
        )
        return bash.read_output(q, cmd)

    return await answer(hub, work)


@routes.get(f"{_QUEST}/git/branches")
async def branches(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]

    def work() -> object:
        q = hub.quest(qid)
        max_commits = int_param(request, "commits", 200, lo=1, hi=5000, code="invalid_limit")
        return artifact_listing.branch_graph(q, max_commits=max_commits)

    return await answer(hub, work)


@routes.get(f"{_QUEST}/interactions")
async def interactions_list(request: web.Request) -> web.Response:
    hub, qid = request.app[HUB], request.match_info["quest_id"]

    def work() -> object:
        q = hub.quest(qid)
        limit = int_param(request, "limit", 20, lo=1, hi=500, code="invalid_limit")
        return interaction_queries.list_interactions(q, limit=limit)

    return await answer(hub, work)


@routes.post(f"{_QUEST}/interactions/{{iid}}/reply")
async def reply(request: web.Request) -> web.Response:
    hub, qid, iid = request.app[HUB], request.match_info["quest_id"], request.match_info["iid"]
    await hub.run(hub.quest, qid)  # an unknown quest is a 404 before the body is judged
    body = await read_json(request)
    if not isinstance(body, dict):
        raise Invalid("the body must be a JSON object", code="invalid_argument", argument="")
    if "interaction_id" in body and body["interaction_id"] != iid:
        raise Invalid("interaction_id in the body differs from the one in the path", code="invalid_argument", argument="interaction_id")
    cmd = decode_command(interactions.Reply, body | {"interaction_id": iid})
    return await answer(hub, lambda: interactions.reply(hub.quest(qid), cmd, source="http"), status=201)
