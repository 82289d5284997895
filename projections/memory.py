"""The memory view: every card of one log (a quest's, or global memory's) and its files.

Cards are materialised as Markdown with YAML frontmatter at ``<prefix><kind>/<id>.md``
(``memory/papers/paper-1a2b3c4d.md`` in a quest, ``papers/paper-….md`` under
``$DS_HOME/memory/``), and a ``MEMORY.md`` digest (records first, then recent cards).
File names are the card id, so equal or non-ASCII titles never collide.

A card taken in from a hand edit (``memory.card_imported``) is rendered as the exact
text that was imported until the next change to it, so replay reproduces the edit.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

import msgspec
import yaml

from ds_events.events import Event
from ds_events.events.memory import CardImported, CardPromoted, CardSuperseded, CardWritten, GuardConfigured

from .base import Files, Projection

__all__ = [
    "Card",
    "MemoryState",
    "KINDS",
    "SINGULAR",
    "RESERVED_KEYS",
    "RECORD_TYPES",
    "PROJECTION",
    "GLOBAL_PROJECTION",
    "make_projection",
    "card_path",
    "render_card",
    "render_digest",
    "digest_line",
    "frontmatter_of",
]

KINDS: tuple[str, ...] = ("papers", "ideas", "decisions", "episodes", "knowledge", "templates")
SINGULAR: dict[str, str] = {
    "papers": "paper",
    "ideas": "idea",
    "decisions": "decision",
    "episodes": "episode",
    "knowledge": "knowledge",
    "templates": "template",
}
# Record types of the record-style tools, in the order a digest shows them:
# failures and constraints first, because they are the costliest to rediscover.
RECORD_TYPES: tuple[str, ...] = ("mistake_fix", "pipeline_constraint", "working_solution", "methodology_note")
# Frontmatter keys the card owns; caller metadata may not use them.
RESERVED_KEYS: frozenset[str] = frozenset(
    {
        "id", "type", "kind", "title", "quest_id", "scope", "tags", "created_at", "updated_at", "status",
        "supersedes", "superseded_by", "promoted_to", "promoted_from", "record_id", "record_type", "revision",
    }
)  # fmt: skip
_RECENT_IN_DIGEST = 20


class Card(msgspec.Struct, kw_only=True):
    id: str
    kind: str
    title: str
    body: str = ""
    scope: str = "quest"
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    quest_id: str = ""
    created_at: str = ""
    updated_at: str = ""
    created_seq: int = 0
    seq: int = 0  # last seq that changed the card
    revision: int = 1
    status: str = "active"  # active | superseded
    supersedes: str | None = None
    superseded_by: str | None = None
    promoted_to: str | None = None
    promoted_from: str | None = None
    record_id: str = ""
    record_type: str = ""
    content: str | None = None  # exact imported text, rendered verbatim while set

    @property
    def active(self) -> bool:
        return self.status == "active"


class MemoryState(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    cards: dict[str, Card] = {}
    records: dict[str, str] = {}  # record id (mem-NNN) -> card id
    guard_keys: list[str] = []


def initial() -> MemoryState:
    return MemoryState()


def apply(state: MemoryState, event: Event) -> MemoryState:
    state.last_seq = event.seq
    match event:
        case CardWritten():
            _apply_written(state, event)
        case CardSuperseded(card_id=card_id, by_card_id=by):
            card = state.cards.get(card_id)
            if card is not None:
                card.status, card.superseded_by = "superseded", by
                card.updated_at, card.seq = event.ts, event.seq
        case CardPromoted(card_id=card_id, global_card_id=gid, source_quest=source):
            # The same event type is in both logs: the global log holds the copy.
            if gid in state.cards:
                state.cards[gid].promoted_from = f"{source}:{card_id}"
                state.cards[gid].seq = event.seq
            elif card_id in state.cards:
                state.cards[card_id].promoted_to = gid
                state.cards[card_id].seq = event.seq
        case CardImported():
            card = state.cards.get(event.card_id)
            if card is not None:
                card.title, card.body, card.tags = event.title, event.body, list(event.tags)
                card.metadata = dict(event.metadata)
                card.content = event.content or None
                card.updated_at, card.seq = event.ts, event.seq
                card.revision += 1
        case GuardConfigured(config_keys=keys):
            state.guard_keys = list(keys)
    return state


def make_projection(prefix: str, name: str = "memory") -> Projection[MemoryState]:
    """The memory projection materialising cards under ``prefix`` (``"memory/"`` or ``""``)."""

    def render(state: MemoryState) -> Files:
        files = {card_path(c, prefix): render_card(c) for c in state.cards.values()}
        if state.cards:
            files["MEMORY.md"] = render_digest(state, prefix)
        return files

    def render_changed(state: MemoryState, events: Iterable[Event]) -> Files:
        touched: set[str] = set()
        for event in events:
            match event:
                case CardWritten(card_id=cid, supersedes=old):
                    touched.update(x for x in (cid, old) if x)
                case CardSuperseded(card_id=cid, by_card_id=by):
                    touched.update((cid, by))
                case CardPromoted(card_id=cid, global_card_id=gid):
                    touched.update((cid, gid))
                case CardImported(card_id=cid):
                    touched.add(cid)
        files = {card_path(state.cards[c], prefix): render_card(state.cards[c]) for c in touched if c in state.cards}
        if files:
            files["MEMORY.md"] = render_digest(state, prefix)
        return files

    return Projection(
        name=name,
        state_type=MemoryState,
        initial=initial,
        apply=apply,
        render=render,
        render_changed=render_changed,
        version=1,
    )


def card_path(card: Card, prefix: str = "memory/") -> str:
    """Where a card's file lives, relative to the quest root (or the global memory dir)."""
    return f"{prefix}{card.kind}/{card.id}.md"


def frontmatter_of(card: Card) -> dict[str, Any]:
    """The card's frontmatter: owned keys first, then caller metadata in key order."""
    head: dict[str, Any] = {
        "id": card.id,
        "type": card.kind,
        "kind": SINGULAR.get(card.kind, card.kind),
        "title": card.title,
        "quest_id": card.quest_id,
        "scope": card.scope,
        "tags": list(card.tags),
        "created_at": card.created_at,
        "updated_at": card.updated_at,
        "status": card.status,
    }
    optional = {
        "supersedes": card.supersedes,
        "superseded_by": card.superseded_by,
        "promoted_to": card.promoted_to,
        "promoted_from": card.promoted_from,
        "record_id": card.record_id,
        "record_type": card.record_type,
    }
    head.update({k: v for k, v in optional.items() if v})
    for key in sorted(card.metadata):
        if key not in RESERVED_KEYS:
            head[key] = card.metadata[key]
    return head


def render_card(card: Card) -> bytes:
    """The card file: ``---`` fenced YAML frontmatter, a blank line, the Markdown body."""
    if card.content is not None:
        return card.content.encode()
    front = yaml.safe_dump(frontmatter_of(card), sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    body = card.body if card.body.endswith("\n") or not card.body else card.body + "\n"
    return f"---\n{front}---\n\n{body}".encode()


def render_digest(state: MemoryState, prefix: str = "memory/") -> bytes:
    """``MEMORY.md``: counts, every active record (failures and constraints first), recent cards."""
    counts: dict[str, int] = {}
    for card in state.cards.values():
        if card.active:
            counts[card.kind] = counts.get(card.kind, 0) + 1
    lines = ["# Memory", "", "Active cards: " + (", ".join(f"{k} {counts[k]}" for k in KINDS if k in counts) or "none"), ""]
    by_type: dict[str, list[Card]] = {}
    for card_id in state.records.values():
        card = state.cards.get(card_id)
        if card is not None and card.active:
            by_type.setdefault(card.record_type, []).append(card)
    if by_type:
        lines += ["## Records", ""]
        for rtype in RECORD_TYPES:
            for card in sorted(by_type.get(rtype, []), key=lambda c: c.created_seq):
                lines.append(digest_line(card, prefix))
        lines.append("")
    recent = heapq.nlargest(_RECENT_IN_DIGEST, (c for c in state.cards.values() if c.active), key=lambda c: c.seq)
    if recent:
        lines += ["## Recent cards", ""]
        lines += [f"- [{c.kind}] {_one_line(c.title)} (`{c.id}`) -> {card_path(c, prefix)}" for c in recent]
        lines.append("")
    return "\n".join(lines).encode()


def digest_line(card: Card, prefix: str = "memory/") -> str:
    """One line for a record: ``- mem-001 [mistake_fix] summary #tag -> path``."""
    tags = "".join(f" #{t}" for t in card.tags)
    return f"- {card.record_id} [{card.record_type}] {_one_line(card.title)}{tags} -> {card_path(card, prefix)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _apply_written(state: MemoryState, event: CardWritten) -> None:
    card = state.cards.get(event.card_id)
    if card is None:
        card = Card(
            id=event.card_id,
            kind=event.kind,
            title=event.title,
            scope=event.scope,
            quest_id=event.source_quest or event.quest_id,
            created_at=event.ts,
            created_seq=event.seq,
            revision=0,
        )
        state.cards[event.card_id] = card
    card.title, card.body, card.tags = event.title, event.body, list(event.tags)
    card.metadata = dict(event.metadata)
    card.updated_at, card.seq = event.ts, event.seq
    card.revision += 1
    card.content = None
    if event.supersedes:
        card.supersedes = event.supersedes
    if event.record_id:
        card.record_id, card.record_type = event.record_id, event.record_type
        state.records[event.record_id] = event.card_id


PROJECTION = make_projection("memory/")
GLOBAL_PROJECTION = make_projection("", name="global_memory")
