"""Retrieval quality on the committed fixture: ours against plain substring search."""

from __future__ import annotations

from ds_events.memory.store import MemoryContext
from ds_events.services.memory.quality import evaluate, load_fixture, substring_search
from tests.conftest import FIXTURES


def test_ranked_search_finds_what_each_fixture_query_should_and_beats_substring_search(mem: MemoryContext, capsys):
    fixture = load_fixture(FIXTURES / "memory" / "retrieval.yaml")
    ours, plain = evaluate(mem, fixture, k=5)
    with capsys.disabled():
        print(f"\nretrieval quality on {ours.queries} queries: ours recall@5={ours.recall_at_k:.2f} MRR={ours.mrr:.2f}; "
              f"substring recall@5={plain.recall_at_k:.2f} MRR={plain.mrr:.2f}")  # fmt: skip
    assert ours.recall_at_k >= 0.9 and ours.mrr >= 0.75
    assert ours.recall_at_k > plain.recall_at_k and ours.mrr > plain.mrr


def test_substring_baseline_matches_only_whole_query_text():
    files = {"a": "Loss becomes NaN after 3 steps", "b": "nan loss"}
    assert substring_search(files, "loss becomes nan") == ["a"]
    assert substring_search(files, "NaN loss appears") == []
