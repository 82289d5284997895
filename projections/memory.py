"""The memory view: every card of one log (a quest's, or global memory's) and its files.

Cards are materialised as Markdown with YAML frontmatter at ``<prefix><kind>/<id>.md``
(``memory/papers/paper-1a2b3c4d.md`` in a quest, ``papers/paper-….md`` under
``$DS_HOME/memory/``), and a ``MEMORY.md`` digest (records first, then recent cards).
File names are the card id, so equal or non-ASCII titles never collide.

``MEMORY.md`` costs the same at any store size: the state keeps what the digest shows
(active counts per kind, active cards in order of their last change, active records per
type in order of creation), updated event by event, and the digest lists the
:data:`_RECENT_IN_DIGEST` newest cards and at most :data:`_RECORDS_IN_DIGEST` newest
records per type (with a count of the older ones), so rendering it never walks every card.

A :class:`Card` keeps the events that say what it is rather than a copy of their fields:
the ``memory.card_written`` that made it and the ``memory.card_imported`` taken in since
(until the next write); its id, kind, text, tags and metadata are read through them.
Beside them it keeps only what later events changed (status, links, the last change).

``apply`` never changes a :class:`Card` it has put in the state: it puts a new one in its
place (``msgspec.structs.replace``), so a card a caller holds stays as it was. It does
insert into and delete from the state's containers, including the per-type dicts of
``active_records``: :func:`thaw` copies those, for a state that was handed out before
more events are applied to it.

A card taken in from a hand edit (``memory.card_imported``) is rendered as the exact
text that was imported until the next change to it, so replay reproduces the edit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice
from typing import Any

import msgspec
import yaml
from msgspec.structs import replace

from ds_events.events import Event
from ds_events.events.memory import CardImported, CardPromoted, CardSuperseded, CardWritten, GuardConfigured

from .base import Files, Projection, shallow_thaw

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
    "thaw",
    "card_path",
    "render_card",
    "render_digest",
    "digest_line",
    "frontmatter_of",
    "changed_after",
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
# Records listed per type in MEMORY.md (the newest); older ones are counted, and
# ``read_memory`` lists every one. Keeps the digest, and rendering it, bounded.
_RECORDS_IN_DIGEST = 50
_RECENT_SLACK = 1000  # recent may grow this far past twice the cards before compaction


class Card(msgspec.Struct, kw_only=True):
    """One card: the write that made it, the hand edit taken in since, what happened after.

    ``written`` is the card's ``memory.card_written`` (its envelope says when the card was
    created; a later write of the same id, a revision, replaces its text, tags, metadata,
    link and record fields in place). ``imported`` is the ``memory.card_imported`` taken in
    after the last write, whose text, tags and metadata then win, and whose file text is
    rendered verbatim."""

    written: CardWritten
    imported: CardImported | None = None
    updated_at: str = ""
    seq: int = 0  # last seq that changed the card
    revision: int = 1
    status: str = "active"  # active | superseded
    superseded_by: str | None = None
    promoted_to: str | None = None
    promoted_from: str | None = None

    @property
    def active(self) -> bool:
        return self.status == "active"

    # -- what the write says --------------------------------------------------------

    @property
    def id(self) -> str:
        return self.written.card_id

    @property
    def kind(self) -> str:
        return self.written.kind

    @property
    def scope(self) -> str:
        return self.written.scope

    @property
    def quest_id(self) -> str:
        """The quest the card came from (its own log's quest unless the write names another)."""
        return self.written.source_quest or self.written.quest_id

    @property
    def created_at(self) -> str:
        return self.written.ts

    @property
    def created_seq(self) -> int:
        return self.written.seq

    @property
    def supersedes(self) -> str | None:
        return self.written.supersedes

    @property
    def record_id(self) -> str:
        return self.written.record_id

    @property
    def record_type(self) -> str:
        return self.written.record_type

    # -- what the last write or import says -------------------------------------------

    @property
    def title(self) -> str:
        return (self.imported or self.written).title

    @property
    def body(self) -> str:
        return (self.imported or self.written).body

    @property
    def tags(self) -> list[str]:
        return (self.imported or self.written).tags

    @property
    def metadata(self) -> dict[str, Any]:
        return (self.imported or self.written).metadata

    @property
    def content(self) -> str | None:
        """The exact imported file text, rendered verbatim until the next write (None: render)."""
        return (self.imported.content or None) if self.imported is not None else None


class MemoryState(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    cards: dict[str, Card] = {}
    records: dict[str, str] = {}  # record id (mem-NNN) -> card id
    guard_keys: list[str] = []
    # What MEMORY.md shows, kept up to date by apply so rendering never walks every card.
    active_counts: dict[str, int] = {}  # kind -> active cards (kinds with none absent)
    # Card ids in the order they last changed, newest last. An id may stand more than
    # once (its last place counts) and an inactive card's id stays until the next
    # compaction: appending is cheap, and a list copies ten times faster than a dict
    # when a handed-out state is thawed (see :func:`recent_cards`).
    recent: list[str] = []
    active_records: dict[str, dict[str, int]] = {}  # record type -> {active card id: created seq}, oldest first


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
                _put(state, card, replace(card, status="superseded", superseded_by=by, updated_at=event.ts, seq=event.seq))
        case CardPromoted(card_id=card_id, global_card_id=gid, source_quest=source):
            # The same event type is in both logs: the global log holds the copy.
            if gid in state.cards:
                card = state.cards[gid]
                _put(state, card, replace(card, promoted_from=f"{source}:{card_id}", seq=event.seq))
            elif card_id in state.cards:
                card = state.cards[card_id]
                _put(state, card, replace(card, promoted_to=gid, seq=event.seq))
        case CardImported():
            card = state.cards.get(event.card_id)
            if card is not None:
                _put(state, card, replace(card, imported=event, updated_at=event.ts, seq=event.seq, revision=card.revision + 1))
        case GuardConfigured(config_keys=keys):
            state.guard_keys = list(keys)
    return state


def thaw(state: MemoryState) -> MemoryState:
    """A copy of ``state`` that :func:`apply` may update: its top-level containers copied
    (:func:`shallow_thaw`) and the per-type dicts of ``active_records`` too, which
    :func:`apply` changes in place."""
    copy = shallow_thaw(state)
    copy.active_records = {rtype: dict(ids) for rtype, ids in state.active_records.items()}
    return copy


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
        thaw=thaw,
        # 2: the digest's parts (active_counts, recent, active_records) joined the state.
        # 3: recent became a list of ids in order of change.
        # 4: a card keeps its memory.card_written and memory.card_imported events instead
        #    of a copy of their fields (an older snapshot is refused and the log refolded).
        version=4,
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
    head = frontmatter_of(card)
    front = _simple_yaml(head)
    if front is None:  # anything beyond plain words, lists of them and timestamps
        front = yaml.safe_dump(head, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    body = card.body if card.body.endswith("\n") or not card.body else card.body + "\n"
    return f"---\n{front}---\n\n{body}".encode()


# What PyYAML writes unquoted: an ASCII word start, then words, spaces and safe
# punctuation (no ": ", " #", quotes, brackets or a trailing space), and not a word
# YAML reads as a bool or null.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./()+=,;!?@%&*-]*(?: [A-Za-z0-9_./()+=,;!?@%&*-]+)*")
_NOT_STR = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split())
# What it single-quotes: an RFC 3339 timestamp, as the events carry (YAML reads it as one).
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})")
_MAX_PLAIN = 400  # far below the dump's line width of 1000: never folded


def _simple_yaml(head: dict[str, Any]) -> str | None:
    """``yaml.safe_dump(head, ...)`` as :func:`render_card` calls it, byte for byte, when
    every key and value is a plain word string, a timestamp, or a list of plain words;
    otherwise None. PyYAML's pure-Python emitter took most of a card write's rendering
    (libyaml's differs on some strings); ``tests/memory/test_card_yaml.py`` checks the
    two agree on generated cards."""
    out = []
    for key, value in head.items():
        if not _is_plain(key):
            return None
        if isinstance(value, str):
            if _is_plain(value):
                out.append(f"{key}: {value}\n")
            elif _STAMP.fullmatch(value):
                out.append(f"{key}: '{value}'\n")
            else:
                return None
        elif isinstance(value, list) and all(isinstance(v, str) and _is_plain(v) for v in value):
            out.append(f"{key}:\n" + "".join(f"- {v}\n" for v in value) if value else f"{key}: []\n")
        else:
            return None
    return "".join(out) or None


def _is_plain(text: str) -> bool:
    return len(text) <= _MAX_PLAIN and _PLAIN.fullmatch(text) is not None and text not in _NOT_STR


def render_digest(state: MemoryState, prefix: str = "memory/") -> bytes:
    """``MEMORY.md``: counts, the newest active records per type (failures and
    constraints first), the recently changed cards. Costs the same at any store size."""
    counts = state.active_counts
    lines = ["# Memory", "", "Active cards: " + (", ".join(f"{k} {counts[k]}" for k in KINDS if k in counts) or "none"), ""]
    if any(state.active_records.get(rtype) for rtype in RECORD_TYPES):
        lines += ["## Records", ""]
        for rtype in RECORD_TYPES:
            ids = state.active_records.get(rtype) or {}
            newest = list(islice(reversed(ids), _RECORDS_IN_DIGEST))
            if len(ids) > len(newest):
                lines.append(f"- ({len(ids) - len(newest)} older {rtype} records: `read_memory` lists every one)")
            lines += [digest_line(state.cards[cid], prefix) for cid in reversed(newest)]
        lines.append("")
    recent = recent_cards(state, _RECENT_IN_DIGEST)
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
    old = state.cards.get(event.card_id)
    if old is None:
        card = Card(written=event, updated_at=event.ts, seq=event.seq)
    else:
        # A revision: the card keeps the write that made it (its id, kind, scope, quest and
        # creation), with the new text, tags and metadata, a link the new write names (or
        # the one it had), and a record id the new write gives; a hand edit is dropped.
        revised = replace(
            old.written, title=event.title, body=event.body, tags=event.tags, metadata=event.metadata,
            supersedes=event.supersedes or old.supersedes,
            **({"record_id": event.record_id, "record_type": event.record_type} if event.record_id else {}),
        )  # fmt: skip
        card = replace(old, written=revised, imported=None, updated_at=event.ts, seq=event.seq, revision=old.revision + 1)
    if event.record_id:
        state.records[event.record_id] = event.card_id
    _put(state, old, card)


def recent_cards(state: MemoryState, limit: int, kind: str | None = None) -> list[Card]:
    """Up to ``limit`` active cards (of ``kind`` if given), the most recently changed first.

    Walks ``recent`` from its newest end, so it costs what it looks at: about
    ``limit`` ids (times the number of kinds when filtering by a common one), not the
    store's size. Only a kind with fewer than ``limit`` cards among the newest walks the
    whole list."""
    found: list[Card] = []
    seen: set[str] = set()
    for cid in reversed(state.recent):
        if len(found) >= limit:
            break
        if cid in seen:
            continue
        seen.add(cid)
        card = state.cards.get(cid)
        if card is not None and card.active and (kind is None or card.kind == kind):
            found.append(card)
    return found


def changed_after(state: MemoryState, seq: int) -> list[str]:
    """Ids of the active cards last changed after ``seq``, the most recent first.

    Walks ``recent`` back from its end and stops at the first card whose last change is
    at or before ``seq``: every entry is appended at a change of its card, so that entry
    and all before it were appended at or before ``seq``. It costs what changed since,
    not the store's size."""
    found: list[str] = []
    seen: set[str] = set()
    for cid in reversed(state.recent):
        card = state.cards.get(cid)
        if card is None or card.seq <= seq:
            break
        if card.active and cid not in seen:
            seen.add(cid)
            found.append(cid)
    return found


def _compact_recent(state: MemoryState) -> None:
    """Keep each active card's last place only (runs once per about as many changes as
    there are cards, so a change costs the same on average at any store size)."""
    keep: list[str] = []
    seen: set[str] = set()
    for cid in reversed(state.recent):
        if cid not in seen:
            seen.add(cid)
            card = state.cards.get(cid)
            if card is not None and card.active:
                keep.append(cid)
    keep.reverse()
    state.recent = keep


def _put(state: MemoryState, old: Card | None, new: Card) -> None:
    """Put ``new`` in the place of ``old`` (None: a new card), keeping the digest's parts
    in step: counts per kind, the order of last changes, the active records per type."""
    state.cards[new.id] = new
    was_active = old is not None and old.active
    if was_active != new.active:
        n = state.active_counts.get(new.kind, 0) + (1 if new.active else -1)
        if n:
            state.active_counts[new.kind] = n
        else:
            state.active_counts.pop(new.kind, None)
    if new.active and (not state.recent or state.recent[-1] != new.id):  # (edits in a row: once)
        state.recent.append(new.id)
        if len(state.recent) > 2 * len(state.cards) + _RECENT_SLACK:
            _compact_recent(state)
    was_record = old.record_type if old is not None and was_active else ""
    is_record = new.record_type if new.active else ""
    if was_record and was_record != is_record:
        state.active_records.get(was_record, {}).pop(new.id, None)
    if is_record and is_record != was_record:
        state.active_records.setdefault(is_record, {})[new.id] = new.created_seq


PROJECTION = make_projection("memory/")
GLOBAL_PROJECTION = make_projection("", name="global_memory")
