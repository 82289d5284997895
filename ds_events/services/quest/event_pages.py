"""Pages of a quest's event log as the edges serve them: each event as stored, or as the
Agent Client Protocol notification it maps to (:mod:`projections.acp`).

A page costs what it returns: it reads by position through the log's seq index
(``read`` / ``read_reverse`` / ``tail``), never from the start. The HTTP route
``GET /api/quests/{id}/events`` answers a page with :func:`event_page`; its streams
frame each event with :func:`event_json`. In the ``acp`` format a page or a stream
folds each tool call's two views into one card through a :class:`~projections.acp.Notifier`
that :func:`acp_notifier` primes with the running turn's events before its start (a page
that begins inside a finished turn pairs only the halves it holds)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ds_events.events import Event
from ds_events.home import Quest
from projections.acp import Notifier, on_card, to_notification

__all__ = [
    "EventPage", "EventFormat", "FORMATS", "Cards", "event_page", "event_json", "acp_notifier", "prime_cards", "card_json",
]  # fmt: skip

Cards = Notifier  # an ACP stream's tool-call cards

EventFormat = Literal["raw", "acp"]
FORMATS: tuple[EventFormat, ...] = ("raw", "acp")


class EventPage(msgspec.Struct, kw_only=True):
    events: list[dict[str, Any]]  # each event in the page's format, oldest first
    next_after: int  # the cursor of the next page forward
    has_more: bool  # events remain beyond this page (older ones for tail and before)


def event_page(
    quest: Quest,
    *,
    after: int = 0,
    before: int | None = None,
    limit: int,
    tail: bool = False,
    types: list[str] | None = None,
    fmt: EventFormat = "raw",
) -> EventPage:
    """At most ``limit`` events of ``types`` (every type when None), oldest first:

    - ``tail``: the last ones (``after`` and ``before`` are not used);
    - ``before``: the newest ones with a seq below ``before`` and above ``after``;
    - else the first ones after ``after``.
    """
    log = quest.log
    if tail:
        events = log.tail(limit, types=types)
        has_more = bool(events) and bool(log.read_reverse(events[0].seq, limit=1, types=types))
    elif before is not None:
        newest_first = log.read_reverse(before, limit=limit + 1, types=types)
        has_more = len(newest_first) > limit  # older events remain
        events = [e for e in newest_first[:limit][::-1] if e.seq > after]
    else:
        events = log.read(after, limit=limit + 1, types=types)
        has_more = len(events) > limit
        events = events[:limit]
    next_after = events[-1].seq if events else after
    if fmt == "acp" and events:  # one card per tool call within the page
        cards = acp_notifier(quest, after=events[0].seq - 1)
        return EventPage(events=[cards.notification(e) for e in events], next_after=next_after, has_more=has_more)
    return EventPage(events=[event_json(e, fmt, quest.id) for e in events], next_after=next_after, has_more=has_more)


def event_json(event: Event, fmt: EventFormat, quest_id: str) -> dict[str, Any]:
    """``event`` as JSON-ready builtins: as stored (``raw``), or its ACP notification
    (``acp``, the session being the quest)."""
    if fmt == "acp":
        return to_notification(event, session_id=quest_id)
    encoded: dict[str, Any] = msgspec.to_builtins(event)
    return encoded


def acp_notifier(quest: Quest, *, after: int) -> Notifier:
    """The tool-call cards of an ACP stream of ``quest`` that starts after seq ``after``."""
    notifier = Notifier(quest.id)
    prime_cards(quest, notifier, until_seq=after)
    return notifier


def prime_cards(quest: Quest, notifier: Notifier, *, until_seq: int) -> None:
    """Fold into ``notifier`` what it has not seen, up to ``until_seq``, of a turn that
    is still running: the calls that turn opened before the stream began then get their
    later halves on the same card. Reads the running turn's events only (none when no
    turn runs)."""
    turns = quest.state("turns")
    record = turns.turns.get(turns.running) if turns.running else None
    if record is None:
        return
    start = max(notifier.last_seq, record.started_seq - 1)
    if start >= until_seq:
        return
    notifier.prime(e for e in quest.log.read(start, limit=until_seq - start) if e.seq <= until_seq)


def card_json(cards: Notifier, event: Event) -> dict[str, Any] | None:
    """Fold ``event`` into ``cards``; its ACP notification on its card when it is a tool
    call's event (None: it is not one, and its notification is :func:`event_json`'s)."""
    placed = cards.fold(event)
    return on_card(to_notification(event, cards.session_id), placed) if placed is not None else None
