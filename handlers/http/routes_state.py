"""Read routes over the quest's state: artifacts, memory, bash sessions, git branches,
interactions (and the one write among them, a reply, through its service).

Every service call runs on a worker thread (:meth:`Hub.run`): a memory search waiting
for its index, a git walk or a session log read never holds up the streams. Memory calls
on one quest take turns (:meth:`Hub.with_memory`)."""

from __future__ import annotations

from typing import Any

import msgspec
from aiohttp import web

from ds_events.errors import Invalid
from ds_events.services import bash as bash_exec
from ds_events.services import interactions
from ds_events.services.memory import cards as memory_service
from ds_events.services.bash.commands import GetSession, ListSessions, ReadOutput
from ds_events.services.commands import decode_command, to_builtins
from ds_events.services.artifacts.checkpoints import git_graph
from ds_events.services.memory.commands import ListRecent, ReadCard, SearchCards
from projections import artifacts as artifacts_view
from projections import interactions as interactions_view

from .errors import read_json
from .hub import Hub
from .params import flag_param, int_param
from .respond import answer

__all__ = ["add_routes"]

_SCOPES = ("quest", "global", "both")


def add_routes(app: web.Application, hub: Hub) -> None:
    async def artifacts(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        kind = request.query.get("kind")

        def work() -> dict[str, Any]:
            q = hub.quest(qid)
            limit = int_param(request, "limit", 200, lo=1, hi=2000, code="invalid_limit")
            q.views.catch_up(keep=False)
            with q.views.lend("artifacts") as state:  # read in place: no copy of every record per request
                if kind is not None and kind not in state.counters:
                    raise Invalid(f"no artifacts of kind {kind!r}; kinds here: {', '.join(sorted(state.counters)) or 'none'}", code="invalid_filter", argument="kind")
                records = artifacts_view.newest_records(state, limit, kind=kind)[::-1]  # oldest first, as before
                return {"quest_id": q.id, "seq": state.last_seq, "counts": dict(state.counters),
                        "records": msgspec.to_builtins(records)}  # fmt: skip

        return await answer(hub, work)

    async def memory(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        kind = request.query.get("kind") or None
        scope = request.query.get("scope", "quest")
        text = request.query.get("q", "")

        def work() -> Any:
            hub.quest(qid)  # an unknown quest is a 404 whatever else is wrong
            limit = int_param(request, "limit", 10, lo=1, hi=100, code="invalid_limit")
            if text.strip():
                cmd: Any = SearchCards(query=text, kind=kind, limit=limit, scope=scope)
                return to_builtins(hub.with_memory(qid, lambda mem: memory_service.search(mem, cmd)))
            listing = ListRecent(kind=kind, limit=limit, scope=scope)
            return to_builtins(hub.with_memory(qid, lambda mem: memory_service.list_recent(mem, listing)))

        return await answer(hub, work)

    async def memory_card(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]
        cmd = ReadCard(card_id=request.match_info["card_id"], scope=request.query.get("scope", "quest"))
        return await answer(hub, lambda: to_builtins(hub.with_memory(qid, lambda mem: memory_service.read(mem, cmd))))

    async def bash_sessions(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> Any:
            q = hub.quest(qid)
            cmd = ListSessions(include_ended=flag_param(request, "include_ended"), limit=int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit"))
            return to_builtins(bash_exec.list_sessions(q, cmd))

        return await answer(hub, work)

    async def bash_session(request: web.Request) -> web.Response:
        qid, bid = request.match_info["quest_id"], request.match_info["bid"]
        return await answer(hub, lambda: to_builtins(bash_exec.get_session(hub.quest(qid), GetSession(id=bid))))

    async def bash_log(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> Any:
            q = hub.quest(qid)
            cmd = ReadOutput(
                id=request.match_info["bid"],
                tail=int_param(request, "tail", None, lo=1, code="invalid_cursor"),
                after_seq=int_param(request, "after", None, code="invalid_cursor"),
                before_seq=int_param(request, "before", None, code="invalid_cursor"),
                limit=int_param(request, "limit", None, lo=1, hi=2000, code="invalid_limit"),
            )
            return to_builtins(bash_exec.read_output(q, cmd))

        return await answer(hub, work)

    async def branches(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> dict[str, Any]:
            q = hub.quest(qid)
            max_commits = int_param(request, "commits", 200, lo=1, hi=5000, code="invalid_limit")
            return {"quest_id": q.id} | git_graph(q.repo(), q.state("artifacts"), max_commits=max_commits)

        return await answer(hub, work)

    async def interactions_list(request: web.Request) -> web.Response:
        qid = request.match_info["quest_id"]

        def work() -> dict[str, Any]:
            q = hub.quest(qid)
            limit = int_param(request, "limit", 20, lo=1, hi=500, code="invalid_limit")
            state = q.state("interactions")
            return {
                "quest_id": q.id,
                "seq": state.last_seq,
                "open_requests": msgspec.to_builtins([state.interactions[i] for i in state.open_requests if i in state.interactions]),
                "recent": msgspec.to_builtins(interactions_view.recent_interactions(state, limit)),
                "pending_messages": len(state.pending),
            }

        return await answer(hub, work)

    async def reply(request: web.Request) -> web.Response:
        qid, iid = request.match_info["quest_id"], request.match_info["iid"]
        await hub.run(hub.quest, qid)  # an unknown quest is a 404 before the body is judged
        body = await read_json(request)
        if not isinstance(body, dict):
            raise Invalid("the body must be a JSON object", code="invalid_argument", argument="")
        if "interaction_id" in body and body["interaction_id"] != iid:
            raise Invalid("interaction_id in the body differs from the one in the path", code="invalid_argument", argument="interaction_id")
        cmd = decode_command(interactions.Reply, body | {"interaction_id": iid})
        return await answer(hub, lambda: msgspec.to_builtins(interactions.reply(hub.quest(qid), cmd, source="http")), status=201)

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
