"""The memory health report, and taking hand edits of card files in as events.

:func:`audit_memory` is read-only: counts per kind, near-duplicate clusters among active
cards, config-polluted titles, broken supersession (and promotion) links, and drift
between the card files on disk and what the log renders. :func:`import_hand_edits`
turns that drift into events (``memory.card_imported`` for an edited card, a new card
for a hand-made file) so nothing on disk is silently overwritten or lost.
"""

from __future__ import annotations

import os
from typing import Any

from ds_events.errors import Invalid
from ds_events.events.memory import CardImported, CardWritten
from ds_events.memory.cards import (
    as_tag_list,
    card_file_text,
    check_tags,
    check_title,
    new_card_id,
    parse_card_text,
)
from ds_events.memory.store import MemoryContext, MemoryStore, check_scope
from ds_events.memory.text import config_pollution, is_near_duplicate, similarity
from ds_events.paths import confined, write_atomic
from ds_events.services.commands import to_builtins
from ds_events.services.memory.cards import guard_keys, info
from ds_events.services.memory.commands import (
    AuditMemory,
    AuditReport,
    ImportedCard,
    ImportHandEdits,
    ImportResult,
    MovedCard,
)
from projections.memory import KINDS, RESERVED_KEYS, Card, MemoryState, render_card

__all__ = ["audit_memory", "import_hand_edits"]


def audit_memory(mem: MemoryContext, cmd: AuditMemory, *, records_only: bool = False) -> AuditReport:
    """A read-only health report of the stores of ``scope`` (``quest``, ``global``, ``both``)."""
    scope = check_scope(cmd.scope)
    stores = [mem.store(s) for s in (("quest", "global") if scope == "both" else (scope,))]
    keys = guard_keys(mem)
    counts: dict[str, dict[str, dict[str, int]]] = {}
    clusters: list[dict[str, Any]] = []
    polluted: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    drift: list[dict[str, Any]] = []
    for store in stores:
        state = store.state()
        cards = [c for c in state.cards.values() if c.record_id or not records_only]
        per_kind = counts.setdefault(store.scope, {})
        for card in cards:
            slot = per_kind.setdefault(card.record_type if records_only else card.kind, {"active": 0, "superseded": 0})
            slot["active" if card.active else "superseded"] += 1
        clusters += _clusters(store, state, [c for c in cards if c.active], records_only)
        for card in cards:
            if card.active:
                found = config_pollution([card.title, str(card.metadata.get("summary", ""))], keys)
                if found:
                    polluted.append({**to_builtins(info(store, card, provenance=False)), "settings": found})
        links += _broken_links(mem, store, state, cards)
        ids = {c.id for c in cards}
        drift += [
            {"scope": store.scope, "id": d.card_id, "path": d.path, "problem": d.problem}
            for d in store.drift(state)
            if not records_only or d.card_id in ids
        ]
    return AuditReport(
        scope=scope, counts=counts, duplicate_clusters=clusters, config_polluted=polluted, broken_links=links, drift=drift,
        total_active=sum(v["active"] for per in counts.values() for v in per.values()),
        ok=not (clusters or polluted or links or drift),
    )  # fmt: skip


def import_hand_edits(mem: MemoryContext, cmd: ImportHandEdits) -> ImportResult:
    """Take in hand edits: edited cards become ``memory.card_imported``, hand-made files
    new cards (the file then moves to its id-named place), deleted files are written back.

    Every file is parsed before anything is appended: one bad file refuses the lot,
    and so does a card file that is a symbolic link (or lies behind one): its target is
    never read, so nothing outside the memory directory can be taken in.
    """
    scope, paths = check_scope(cmd.scope, ("quest", "global")), cmd.paths
    store = mem.store(scope)
    wanted = {os.path.normpath(p) for p in paths} if paths else None
    imported: list[ImportedCard] = []
    restored: list[str] = []
    moved: list[tuple[str, str]] = []
    with store.transaction() as txn:
        state = store.state()
        events: list[Any] = []
        drifts = [d for d in store.drift(state) if wanted is None or d.path in wanted or d.card_id in wanted]
        errors: list[str] = []
        for d in drifts:
            try:
                if d.problem == "modified":
                    events.append(_imported(store, state.cards[str(d.card_id)], d.path))
                elif d.problem == "untracked":
                    event = _new_card(mem, store, state, d.path, taken={e.card_id for e in events})
                    target = store.rel_path_for(event.kind, event.card_id)
                    store.check_materialisable(target)
                    events.append(event)
                    moved.append((d.path, target))
                elif d.problem == "link":
                    raise Invalid("a symbolic link (or behind one): it is never read; remove it", code="path_outside_root")
                else:
                    restored.append(d.path)
            except Invalid as exc:
                errors.append(f"{d.path}: {exc.message}")
        if errors:
            raise Invalid("nothing imported: " + "; ".join(errors), code="invalid_card_file", files=errors)
        stored = txn.append(events) if events else []
    state = store.state()
    # Side effects after the append must not fail the call: a path a link now leads
    # out of is left alone (``ds memory audit`` reports it).
    for rel in restored:
        card = state.cards[os.path.splitext(os.path.basename(rel))[0]]
        try:
            write_atomic(confined(store.root, rel), render_card(card))
        except Invalid:
            continue
    for old, _new in moved:
        try:
            os.unlink(confined(store.root, old))  # its text is in the log now, and materialised at _new
        except (Invalid, FileNotFoundError):
            continue
    for done in stored:
        if isinstance(done, (CardImported, CardWritten)):  # every one of them
            card = state.cards[done.card_id]
            imported.append(info(store, card, ImportedCard, seq=done.seq, event=done.type))
    return ImportResult(imported=imported, restored=restored, moved=[MovedCard(from_=a, to=b) for a, b in moved])


# -- private helpers ---------------------------------------------------------------


def _clusters(store: MemoryStore, state: MemoryState, cards: list[Card], records_only: bool) -> list[dict[str, Any]]:
    index = store.synced_index()
    best: dict[tuple[str, str], float] = {}
    for card in cards:
        for hit in index.similar(card.title, card.body, limit=10, kind=card.kind, records_only=records_only):
            other = state.cards.get(hit.card_id)
            if other is None or other.id == card.id or not other.active:
                continue
            score = similarity(card.title, card.body, other.title, other.body)
            if is_near_duplicate(score):
                a, b = sorted((card.id, other.id))
                best[(a, b)] = score
    out = [
        {"scope": store.scope, "kind": state.cards[members[0]].kind, "max_similarity": round(top, 3),
         "cards": [{"id": m, "title": state.cards[m].title} for m in members]}
        for members, top in cluster_pairs(best)
    ]  # fmt: skip
    return sorted(out, key=lambda c: c["cards"][0]["id"])


def cluster_pairs(pairs: dict[tuple[str, str], float]) -> list[tuple[list[str], float]]:
    """The connected groups of near-duplicate ``pairs`` (``(a, b) -> score``): each
    group's sorted members and the highest score of a pair inside it."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])  # path halving
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    groups: dict[str, tuple[set[str], list[float]]] = {}
    for (a, b), score in pairs.items():
        members, scores = groups.setdefault(find(a), (set(), []))
        members.update((a, b))
        scores.append(score)
    return [(sorted(members), max(scores)) for members, scores in groups.values()]


def _broken_links(mem: MemoryContext, store: MemoryStore, state: MemoryState, cards: list[Card]) -> list[dict[str, Any]]:
    out = []
    global_cards = mem.store("global").state().cards if store.scope == "quest" else None
    for card in cards:
        problem: tuple[str, str | None] | None = None
        if card.supersedes and card.supersedes not in state.cards:
            problem = ("supersedes_unknown", card.supersedes)
        elif card.supersedes and state.cards[card.supersedes].active:
            problem = ("supersedes_active", card.supersedes)
        elif card.status == "superseded" and card.superseded_by not in state.cards:
            problem = ("superseded_by_unknown", card.superseded_by)
        elif card.promoted_to and global_cards is not None and card.promoted_to not in global_cards:
            problem = ("promoted_copy_missing", card.promoted_to)
        if problem:
            out.append({"scope": store.scope, "id": card.id, "problem": problem[0], "target": problem[1]})
    return out


def _read_text(store: MemoryStore, rel: str) -> str:
    data = store.read_file(rel)  # never through a link
    if data is None:
        raise Invalid(f"{rel} disappeared while being imported", code="invalid_card_file", path=rel)
    return card_file_text(data, rel)


def _imported(store: MemoryStore, card: Card, rel: str) -> CardImported:
    text = _read_text(store, rel)
    front, body = parse_card_text(text)
    if front.get("id", card.id) != card.id:
        raise Invalid(f"its frontmatter id {front.get('id')!r} is not the file's card {card.id}", code="id_mismatch")
    title = check_title(str(front.get("title") or ""))
    tags = check_tags(as_tag_list(front.get("tags", [])))
    metadata = {k: v for k, v in front.items() if k not in RESERVED_KEYS}
    return CardImported(card_id=card.id, kind=card.kind, title=title, body=body, tags=tags, metadata=metadata,
                        content=text, path=rel)  # fmt: skip


def _new_card(mem: MemoryContext, store: MemoryStore, state: MemoryState, rel: str, *, taken: set[str]) -> CardWritten:
    kind = rel.replace("\\", "/").split("/")[-2]
    if kind not in KINDS:
        raise Invalid(f"{kind!r} is not a memory kind", code="invalid_kind")
    front, body = parse_card_text(_read_text(store, rel))
    title = front.get("title") or next((ln.lstrip("# ").strip() for ln in body.splitlines() if ln.startswith("# ")), "")
    card_id = new_card_id(kind, state)
    while card_id in taken:
        card_id = new_card_id(kind, state)
    metadata = {k: v for k, v in front.items() if k not in RESERVED_KEYS}
    metadata["imported_from"] = rel
    return CardWritten(card_id=card_id, kind=kind, title=check_title(str(title)), body=body, scope=store.scope,
                       tags=check_tags(as_tag_list(front.get("tags", []))), metadata=metadata,
                       source_quest=mem.quest.id)  # fmt: skip

