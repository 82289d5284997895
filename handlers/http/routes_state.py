"""Read routes over the quest's state: artifacts, memory, bash sessions, git branches,
interactions (and the one write among them, a reply, through its service)."""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from ds_events.errors import Invalid
from ds_events.services import bash_exec, interactions
from ds_events.services import memory as memory_service
from ds_events.services.bash_commands import GetSession, ListSessions, ReadOutput
from ds_events.services.commands import decode_command, to_builtins
from ds_events.services.git import git_graph
from ds_events.services.memory_commands import ListRecent, ReadCard, SearchCards
from projections import interactions as interactions_view

from .errors import read_json
from .hub import Hub
from .params import flag_param, int_param

__all__ = ["add_routes"]

_SCOPES = ("quest", "global", "both")


def add_routes(app: web.Application, hub: Hub) -> None:
    def quest(request: web.Request) -> Any:
        return hub.quest(request.match_info["quest_id"])

    async def artifacts(request: web.Request) -> web.Response:
        q = quest(request)
        kind = request.query.get("kind")
        limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
        q.views.catch_up(keep=False)
        with q.views.lend("artifacts") as state:  # read in place: no copy of every record per request
            if kind is not None and kind not in state.counters:
                raise Invalid(f"no artifacts of kind {kind!r}; kinds here: {', '.join(sorted(state.counters)) or 'none'}", code="invalid_filter", argument="kind")
            records = [r for r in state.records.values() if kind is None or r.kind == kind]
            body = {"quest_id": q.id, "seq": state.last_seq, "counts": dict(state.counters),
                    "records": msgspec.to_builtins(records[-limit:])}  # fmt: skip
        return web.json_response(body)

    async def memory(request: web.Request) -> web.Response:
        mem = hub.memory(request.match_info["quest_id"])
        limit = int_param(request, "limit", 10, lo=1, hi=100, code="invalid_limit")
        kind = request.query.get("kind") or None
        scope = request.query.get("scope", "quest")
        text = request.query.get("q", "")
        if text.strip():
            return web.json_response(to_builtins(memory_service.search(mem, SearchCards(query=text, kind=kind, limit=limit, scope=scope))))
        return web.json_response(to_builtins(memory_service.list_recent(mem, ListRecent(kind=kind, limit=limit, scope=scope))))

    async def memory_card(request: web.Request) -> web.Response:
        mem = hub.memory(request.match_info["quest_id"])
        cmd = ReadCard(card_id=request.match_info["card_id"], scope=request.query.get("scope", "quest"))
        return web.json_response(to_builtins(memory_service.read(mem, cmd)))

    async def bash_sessions(request: web.Request) -> web.Response:
        cmd = ListSessions(include_ended=flag_param(request, "include_ended"), limit=int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit"))
        return web.json_response(to_builtins(bash_exec.list_sessions(quest(request), cmd)))

    async def bash_session(request: web.Request) -> web.Response:
        return web.json_response(to_builtins(bash_exec.get_session(quest(request), GetSession(id=request.match_info["bid"]))))

    async def bash_log(request: web.Request) -> web.Response:
        cmd = ReadOutput(
            id=request.match_info["bid"],
            tail=int_param(request, "tail", None, lo=1, code="invalid_cursor"),
            after_seq=int_param(request, "after", None, code="invalid_cursor"),
            before_seq=int_param(request, "before", None, code="invalid_cursor"),
            limit=int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit"),
        )
        return web.json_response(to_builtins(bash_exec.read_output(quest(request), cmd)))

    async def branches(request: web.Request) -> web.Response:
        q = quest(request)
        graph = git_graph(q.repo(), q.state("artifacts"), max_commits=int_param(request, "commits", 200, lo=1, hi=5000, code="invalid_limit"))
        return web.json_response({"quest_id": q.id} | graph)

    async def interactions_list(request: web.Request) -> web.Response:
        q = quest(request)
        limit = int_param(request, "limit", 20, lo=1, hi=500, code="invalid_limit")
        state = q.state("interactions")
        return web.json_response({
            "quest_id": q.id,
            "seq": state.last_seq,
            "open_requests": msgspec.to_builtins([state.interactions[i] for i in state.open_requests if i in state.interactions]),
            "recent": msgspec.to_builtins(interactions_view.recent_interactions(state, limit)),
            "pending_messages": len(state.pending),
        })

    async def reply(request: web.Request) -> web.Response:
        q = quest(request)
        body = await read_json(request)
        if not isinstance(body, dict):
            raise Invalid("the body must be a JSON object", code="invalid_argument", argument="")
        if "interaction_id" in body and body["interaction_id"] != request.match_info["iid"]:
            raise Invalid("interaction_id in the body differs from the one in the path", code="invalid_argument", argument="interaction_id")
        cmd = decode_command(interactions.Reply, body | {"interaction_id": request.match_info["iid"]})
        event = interactions.reply(q, cmd, source="http")
        return web.json_response(msgspec.to_builtins(event), status=201)

    for path, handler in [
        ("artifacts", artifacts),
        ("memory", memory),
        ("memory/{card_id}", memory_card),
        ("bash/sessions", bash_sessions),
        ("bash/sessions/{bid}", bash_session),
        ("bash/sessions/{bid}/log", bash_log),
        ("git/branches", branches),
        ("interactions", interactions_list),
    ]:
        app.router.add_get(f"/api/quests/{{quest_id}}/{path}", handler)
    app.router.add_post("/api/quests/{quest_id}/interactions/{iid}/reply", reply)
