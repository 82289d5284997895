"""``GET /api/quests/{id}/events``: a JSON page, or a live stream (SSE or NDJSON).

Query: ``format=raw|acp``, ``after=<seq>``, ``before=<seq>`` (pages only), ``limit``,
``tail=1`` (the last ``limit`` events), ``types=a,b`` (event type tags).

A page is the quest domain's (:func:`ds_events.services.quest.event_pages.event_page`):
it costs what it returns, reading by position through the log's seq index.

A stream is catch-up then live with no gap and no duplicate at the seam: it subscribes
to the quest's follower FIRST (live events buffer from that moment), then reads the log
after the cursor page by page, then drains the buffer skipping every seq it already
sent. Each SSE event's ``id:`` is its seq, so a reconnecting client's ``Last-Event-ID``
resumes exactly. A subscriber whose buffer overflows gets a last ``event: dropped``
(``{"resume_after": seq}``) and the stream ends; it reconnects from there.

A cursor (``after=`` or ``Last-Event-ID``) beyond the log's head is refused, on pages
and streams alike: 400 ``cursor_beyond_head`` with the head's ``last_seq``. Every seq a
client was ever given is at most the head, so a higher one means it follows another
log (a quest recreated under the same id, another daemon's home): waiting silently for
that seq, or starting at the head as if nothing were wrong, would both hide it.

A client going away is not an error: the stream ends on the ``ConnectionError`` its
next write raises, or on the cancellation of its handler (``ds serve`` cancels the
handler of a closed connection at once, see ``server.py``), with one debug line.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
from collections.abc import Mapping
from typing import Literal

import msgspec
from aiohttp import web

from ds_events.errors import Invalid
from ds_events.events import Event
from ds_events.home import Quest
from ds_events.services.quest.event_pages import (
    Cards,
    EventFormat,
    EventPage,
    acp_notifier,
    card_json,
    event_json,
    event_page,
)

from .errors import client_gone
from .hub import Hub
from .keys import HUB, SETTINGS
from .params import int_param
from .respond import answer

__all__ = ["routes", "events", "EventsQuery", "parse_query", "MAX_LIMIT"]

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
CATCH_UP_PAGE = 500

log = logging.getLogger("ds_events.http.stream")
routes = web.RouteTableDef()


class EventsQuery(msgspec.Struct, kw_only=True):
    format: EventFormat = "raw"
    after: int = 0
    before: int | None = None
    limit: int = DEFAULT_LIMIT
    tail: bool = False
    types: list[str] | None = None
    mode: Literal["json", "sse", "ndjson"] = "json"


def parse_query(request: web.Request) -> EventsQuery:
    """Validated query parameters, or ``Invalid`` with the code of what is wrong."""
    q = request.query
    fmt = _format(q.get("format", "raw"))
    after = int_param(request, "after", 0, code="invalid_cursor")
    last_id = request.headers.get("Last-Event-ID")
    if last_id is not None and "after" not in q:
        try:
            after = int(last_id)
        except ValueError:
            raise Invalid(f"Last-Event-ID must be a seq, got {last_id!r}", code="invalid_cursor", argument="Last-Event-ID") from None
        if after < 0:
            raise Invalid("Last-Event-ID must be >= 0", code="invalid_cursor", argument="Last-Event-ID")
    before = int_param(request, "before", None, code="invalid_cursor")
    if before is not None and before < 1:
        raise Invalid("before must be >= 1", code="invalid_cursor", argument="before")
    limit = int_param(request, "limit", DEFAULT_LIMIT, lo=1, hi=MAX_LIMIT, code="invalid_limit")
    tail = _flag(q, "tail")
    types = None
    if "types" in q:
        types = [t for t in q["types"].split(",") if t]
        bad = [t for t in types if not _valid_type(t)]
        if not types or bad:
            raise Invalid(
                f"types must be comma-separated event types such as conversation.message, got {q['types']!r}",
                code="invalid_filter", argument="types",
            )  # fmt: skip
    accept = request.headers.get("Accept", "")
    mode: Literal["json", "sse", "ndjson"] = "json"
    if _flag(q, "stream") or "text/event-stream" in accept:
        mode = "sse"
    elif "application/x-ndjson" in accept:
        mode = "ndjson"
    if mode != "json" and before is not None:
        raise Invalid("a stream goes forward: before is for pages only", code="invalid_cursor", argument="before")
    if tail and (before is not None or "after" in q):
        raise Invalid("tail=1 reads the last events: give it no after or before", code="invalid_cursor", argument="tail")
    return EventsQuery(format=fmt, after=after, before=before, limit=limit, tail=tail, types=types, mode=mode)


@routes.get("/api/quests/{quest_id}/events")
async def events(request: web.Request) -> web.StreamResponse:
    hub, quest_id = request.app[HUB], request.match_info["quest_id"]
    query = parse_query(request)
    quest = await hub.run(hub.quest, quest_id)  # opening replays: never on the loop
    if query.after and not query.tail:
        head = await hub.run(lambda: quest.log.last_seq)
        if query.after > head:
            given = "Last-Event-ID" if "after" not in request.query else "after"
            raise Invalid(
                f"{given} {query.after} is beyond the head of {quest_id}'s log (seq {head}): this client follows "
                f"another log; start again from 0 (or any seq up to {head})",
                code="cursor_beyond_head", argument=given, last_seq=head,
            )  # fmt: skip
    if query.mode == "json":
        return await answer(hub, lambda: _page(quest, query))
    return await _stream(request, hub, quest, query)


def _page(quest: Quest, q: EventsQuery) -> EventPage:
    return event_page(quest, after=q.after, before=q.before, limit=q.limit, tail=q.tail, types=q.types, fmt=q.format)


# -- streams ------------------------------------------------------------------------------


async def _stream(request: web.Request, hub: Hub, quest: Quest, q: EventsQuery) -> web.StreamResponse:
    quest_id = quest.id
    cfg = request.app[SETTINGS].stream
    wanted = set(q.types) if q.types else None
    sse = q.mode == "sse"
    resp = web.StreamResponse(headers={
        "Content-Type": "text/event-stream; charset=utf-8" if sse else "application/x-ndjson",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
    })
    try:
        async with hub.subscribe(quest_id) as sub:  # live events buffer from here on: no gap
            await resp.prepare(request)
            if sse:
                await resp.write(f"retry: {cfg.retry_ms}\n\n".encode())
            last = q.after  # every seq <= last has been handled (sent or filtered out)
            if q.tail:
                start = await hub.run(quest.log.tail, q.limit, q.types)
                last = start[0].seq - 1 if start else quest.log.last_seq
            # acp: one card per tool call (every event folds, the filtered-out ones too).
            cards = await hub.run(lambda: acp_notifier(quest, after=last)) if q.format == "acp" else None
            # Catch-up from the log, page by page (a long backlog never sits in memory),
            # each page read on a worker thread: the loop serves the other streams meanwhile.
            while not sub.closed:
                page = await hub.run(quest.log.read, last, CATCH_UP_PAGE)
                if not page:
                    break
                for event in page:
                    frame = _frame(event, q, quest_id, cards)
                    if wanted is None or event.type in wanted:
                        await resp.write(frame)
                    last = event.seq
            # Live: the buffer, skipping what catch-up already sent.
            while True:
                if sub.dropped:
                    await resp.write(_dropped_frame(last, sse, sub.reason))
                    break
                if sub.closed:
                    if sse:
                        await resp.write(b"event: end\ndata: {\"reason\": \"shutdown\"}\n\n")
                    break
                while sub.buffer:
                    event = sub.buffer.popleft()
                    if event.seq <= last:
                        continue
                    frame = _frame(event, q, quest_id, cards)
                    if wanted is None or event.type in wanted:
                        await resp.write(frame)
                    last = event.seq
                if sub.dropped or sub.closed:
                    continue
                before = len(sub.buffer)
                await sub.wait(cfg.keepalive)
                if not sub.buffer and not sub.dropped and not sub.closed and before == 0:
                    await resp.write(b": keep-alive\n\n" if sse else b"\n")
        await resp.write_eof()
    except ConnectionError as exc:  # a write after the client closed (ConnectionResetError, aiohttp's ClientConnectionResetError)
        if not client_gone(request):
            raise
        log.debug("stream of %s ended: the client went away (%s)", quest_id, type(exc).__name__)
    except asyncio.CancelledError:  # the server cancelled the handler: its client closed the connection
        log.debug("stream of %s ended: the client went away (cancelled)", quest_id)
        raise
    return resp


def _frame(event: Event, q: EventsQuery, quest_id: str, cards: Cards | None = None) -> bytes:
    note = card_json(cards, event) if cards is not None else None
    if note is not None:  # a tool call's event: on this stream's card (not shared)
        data = json.dumps(note, ensure_ascii=False, separators=(",", ":"))
    else:
        data = _encoded(event, q.format, quest_id)
    if q.mode == "sse":
        return f"id: {event.seq}\nevent: {'acp' if q.format == 'acp' else 'event'}\ndata: {data}\n\n".encode()
    return (data + "\n").encode()


# A live event goes to every subscriber of its quest: encode it once per format, not once
# per subscriber. Keyed by (quest, seq, id, format); bounded, oldest out first.
_ENCODED: collections.OrderedDict[tuple[str, int, str, str], str] = collections.OrderedDict()
_ENCODED_MAX = 4096


def _encoded(event: Event, fmt: EventFormat, quest_id: str) -> str:
    key = (quest_id, event.seq, event.id, fmt)  # the id too: a repaired log may reuse a seq
    data = _ENCODED.get(key)
    if data is None:
        data = json.dumps(event_json(event, fmt, quest_id), ensure_ascii=False, separators=(",", ":"))
        _ENCODED[key] = data
        if len(_ENCODED) > _ENCODED_MAX:
            _ENCODED.popitem(last=False)
    return data


_DROP_MESSAGES = {
    "slow": "this client fell too far behind",
    "follower_stopped": "the daemon stopped following this quest's log (was it repaired?)",
}


def _dropped_frame(last: int, sse: bool, reason: str) -> bytes:
    why = _DROP_MESSAGES.get(reason, reason)
    body = {"dropped": True, "reason": reason, "resume_after": last,
            "message": f"{why}; reconnect with Last-Event-ID (or after=) set to resume_after"}  # fmt: skip
    data = json.dumps(body)
    return f"event: dropped\ndata: {data}\n\n".encode() if sse else (data + "\n").encode()


def _format(raw: str) -> EventFormat:
    if raw == "raw":
        return "raw"
    if raw == "acp":
        return "acp"
    raise Invalid(f"unknown format {raw!r}: use raw or acp", code="invalid_format", argument="format")


def _flag(q: Mapping[str, str], name: str) -> bool:
    raw = q.get(name, "0")
    if raw not in ("0", "1", "true", "false", ""):
        raise Invalid(f"{name} must be 1 or 0, got {raw!r}", code="invalid_argument", argument=name)
    return name in q and raw in ("1", "true", "")


def _valid_type(t: str) -> bool:
    return all(part and part.replace("_", "a").isalnum() for part in t.split("."))
