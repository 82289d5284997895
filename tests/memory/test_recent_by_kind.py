"""``list_recent`` (and the prompt's stage memory plan that calls it per kind) walks the
newest changes instead of every card: it must answer exactly what ranking every active
card of the kind by its last change would, after writes, supersedes, promotions and
imports, and a compaction of the change list."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from ds_events.events.memory import CardImported, CardPromoted, CardSuperseded, CardWritten
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import ListRecent, WriteCard
from projections.memory import _RECENT_SLACK, KINDS, PROJECTION, MemoryState, recent_cards


def _brute(state: MemoryState, limit: int, kind: str | None) -> list[str]:
    cards = [c for c in state.cards.values() if c.active and (kind is None or c.kind == kind)]
    return [c.id for c in sorted(cards, key=lambda c: -c.seq)[:limit]]


@pytest.mark.parametrize("seed", range(6))
def test_recent_cards_by_kind_equal_ranking_every_active_card_by_its_last_change(seed: int) -> None:
    rng = random.Random(seed)
    # A skewed mix: one kind is rare, so some walks go through the whole list.
    weights = [40, 25, 15, 10, 9, 1]
    ids: dict[str, str] = {}
    state = PROJECTION.initial()
    for seq in range(1, 2 * _RECENT_SLACK + 500):
        roll = rng.random()
        active = [cid for cid, c in state.cards.items() if c.active]
        event: Any
        if roll < 0.6 or not active:
            kind = rng.choices(KINDS, weights)[0]
            cid = f"{kind}-{rng.randrange(300):04x}"
            ids[cid] = kind
            existing = state.cards.get(cid)
            kind = existing.kind if existing is not None else kind
            event = CardWritten(card_id=cid, kind=kind, title=f"t{seq}", body=f"b{seq}")
        elif roll < 0.7:
            event = CardSuperseded(card_id=rng.choice(active), by_card_id="x")
        elif roll < 0.8:
            cid = rng.choice(active)
            event = CardPromoted(card_id=cid, global_card_id=f"g-{cid}", source_quest="q1")
        else:
            cid = rng.choice(active)
            c = state.cards[cid]
            event = CardImported(card_id=cid, kind=c.kind, title=c.title + " edited", body="edited")
        state = PROJECTION.apply(state, msgspec.structs.replace(event, seq=seq, ts=f"2026-01-01T00:00:{seq % 60:02d}.000000Z"))
        if seq % 97 == 0:
            for kind in (None, *KINDS):
                for limit in (1, 3, 20):
                    assert [c.id for c in recent_cards(state, limit, kind)] == _brute(state, limit, kind), (seq, kind, limit)


def test_list_recent_by_kind_through_the_service_is_newest_first_and_skips_superseded(mem: MemoryContext) -> None:
    written = []
    titles = ["warmup stabilises early training", "loader crashed on shared memory", "cosine decay beats steps",
              "residual networks paper", "mixup hurts calibration here"]  # fmt: skip
    for title, kind in zip(titles, ["knowledge", "episodes", "knowledge", "papers", "knowledge"], strict=True):
        r = svc.write(mem, WriteCard(kind=kind, title=title, body=f"details of {title}"))
        assert r.status == "written", r
        written.append(r.id)
    replaced = svc.write(mem, WriteCard(kind="knowledge", title="a new take on the first lesson", body="b", supersedes=written[0]))
    assert replaced.status == "written"
    got = [c.id for c in svc.list_recent(mem, ListRecent(kind="knowledge", limit=10)).results]
    assert got == [replaced.id, written[4], written[2]]
    assert [c.id for c in svc.list_recent(mem, ListRecent(kind="knowledge", limit=2)).results] == got[:2]
    assert [c.id for c in svc.list_recent(mem, ListRecent(kind="templates")).results] == []
