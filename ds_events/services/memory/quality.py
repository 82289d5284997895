"""Retrieval quality on a fixture of cards and queries: recall@k and MRR, for our ranked
search and for plain substring search over the same card files.

Used by ``tests/memory/test_retrieval_quality.py`` and ``bench/memory_quality.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import msgspec
import yaml

from ds_events.memory.store import MemoryContext
from ds_events.services.memory.cards import search, write
from ds_events.services.memory.commands import SearchCards, WriteCard

__all__ = ["Quality", "Fixture", "FixtureCard", "FixtureQuery", "load_fixture", "evaluate", "substring_search"]


@dataclass(frozen=True)
class Quality:
    recall_at_k: float  # share of queries with a relevant card in the top k
    mrr: float  # mean reciprocal rank of the first relevant card (0 when none)
    k: int
    queries: int


class FixtureCard(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A card of the fixture; ``key`` names it in the queries' ``relevant`` lists."""

    key: str
    kind: str
    title: str
    body: str
    tags: list[str] | None = None


class FixtureQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A natural-language query and the keys of the cards that answer it (any one counts)."""

    query: str
    relevant: list[str]


class Fixture(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    cards: list[FixtureCard]
    queries: list[FixtureQuery]


def load_fixture(path: str | Path) -> Fixture:
    """The fixture at ``path`` (YAML); a query naming a card the fixture lacks is a ValueError."""
    fixture = msgspec.convert(yaml.safe_load(Path(path).read_text()), Fixture)
    keys = {c.key for c in fixture.cards}
    for q in fixture.queries:
        missing = set(q.relevant) - keys
        if missing:
            raise ValueError(f"query {q.query!r} names unknown cards {sorted(missing)}")
    return fixture


def evaluate(mem: MemoryContext, fixture: Fixture, k: int = 5) -> tuple[Quality, Quality]:
    """Write the fixture's cards (force: they are distinct lessons) and score both searches."""
    key_of: dict[str, str] = {}
    for c in fixture.cards:
        written = write(mem, WriteCard(kind=c.kind, title=c.title, body=c.body, tags=c.tags, force=True))
        key_of[written.id] = c.key
    store = mem.store("quest")
    files = {card_id: (store.read_file(store.rel_path(store.state().cards[card_id])) or b"").decode() for card_id in key_of}
    ours, plain = [], []
    for q in fixture.queries:
        ours.append([key_of[r.id] for r in search(mem, SearchCards(query=q.query, limit=k)).results])
        plain.append([key_of[i] for i in substring_search(files, q.query)[:k]])
    return _score(ours, fixture, k), _score(plain, fixture, k)


def substring_search(files: dict[str, str], query: str) -> list[str]:
    """The baseline: cards whose file contains the query, case-insensitively, in file order."""
    needle = query.lower()
    return [card_id for card_id, text in files.items() if needle in text.lower()]


def _score(ranked: list[list[str]], fixture: Fixture, k: int) -> Quality:
    hits, rr = 0, 0.0
    for got, q in zip(ranked, fixture.queries, strict=True):
        relevant = set(q.relevant)
        ranks = [i for i, key in enumerate(got[:k], 1) if key in relevant]
        if ranks:
            hits += 1
            rr += 1 / ranks[0]
    n = len(fixture.queries)
    return Quality(recall_at_k=hits / n, mrr=rr / n, k=k, queries=n)
