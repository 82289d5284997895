"""Near-duplicate clusters of ``audit``: the connected groups of similar pairs."""

from __future__ import annotations

import random

from ds_events.services.memory.audit import cluster_pairs


def _components(pairs: dict[tuple[str, str], float]) -> list[tuple[list[str], float]]:
    """The reference: connected components by breadth-first search."""
    edges: dict[str, set[str]] = {}
    for a, b in pairs:
        edges.setdefault(a, set()).add(b)
        edges.setdefault(b, set()).add(a)
    seen: set[str] = set()
    out = []
    for start in sorted(edges):
        if start in seen:
            continue
        group, todo = set(), [start]
        while todo:
            x = todo.pop()
            if x not in group:
                group.add(x)
                todo.extend(edges[x] - group)
        seen |= group
        out.append((sorted(group), max(s for (a, b), s in pairs.items() if a in group)))
    return sorted(out)


def test_clusters_are_the_connected_groups_of_pairs_for_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(300):
        cards = [f"c{i:02d}" for i in range(rng.randrange(2, 30))]
        pairs = {}
        for _ in range(rng.randrange(1, 40)):
            a, b = rng.sample(cards, 2)
            pairs[tuple(sorted((a, b)))] = round(rng.uniform(0.8, 1.0), 3)
        assert sorted(cluster_pairs(pairs)) == _components(pairs)  # type: ignore[arg-type]


def test_a_chain_is_one_cluster_with_its_best_score() -> None:
    pairs = {("a", "b"): 0.9, ("c", "d"): 0.85, ("b", "c"): 0.95, ("d", "e"): 0.81}
    assert cluster_pairs(pairs) == [(["a", "b", "c", "d", "e"], 0.95)]
