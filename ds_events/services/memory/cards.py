"""Memory commands: write, read, search, list, promote, guard.

Every function takes a :class:`~ds_events.memory.store.MemoryContext` and a typed
command (:mod:`.commands`), returns a typed result, validates
against the current views (caught up with every process's appends, under the log's
append lock where a rule must hold across processes), and only then emits events.
A refused request raises a :class:`ServiceError` and writes nothing; a write that
would add a near-duplicate or a config-polluted title *answers* with a status instead
(``duplicate_candidates`` / ``config_polluted``) so the caller can decide.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypeVar, overload

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events.memory import CardPromoted, CardSuperseded, CardWritten, GuardConfigured
from ds_events.memory.cards import (
    as_tag_list,
    card_file_text,
    check_body,
    check_kind,
    check_metadata,
    check_tags,
    check_title,
    new_card_id,
    parse_card_text,
)
from ds_events.memory.store import MemoryContext, MemoryStore, check_scope
from ds_events.memory.text import DUPLICATE_THRESHOLD, config_pollution, is_near_duplicate, similarity_of, word_set, word_sets
from ds_events.services.memory.commands import (
    CardInfo,
    CardsResult,
    CardText,
    ConfigureGuard,
    DuplicateCandidate,
    GuardResult,
    ListRecent,
    PromoteResult,
    PromoteToGlobal,
    ReadCard,
    SearchCards,
    SearchHit,
    SearchResult,
    WriteCard,
    WriteResult,
)
from projections.memory import KINDS, RECORD_TYPES, RESERVED_KEYS, SINGULAR, Card, MemoryState, changed_after, recent_cards, render_card

InfoT = TypeVar("InfoT", bound=CardInfo)

__all__ = [
    "write",
    "read",
    "search",
    "list_recent",
    "promote_to_global",
    "configure_guard",
    "guard_keys",
    "resolve_path",
    "near_duplicates",
    "info",
    "tag_list",
    # the commands and results, for callers that import only this module
    "WriteCard",
    "ReadCard",
    "SearchCards",
    "ListRecent",
    "PromoteToGlobal",
    "ConfigureGuard",
    "WriteResult",
    "CardText",
    "SearchResult",
    "SearchHit",
    "CardsResult",
    "PromoteResult",
    "GuardResult",
]

MAX_LIMIT = 100
_MMR_LAMBDA = 0.7  # relevance vs. difference when diverse=True
# Cards the near-duplicate check compares a new card with (plus those the index has not
# applied yet): the best BM25 matches on its rarest words; a rewrite of the same lesson
# ranks at the top, and each comparison tokenises the other card.
_SIMILAR_CANDIDATES = 10


def write(mem: MemoryContext, cmd: WriteCard, *, record_type: str = "", extra: dict[str, Any] | None = None) -> WriteResult:
    """Write a new card (or refuse with a status); returns what happened.

    ``record_type`` and ``extra`` (metadata the record tools add) are for
    :mod:`.records`, not part of the public command.
    """
    kind = check_kind(cmd.kind)
    scope = check_scope(cmd.scope, ("quest", "global"))
    tags = check_tags(tag_list(cmd.tags))
    metadata = check_metadata(cmd.metadata)
    if extra:
        metadata = {**metadata, **extra}
    title, body = cmd.title, cmd.body
    if cmd.markdown is not None:
        front, parsed_body = parse_card_text(cmd.markdown)
        title = title or str(front.pop("title", "") or "")
        tags = check_tags([*tags, *as_tag_list(front.pop("tags", []))])
        metadata = check_metadata({**{k: v for k, v in front.items() if k not in RESERVED_KEYS}, **metadata})
        body = body or parsed_body
    title = check_title(title)
    body = check_body(body)
    if record_type and record_type not in RECORD_TYPES:
        raise Invalid(f"unknown record_type {record_type!r}: use {', '.join(RECORD_TYPES)}", code="invalid_record_type")
    store = mem.store(scope)
    # The state is lent, not handed out: nothing here keeps it past the lock, so the
    # fold need not copy the whole card map before the next event. The transaction
    # caught the views up when it took the lock: no need to read the log again.
    with store.transaction() as txn, store.lent_state(catch_up=False) as state:
        old = _check_supersedes(store, state, cmd.supersedes, kind) if cmd.supersedes else None
        keys = guard_keys(mem, state if store.scope == "quest" else None)
        polluted = config_pollution([title, str(metadata.get("summary", ""))], keys)
        if polluted:
            return WriteResult(
                ok=False,
                status="config_polluted",
                settings=polluted,
                message="the title or summary bakes in config settings "
                f"({', '.join(polluted)}): state the lesson without them and put concrete values in the body",
            )
        if not cmd.force:
            candidates = near_duplicates(store, state, kind, title, body, exclude={old.id} if old else set())
            if candidates:
                return WriteResult(
                    ok=False,
                    status="duplicate_candidates",
                    candidates=candidates,
                    message=f"{len(candidates)} active {kind} card(s) look like the same lesson; nothing was written. "
                    "Re-call with supersedes=<id> to replace one, or force=True to keep both.",
                )
        card_id = new_card_id(kind, state)
        # The files this write materialises must be writable inside the root (a planted
        # symlinked memory/<kind>/ is refused here, before anything is appended).
        store.check_materialisable(store.rel_path_for(kind, card_id), *([store.rel_path(old)] if old else []))
        record_id = f"mem-{len(state.records) + 1:03d}" if record_type else ""
        events: list[Any] = [
            CardWritten(
                card_id=card_id, kind=kind, title=title, body=body, scope=scope, tags=tags, metadata=metadata,
                source_quest=mem.quest.id, supersedes=old.id if old else None, record_id=record_id,
                record_type=record_type,
            )
        ]  # fmt: skip
        if old is not None:
            events.append(CardSuperseded(card_id=old.id, by_card_id=card_id, reason="superseded on write"))
        stored = txn.append(events)
    card = store.card(card_id, catch_up=False)
    assert card is not None  # just appended, and the views caught up on materialising
    # The answer is flat (the tool's output schema says so): the card's fields, named once here.
    shown = info(store, card)
    return WriteResult(
        ok=True, status="written", id=shown.id, kind=shown.kind, title=shown.title, scope=shown.scope,
        quest_id=shown.quest_id, tags=shown.tags, metadata={**card.metadata, "tags": list(shown.tags)}, path=shown.path,
        updated_at=shown.updated_at, source_quest_id=shown.source_quest_id, seq=stored[0].seq,
        supersedes=old.id if old else None, record_id=shown.record_id, record_type=shown.record_type,
    )  # fmt: skip


def read(mem: MemoryContext, cmd: ReadCard) -> CardText:
    """One card: its fields, body and file text (as on disk), and whether it was hand-edited."""
    check_scope(cmd.scope)
    if (cmd.card_id is None) == (cmd.path is None):
        raise Invalid("give exactly one of card_id or path", code="invalid_arguments")
    store, card = resolve_path(mem, cmd.path) if cmd.path is not None else mem.find(str(cmd.card_id), cmd.scope)
    rendered = render_card(card)
    rel = store.rel_path(card)
    on_disk = store.read_file(rel)  # never through a link (path_outside_root)
    return info(
        store, card, CardText,
        body=card.body,
        metadata=dict(card.metadata),
        markdown=card_file_text(on_disk, rel) if on_disk is not None else rendered.decode(),
        hand_edited=on_disk is not None and on_disk != rendered,
        file_missing=on_disk is None,
    )  # fmt: skip


def search(mem: MemoryContext, cmd: SearchCards, *, records_only: bool = False) -> SearchResult:
    """Active cards ranked by BM25 over title, body, tags and hints (best first)."""
    query = cmd.query
    if not isinstance(query, str) or not query.strip():
        raise Invalid("search needs a non-empty query", code="empty_query")
    limit = _check_limit(cmd.limit)
    kind = check_kind(cmd.kind) if cmd.kind else None
    tags = check_tags(cmd.tags)
    fetch = max(limit * 4, 20) if cmd.diverse else limit
    found: list[tuple[float, MemoryStore, Card, str]] = []
    for store in mem.readable(cmd.scope):
        hits = store.synced_index().search(query, limit=fetch, kind=kind, tags=tags, records_only=records_only)
        with store.lent_state() as state:  # only its (immutable) cards are kept
            for hit in hits:
                card = state.cards.get(hit.card_id)
                if card is not None and card.active:
                    found.append((hit.score, store, card, hit.snippet))
    found.sort(key=lambda x: -x[0])
    chosen = _mmr(found, limit) if cmd.diverse else found[:limit]
    results = [info(store, card, SearchHit, score=score, snippet=snippet) for score, store, card, snippet in chosen]
    return SearchResult(ok=True, count=len(results), results=results)


def list_recent(mem: MemoryContext, cmd: ListRecent) -> CardsResult:
    """The most recently written or changed active cards, newest first."""
    limit = _check_limit(cmd.limit)
    kind = check_kind(cmd.kind) if cmd.kind else None
    rows: list[tuple[str, int, MemoryStore, Card]] = []
    for store in mem.readable(cmd.scope):
        # Lent, not handed out (nothing is copied on the next event), and walked from the
        # newest change: a prompt lists recent cards of several kinds every turn.
        with store.lent_state() as state:
            cards = recent_cards(state, limit, kind)
        rows.extend((c.updated_at, c.seq, store, c) for c in cards)
    rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
    results = [info(store, card) for _, _, store, card in rows[:limit]]
    return CardsResult(ok=True, count=len(results), results=results)


def promote_to_global(mem: MemoryContext, cmd: PromoteToGlobal) -> PromoteResult:
    """Copy an active quest card into global memory; both logs record the promotion.

    The global id is derived from (quest, card), so a retry after a crash between the
    two appends finds the copy and only completes the quest's record.
    """
    card_id, path = cmd.card_id, cmd.path
    if (card_id is None) == (path is None):
        raise Invalid("give exactly one of card_id or path", code="invalid_arguments")
    qstore, gstore = mem.store("quest"), mem.store("global")
    store, card = resolve_path(mem, path) if path is not None else mem.find(str(card_id), "both")
    if store is not qstore:
        raise Invalid(f"card {card.id} is not a card of quest {mem.quest.id}: only quest cards are promoted", code="not_a_quest_card")
    gstore.index.sync()  # now, so the nested global transaction need not wait for it under the quest's lock
    with qstore.transaction() as qtxn:
        card = qstore.state().cards[card.id]
        if card.promoted_to:
            raise Conflict(f"card {card.id} is already in global memory as {card.promoted_to}", code="already_promoted",
                           global_card_id=card.promoted_to)  # fmt: skip
        if not card.active:
            raise Conflict(f"card {card.id} is superseded by {card.superseded_by}: promote that one", code="card_superseded")
        _refuse_hand_edited(qstore, card)
        digest = hashlib.blake2b(f"{mem.quest.id}:{card.id}".encode(), digest_size=4).hexdigest()
        gid = f"{SINGULAR[card.kind]}-{digest}"
        qstore.check_materialisable(qstore.rel_path(card))
        gstore.check_materialisable(gstore.rel_path_for(card.kind, gid))
        promoted = CardPromoted(card_id=card.id, global_card_id=gid, source_quest=mem.quest.id)
        with gstore.transaction() as gtxn:
            if gid not in gstore.state().cards:
                gtxn.append([
                    CardWritten(card_id=gid, kind=card.kind, title=card.title, body=card.body, scope="global",
                                tags=list(card.tags), metadata=dict(card.metadata), source_quest=mem.quest.id),
                    promoted,
                ])  # fmt: skip
        stored = qtxn.append(promoted)
    gcard = gstore.state().cards[gid]
    return PromoteResult(ok=True, status="promoted", id=card.id, global_id=gid, scope="global",
                         path=gstore.display_path(gcard), seq=stored.seq)  # fmt: skip


def configure_guard(mem: MemoryContext, cmd: ConfigureGuard) -> GuardResult:
    """Set the quest's config keys whose ``key=value`` settings titles must not bake in."""
    keys = cmd.config_keys
    if isinstance(keys, str) or not all(isinstance(k, str) and k.strip() and len(k) <= 64 and " " not in k.strip() for k in keys):
        raise Invalid("config keys are non-empty strings without spaces, at most 64 characters", code="invalid_config_keys")
    clean = list(dict.fromkeys(k.strip() for k in keys))
    stored = mem.quest.emit(GuardConfigured(config_keys=clean))
    return GuardResult(status="configured", config_keys=clean, seq=stored.seq)


def guard_keys(mem: MemoryContext, quest_state: MemoryState | None = None) -> list[str]:
    """The quest's guarded config keys (its ``memory.guard_configured``), else config.yaml's
    ``memory.config_guard_keys``. They apply to the quest's writes in either scope.
    ``quest_state``: the quest's memory state, when the caller holds it current."""
    if quest_state is None:
        with mem.store("quest").lent_state() as state:
            if state.guard_keys:
                return list(state.guard_keys)
    elif quest_state.guard_keys:
        return list(quest_state.guard_keys)
    return list(mem.config.config_guard_keys)


def resolve_path(mem: MemoryContext, path: str) -> tuple[MemoryStore, Card]:
    """The card whose file is ``path`` (relative to the quest root, or absolute).

    Refuses anything that resolves (after ``..`` and symlinks) outside the quest's
    ``memory/`` or the global memory directory.
    """
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise Invalid("path must be a non-empty string", code="invalid_path")
    raw = Path(path)
    target = (raw if raw.is_absolute() else mem.quest.root / raw).resolve()
    for scope in ("quest", "global"):
        store = mem.store(scope)
        base = store.memory_dir.resolve()
        if base in target.parents:
            parts = target.relative_to(base).parts
            if len(parts) != 2 or parts[0] not in KINDS or target.suffix != ".md" or ".." in raw.parts:
                break
            card = store.card(target.stem)
            if card is None or card.kind != parts[0]:
                raise NotFound(f"{path} is not a card the log knows: `ds memory audit` lists untracked files",
                               code="unknown_card", path=path)  # fmt: skip
            return store, card
    raise Invalid(
        f"path {path!r} is outside the memory roots: give memory/<kind>/<id>.md in the quest, or a global card path",
        code="path_outside_memory",
        path=path,
    )


def near_duplicates(
    store: MemoryStore, state: MemoryState, kind: str, title: str, body: str, *, exclude: set[str] | None = None,
    records_only: bool = False,
) -> list[DuplicateCandidate]:  # fmt: skip
    """Active cards of ``kind`` whose similarity to (title, body) reaches the threshold.

    Candidates are a bounded set, never every card: the index's best matches on the
    card's rarest words (:meth:`MemoryIndex.similar`), plus every card changed since the
    index's seq (it may lag under the log's lock: see ``MemoryStore.transaction``), which
    ``state`` (caught up with the log) names without reading the log.
    """
    index = store.index
    applied = index.applied_seq
    hits = index.similar(title, body, limit=_SIMILAR_CANDIDATES, kind=kind, records_only=records_only)
    ranked = [h.card_id for h in hits]
    fresh = [c for c in changed_after(state, applied) if c not in ranked]
    mine = word_sets(title, body)
    out = []
    for card_id in [*ranked, *fresh]:
        card = state.cards.get(card_id)
        if card is None or not card.active or card.kind != kind or (exclude and card.id in exclude):
            continue
        if records_only and not card.record_type:
            continue
        score = similarity_of(mine, card.title, card.body)
        if is_near_duplicate(score):
            out.append(info(store, card, DuplicateCandidate, similarity=round(score, 3), snippet=_excerpt(card.body)))
    out.sort(key=lambda c: -c.similarity)
    return out


@overload
def info(store: MemoryStore, card: Card, *, provenance: bool = True) -> CardInfo: ...
@overload
def info(store: MemoryStore, card: Card, cls: type[InfoT], *, provenance: bool = True, **extra: Any) -> InfoT: ...
def info(store: MemoryStore, card: Card, cls: type[CardInfo] = CardInfo, *, provenance: bool = True, **extra: Any) -> CardInfo:
    """The card's :class:`CardInfo` (or a subclass of it, with ``extra`` fields): what
    every answer about a card carries, fields at their defaults left out on the wire.

    ``provenance``: say which quest's memory a quest card comes from (``source_quest_id``;
    another quest's card, read-only under ``shared_across_quests``, also says so with
    scope ``shared_quest`` and ``shared``)."""
    of_quest = provenance and store.scope == "quest"
    shared = of_quest and store.read_only
    return cls(
        id=card.id, kind=card.kind, title=card.title, scope="shared_quest" if shared else store.scope,
        quest_id=card.quest_id, tags=list(card.tags), path=store.display_path(card), updated_at=card.updated_at,
        **_applying(card, read_only=store.read_only, source_quest_id=store.name if of_quest else "", shared=shared),
        **extra,
    )  # fmt: skip


def tag_list(tags: list[str] | str | None) -> list[str] | None:
    """Tags as a list: a comma-separated string (or a JSON list in a string, as some
    callers send) is split; blanks are dropped. Anything else is left for
    ``check_tags`` to accept or refuse."""
    if not isinstance(tags, str):
        return tags
    text = tags.strip()
    if text.startswith("[") and text.endswith("]"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    return [part.strip() for part in text.split(",") if part.strip()]


# -- private helpers ---------------------------------------------------------------


def _applying(card: Card, *, read_only: bool, source_quest_id: str, shared: bool) -> dict[str, Any]:
    """The optional fields of a card's :class:`CardInfo` that differ from their defaults.

    Only those are passed: msgspec leaves a field out when its value *is* the default
    object, and a card's ``status`` read back from a snapshot is an equal but distinct
    string, which would then be encoded."""
    fields: dict[str, Any] = {}
    if not card.active:
        fields["status"] = card.status
    if card.record_id:
        fields.update(record_id=card.record_id, record_type=card.record_type)
    if card.superseded_by:
        fields["superseded_by"] = card.superseded_by
    if card.promoted_to:
        fields["promoted_to"] = card.promoted_to
    if card.promoted_from:
        fields["promoted_from"] = card.promoted_from
    if read_only:
        fields["read_only"] = True
    if source_quest_id:
        fields["source_quest_id"] = source_quest_id
    if shared:
        fields["shared"] = True
    return fields


def _check_supersedes(store: MemoryStore, state: MemoryState, supersedes: str, kind: str) -> Card:
    old = state.cards.get(state.records.get(supersedes, supersedes))
    if old is None:
        raise NotFound(f"supersedes={supersedes!r} is not a card in {store.scope} memory", code="unknown_card")
    if not old.active:
        raise Conflict(f"card {old.id} is already superseded by {old.superseded_by}", code="already_superseded",
                       superseded_by=old.superseded_by)  # fmt: skip
    if old.kind != kind:
        raise Invalid(f"card {old.id} is a {old.kind} card; a {kind} card cannot supersede it", code="kind_mismatch")
    _refuse_hand_edited(store, old)
    return old


def _refuse_hand_edited(store: MemoryStore, card: Card) -> None:
    # The change would re-render this card's file; a hand edit there would be lost.
    # A card file that is a link is refused by the read itself (path_outside_root).
    on_disk = store.read_file(store.rel_path(card))
    if on_disk is not None and on_disk != render_card(card):
        raise Conflict(
            f"{store.rel_path(card)} was edited by hand: take the edit in first with `ds memory import {store.name}`",
            code="hand_edited",
            path=store.rel_path(card),
        )


def _mmr(found: list[tuple[float, MemoryStore, Card, str]], limit: int) -> list[tuple[float, MemoryStore, Card, str]]:
    """Maximal marginal relevance: relevant, and unlike what was already chosen.

    Near-duplicates of a chosen card are skipped outright, so the top-k are mutually
    different, not just re-ordered.
    """
    if not found:
        return []
    top = found[0][0] or 1.0
    sets = [word_set(c.title, c.body) for _, _, c, _ in found]
    chosen: list[int] = []
    left = list(range(len(found)))
    while left and len(chosen) < limit:
        best, best_value = None, float("-inf")
        for i in left:
            overlap = max((_jaccard(sets[i], sets[j]) for j in chosen), default=0.0)
            if overlap >= DUPLICATE_THRESHOLD:
                continue
            value = _MMR_LAMBDA * (found[i][0] / top) - (1 - _MMR_LAMBDA) * overlap
            if value > best_value:
                best, best_value = i, value
        if best is None:
            break
        chosen.append(best)
        left.remove(best)
    return [found[i] for i in chosen]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _excerpt(body: str, words: int = 16) -> str:
    """The start of a card's body on one line (what a duplicate candidate shows)."""
    parts = body.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise Invalid(f"limit must be an integer from 1 to {MAX_LIMIT}", code="invalid_limit")
    return limit


