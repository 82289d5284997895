"""Memory search latency against two raw baselines in the same run, and what the
common-word shortcuts cost in recall.

For each size (default 10,000 and 100,000 cards): append that many
``memory.card_written`` events to a fresh quest's log, materialise the card files and
time a full index rebuild from the log. Then, for ``--rounds`` rounds (default 10):

- **ours**: ranked searches through ``services.memory.search`` (the path the MCP tool
  takes: view catch-up, index sync check, FTS5 BM25 query), top 10;
- **token scan** (the honest raw baseline): the same cards' content words held in
  memory as sets, tokenised like our queries; a query scans every card, counts the
  query words it contains and keeps the 10 best. No file I/O, no index: the least
  work any search without an index must do;
- **substring scan** (the naive baseline kept for comparison): read every card file and
  test whether it contains the whole query string (few multi-word queries match at all).

Each round yields a p50 per method and the ratios baseline / ours; the report gives the
median ratio over the rounds and its spread (min-max).

The common-word shortcuts (see ``MemoryIndex.search``) are checked against ranking every
matching card (the exact BM25 order): on a set of queries made only of common words
(the common-only cut-off, ``_COMMON_ONLY_CANDIDATES``) and on the natural query mix,
split by which path a query takes. Recall@10 is the share of the exact top 10 that the
shortcut returns; "tie-aware" counts a returned card as right when its BM25 score is at
least the exact 10th score (common words leave many cards tied, and which of the tied
cards makes the exact top 10 is arbitrary). The latency of the cut-off is reported
beside it, against ranking every match, per round.

Run: python3 bench/memory_search.py [--sizes 10000,100000] [--rounds 10] [--queries 100]
     [--token-queries 20] [--scan-queries 2] [--common-queries 40] [--reuse-home DIR]

``--reuse-home DIR`` keeps each size's built home under ``DIR/<size>`` and reuses it on
the next run (the cards are still drawn from the generator, so the queries are the same
as a fresh run's); only the append and materialise time is saved.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _util import vocabulary

from ds_events.events.memory import CardWritten
from ds_events.home import Home
from ds_events.memory.index import (
    query_terms,
    ranking as index_module,
)
from ds_events.memory.store import MemoryContext
from ds_events.memory.text import words
from ds_events.services.memory import cards as svc
from projections.memory import KINDS, SINGULAR

K = 10


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--queries", type=int, default=100, help="natural queries timed per round (ours)")
    ap.add_argument("--token-queries", type=int, default=20, help="queries per round for the token scan")
    ap.add_argument("--scan-queries", type=int, default=2, help="queries per round for the substring scan")
    ap.add_argument("--common-queries", type=int, default=40, help="queries of only common words")
    ap.add_argument("--reuse-home", type=Path, default=None, help="keep built homes under DIR/<size> and reuse them")
    args = ap.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        with contextlib.ExitStack() as stack:
            if args.reuse_home is None:
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ds-bench-mem-")))
            else:
                root = args.reuse_home / str(n)
            _run(n, root, args)


def _run(n: int, root: Path, args: argparse.Namespace) -> None:
    rng = random.Random(7)
    vocab = vocabulary(rng, 20_000)
    # Zipf-like: a few common words, a long tail. Cumulative once: choices() would
    # otherwise sum all 20,000 weights on every call (the same draws either way).
    cum_weights = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    cards = _cards(n, rng, vocab, cum_weights)
    t_fill, quest = _build(root, cards)
    mem = MemoryContext(quest, actor="bench")
    index = mem.store("quest").index
    t0 = time.perf_counter()
    index.rebuild()
    t_rebuild = time.perf_counter() - t0

    queries = [" ".join(rng.choices(vocab, cum_weights=cum_weights, k=rng.randint(2, 5))) for _ in range(args.queries)]
    token_sets = [(c.card_id, frozenset(words(f"{c.title}\n{c.body}\n{' '.join(c.tags)}"))) for c in cards]
    common_words = _common_words(token_sets)
    common_queries = [" ".join(rng.sample(common_words, k=rng.randint(1, 3))) for _ in range(args.common_queries)]
    files = sorted((quest.root / "memory").rglob("*.md"))

    _search(mem, queries[0])  # warm caches, as a running server would be
    rounds: dict[str, list[float]] = {k: [] for k in ("ours", "token", "substring", "capped", "exact")}
    matched = {"token": 0, "token_n": 0, "substring": 0, "substring_n": 0}
    for r in range(args.rounds):
        rounds["ours"].append(_p50(queries, lambda q: _search(mem, q)))
        tq = _slice(queries, r, args.token_queries)
        rounds["token"].append(_p50(tq, lambda q: _token_scan(token_sets, q)))
        matched["token"] += sum(1 for q in tq if _token_scan(token_sets, q))
        matched["token_n"] += len(tq)
        sq = _slice(queries, r, args.scan_queries)
        rounds["substring"].append(_p50(sq, lambda q: _substring_scan(files, q)))
        matched["substring"] += sum(1 for q in sq if _substring_scan(files, q))
        matched["substring_n"] += len(sq)
        rounds["capped"].append(_p50(common_queries, lambda q: _search(mem, q)))
        with _exact():
            rounds["exact"].append(_p50(common_queries, lambda q: _search(mem, q)))

    recall = _recall(mem, set(common_words), common_queries, queries)
    mem.close()
    quest.close()

    print(f"cards={n:>7}  setup {t_fill:6.1f} s  index rebuild from log {t_rebuild:6.2f} s ({n / t_rebuild:,.0f} cards/s)")
    print(f"  p50 per round, median over {args.rounds} rounds [min-max]:")
    print(f"    ranked search (ours)   {_ms(rounds['ours'])}   ({len(queries)} queries/round)")
    print(f"    token scan in memory   {_ms(rounds['token'])}   ({args.token_queries} queries/round, "
          f"{matched['token']}/{matched['token_n']} return a card)")  # fmt: skip
    print(f"    substring scan, files  {_ms(rounds['substring'])}   ({args.scan_queries} queries/round, "
          f"{matched['substring']}/{matched['substring_n']} match anything)")  # fmt: skip
    print(f"  ratio vs token scan:     ours is {_ratio(rounds['token'], rounds['ours'])} faster")
    print(f"  ratio vs substring scan: ours is {_ratio(rounds['substring'], rounds['ours'])} faster")
    cap = index_module._COMMON_ONLY_CANDIDATES
    print(f"  common-only cut-off ({cap} newest candidates), {len(common_queries)} queries of common words only:")
    print(f"    latency capped {_ms(rounds['capped'])}   exact (rank every match) {_ms(rounds['exact'])}   "
          f"capped is {_ratio(rounds['exact'], rounds['capped'])} faster")  # fmt: skip
    for name, (n_q, ids, tie) in recall.items():
        if n_q:
            print(f"    recall@{K} {name:<28} {ids:5.3f} by id, {tie:5.3f} tie-aware   ({n_q} queries)")
    sys.stdout.flush()


# -- the data -----------------------------------------------------------------------


def _cards(n: int, rng: random.Random, vocab: list[str], cum_weights: list[float]) -> list[CardWritten]:
    out = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        title = " ".join(rng.choices(vocab, cum_weights=cum_weights, k=6))
        body = " ".join(rng.choices(vocab, cum_weights=cum_weights, k=40))
        out.append(CardWritten(card_id=f"{SINGULAR[kind]}-{i:08x}", kind=kind, title=title, body=body,
                               tags=[rng.choice(vocab[:50])], source_quest="bench"))  # fmt: skip
    return out


def _build(root: Path, cards: list[CardWritten]) -> tuple[float, object]:
    home = Home(root / "home")
    built = (root / "built").exists()  # written only after a complete fill
    t0 = time.perf_counter()
    if built:
        quest = home.open_quest("bench")
    else:
        shutil.rmtree(root, ignore_errors=True)
        home.init()
        quest = home.create_quest("bench", quest_id="bench")
        for i in range(0, len(cards), 2000):
            quest.log.append(cards[i : i + 2000])
    quest.views.catch_up(keep=False)
    if not built:
        quest.views.materialise(full=True)
        (root / "built").touch()
    return time.perf_counter() - t0, quest


def _common_words(token_sets: list[tuple[str, frozenset[str]]]) -> list[str]:
    """Words in more than the index's common share of the cards (what it calls common)."""
    df: dict[str, int] = {}
    for _, tokens in token_sets:
        for t in tokens:
            df[t] = df.get(t, 0) + 1
    cut = index_module._COMMON_SHARE * len(token_sets)
    return sorted(t for t, d in df.items() if d > cut)


# -- the baselines ------------------------------------------------------------------


def _token_scan(token_sets: list[tuple[str, frozenset[str]]], query: str) -> list[str]:
    """Top 10 cards by how many of the query's content words they contain."""
    terms = frozenset(query_terms(query))
    scored = ((len(terms & tokens), card_id) for card_id, tokens in token_sets)
    return [card_id for score, card_id in heapq.nlargest(K, scored) if score]


def _substring_scan(files: list[Path], query: str) -> list[Path]:
    needle = query.lower()
    return [p for p in files if needle in p.read_text().lower()]


# -- recall of the shortcuts --------------------------------------------------------


@contextlib.contextmanager
def _exact() -> Iterator[None]:
    """Search without either shortcut: every matching card ranked by BM25."""
    saved = index_module._COMMON_MIN_DOCS
    index_module._COMMON_MIN_DOCS = sys.maxsize
    try:
        yield
    finally:
        index_module._COMMON_MIN_DOCS = saved


def _recall(mem: MemoryContext, common: set[str], common_queries: list[str], queries: list[str]) -> dict[str, tuple[int, float, float]]:
    """Mean recall@10 (by id, and tie-aware) of our search against the exact order,
    per path a query takes (``common``: the words in more than the common share)."""
    groups: dict[str, list[tuple[float, float]]] = {}
    labelled = [("common-only cut-off", q) for q in common_queries]
    for q in queries:
        kinds = {t in common for t in query_terms(q)}
        path = "common only" if kinds == {True} else "no common word" if kinds == {False} else "rare + common"
        labelled.append((f"natural mix, {path}", q))
    for label, q in labelled:
        got = _search(mem, q)
        with _exact():
            want = _search(mem, q)
        if not want:
            continue
        want_ids = {w.id for w in want}
        floor = min(w.score for w in want) - 1e-9
        by_id = sum(1 for g in got if g.id in want_ids) / len(want)
        tied = min(sum(1 for g in got if g.id in want_ids or g.score >= floor) / len(want), 1.0)
        groups.setdefault(label, []).append((by_id, tied))
    return {k: (len(v), statistics.fmean(x for x, _ in v), statistics.fmean(y for _, y in v)) for k, v in sorted(groups.items())}


# -- timing -------------------------------------------------------------------------


def _search(mem: MemoryContext, query: str) -> list[svc.SearchHit]:
    """Our top ``K`` through the service, as the MCP tool calls it."""
    return svc.search(mem, svc.SearchCards(query=query, limit=K)).results


def _p50(items: list[str], fn: Callable[[str], object]) -> float:
    times = []
    for q in items:
        t0 = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _slice(items: list[str], r: int, k: int) -> list[str]:
    start = (r * k) % len(items)
    return (items + items)[start : start + k]


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:8.2f} ms [{min(values) * 1e3:.2f}-{max(values) * 1e3:.2f}]"


def _ratio(baseline: list[float], ours: list[float]) -> str:
    ratios = [b / o for b, o in zip(baseline, ours, strict=False)]
    return f"{statistics.median(ratios):,.1f}x [{min(ratios):,.1f}-{max(ratios):,.1f}]"


if __name__ == "__main__":
    main()
