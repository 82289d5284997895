"""Events of the `memory` domain: knowledge cards in a quest's log or the global log.

A card is born (and revised) by ``memory.card_written``; it leaves retrieval by
``memory.card_superseded``; ``memory.card_promoted`` records a copy into global memory
(in both logs); ``memory.card_imported`` takes in a hand edit of its file, carrying the
file's exact text so replay writes the edited bytes back. ``memory.guard_configured``
sets the config keys whose ``key=value`` settings must not be baked into titles.
"""

from __future__ import annotations

from typing import Any

from .base import Event

__all__ = ["CardWritten", "CardSuperseded", "CardPromoted", "CardImported", "GuardConfigured", "EVENTS"]


class CardWritten(Event, tag="memory.card_written", kw_only=True):
    """A new card, or a new revision of ``card_id`` when it already exists.

    ``kind`` is the plural kind (``papers``); ``source_quest`` is the quest the card
    came from (also for global cards); ``record_id``/``record_type`` are set for the
    record-style entries (``mem-NNN``) of ``append_memory``.
    """

    card_id: str
    kind: str
    title: str
    body: str = ""
    scope: str = "quest"
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    source_quest: str = ""
    supersedes: str | None = None
    record_id: str = ""
    record_type: str = ""


class CardSuperseded(Event, tag="memory.card_superseded", kw_only=True):
    """``card_id`` left retrieval in favour of ``by_card_id`` (its file stays on disk)."""

    card_id: str
    by_card_id: str
    reason: str = ""


class CardPromoted(Event, tag="memory.card_promoted", kw_only=True):
    """Quest card ``card_id`` of ``source_quest`` was copied to global card ``global_card_id``.

    Appended to both logs: the quest's (the card now points to its global copy) and the
    global one (right after the copy's ``memory.card_written``, as provenance).
    """

    card_id: str
    global_card_id: str
    source_quest: str


class CardImported(Event, tag="memory.card_imported", kw_only=True):
    """A hand edit of a card file taken in: the parsed card and the file's exact text."""

    card_id: str
    kind: str
    title: str
    body: str = ""
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    content: str = ""  # the file as edited; materialised verbatim until the next write
    path: str = ""  # where it was found, relative to the memory root's parent


class GuardConfigured(Event, tag="memory.guard_configured", kw_only=True):
    """Config keys whose settings (``lr=0.1``) must not appear in titles or summaries."""

    config_keys: list[str] = []


EVENTS = (CardWritten, CardSuperseded, CardPromoted, CardImported, GuardConfigured)
