"""Retrieval quality on a fixture of cards and queries: recall@k and MRR, for our ranked
search and for plain substring search over the same card files.

Used by ``tests/memory/test_retrieval_quality.py`` and ``bench/memory_quality.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ds_events.memory.store import MemoryContext

from ds_events.services.memory.cards import search, write
from ds_events.services.memory.commands import SearchCards, WriteCard

__all__ = ["Quality", "load_fixture", "evaluate", "substring_search"]


@dataclass(frozen=True)
class Quality:
    recall_at_k: float  # share of queries with a relevant card in the top k
    mrr: float  # mean reciprocal rank of the first relevant card (0 when none)
    k: int
    queries: int


def load_fixture(path: str | Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text())
    keys = {c["key"] for c in data["cards"]}
    for q in data["queries"]:
        missing = set(q["relevant"]) - keys
        if missing:
            raise ValueError(f"query {q['query']!r} names unknown cards {sorted(missing)}")
    return data


def evaluate(mem: MemoryContext, fixture: dict[str, Any], k: int = 5) -> tuple[Quality, Quality]:
    """Write the fixture's cards (force: they are distinct lessons) and score both searches."""
    key_of: dict[str, str] = {}
    for c in fixture["cards"]:
        written = write(mem, WriteCard(kind=c["kind"], title=c["title"], body=c["body"], tags=c.get("tags"), force=True))
        key_of[written.id] = c["key"]
    store = mem.store("quest")
    files = {card_id: (store.read_file(store.rel_path(store.state().cards[card_id])) or b"").decode() for card_id in key_of}
    ours, plain = [], []
    for q in fixture["queries"]:
        ours.append([key_of[r.id] for r in search(mem, SearchCards(query=q["query"], limit=k)).results])
        plain.append([key_of[i] for i in substring_search(files, q["query"])[:k]])
    return _score(ours, fixture, k), _score(plain, fixture, k)


def substring_search(files: dict[str, str], query: str) -> list[str]:
    """The baseline: cards whose file contains the query, case-insensitively, in file order."""
    needle = query.lower()
    return [card_id for card_id, text in files.items() if needle in text.lower()]


def _score(ranked: list[list[str]], fixture: dict[str, Any], k: int) -> Quality:
    hits, rr = 0, 0.0
    for got, q in zip(ranked, fixture["queries"]):
        relevant = set(q["relevant"])
        ranks = [i for i, key in enumerate(got[:k], 1) if key in relevant]
        if ranks:
            hits += 1
            rr += 1 / ranks[0]
    n = len(fixture["queries"])
    return Quality(recall_at_k=hits / n, mrr=rr / n, k=k, queries=n)
