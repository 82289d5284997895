"""Ranked queries over the index's rows: BM25 search with its two shortcuts, the bounded
candidates of the near-duplicate check, and the filters both take.

Every function runs inside one :meth:`SharedSqlite.run <..sqlite_file.SharedSqlite.run>`
operation, on the connection it is given; :class:`TermStats` keeps what a handle has
counted (the number of active cards, document frequencies) between queries.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..sqlite_file import SharedSqlite
from ..text import STOPWORDS, words
from .schema import BM25, WEIGHTS, active_count, applied_seq

__all__ = [
    "SIMILAR_POSTINGS",
    "Hit",
    "TermStats",
    "query_terms",
    "fts_query",
    "or_query",
    "ranked",
    "similar",
    "query",
    "filters",
]

_K1 = 1.2
_COMMON_SHARE = 0.1  # a word in more than this share of the cards is "common"
_COMMON_MIN_DOCS = 2000
# A query of common words only ranks at most this many of the newest matching cards: see
# ``MemoryIndex.search``. Ranking one card costs FTS5 about 1.5 us, so 2,000 keep such a
# query near 5 ms at 100,000 cards, where ranking all matches took 30-140 ms.
_COMMON_ONLY_CANDIDATES = 2000
# The near-duplicate check ranks at most this many postings (cards x query words): see
# ``MemoryIndex.similar``. Ranking one costs FTS5 about 3-5 us on a loaded machine
# (400 took 1.8 ms at 50,000 cards, 100 took 0.6 ms); a near-duplicate shares most of a
# card's rarest words, and the rarest few alone stay far below this.
SIMILAR_POSTINGS = 128


@dataclass(frozen=True)
class Hit:
    card_id: str
    kind: str
    title: str
    quest_id: str
    record_type: str
    score: float  # higher is better (negated bm25)
    snippet: str
    text: tuple[str, ...] = ()  # title, body, tags, hints when asked for (rescoring)


def query_terms(text: str) -> list[str]:
    """The distinct words of a query, stop words dropped (unless that leaves none)."""
    tokens = words(text)
    chosen = [t for t in tokens if t not in STOPWORDS] or tokens
    return list(dict.fromkeys(chosen))[:64]


def fts_query(text: str) -> str | None:
    """An FTS5 query that ORs the quoted content words of ``text`` (None if it has none)."""
    terms = query_terms(text)
    return or_query(terms) if terms else None


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def or_query(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms`` (each quoted)."""
    return " OR ".join(_quote(t) for t in terms)


def _and(terms: Sequence[str]) -> str:
    return " AND ".join(_quote(t) for t in terms)


def _bonus(hit: Hit, common: dict[str, float]) -> float:
    """The BM25 share of the common words in one candidate (see ``MemoryIndex.search``)."""
    total = 0.0
    for weight, column in zip(WEIGHTS, hit.text, strict=True):
        counts: dict[str, int] = {}
        for w in words(column or ""):
            if w in common:
                counts[w] = counts.get(w, 0) + 1
        total += weight * sum(common[t] * tf * (_K1 + 1) / (tf + _K1) for t, tf in counts.items())
    return total


class TermStats:
    """What one handle has counted of the index, keyed on its connection (``opens``): a
    replaced file starts afresh."""

    def __init__(self, db: SharedSqlite) -> None:
        self._db = db
        self._count: tuple[int, int, int] = (-1, -1, 0)  # (connection, applied seq, active cards)
        self._dfs: dict[str, tuple[int, int]] = {}  # term -> (document frequency, cards then)
        self._dfs_conn = -1

    def doc_count(self, conn: sqlite3.Connection) -> int:
        """How many active cards the index holds (counted again when its seq moved)."""
        seq = applied_seq(conn)
        if self._count[:2] != (self._db.opens, seq):
            self._count = (self._db.opens, seq, active_count(conn))
        return self._count[2]

    def df(self, conn: sqlite3.Connection, term: str, n: int) -> int:
        """How many active cards hold ``term`` (FTS5's count, stemmed), of ``n``."""
        # Document frequencies drift slowly: recount a term only when the index grew or
        # shrank by a tenth since it was counted (or the file was replaced).
        if self._dfs_conn != self._db.opens:
            self._dfs, self._dfs_conn = {}, self._db.opens
        cached = self._dfs.get(term)
        if cached is None or abs(n - cached[1]) > 0.1 * max(cached[1], 1):
            df = conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (or_query([term]),)).fetchone()[0]
            self._dfs[term] = cached = (df, n)
        return cached[0]


def ranked(conn: sqlite3.Connection, stats: TermStats, terms: list[str], limit: int, kind: str | None,
           tags: Sequence[str] | None, records_only: bool) -> list[Hit]:  # fmt: skip
    """The best ``limit`` active cards for ``terms``, with the shortcuts
    :meth:`MemoryIndex.search <.memory_index.MemoryIndex.search>` explains."""
    where, params = filters(kind, tags, records_only)
    n = stats.doc_count(conn)
    common: dict[str, float] = {}
    if n >= _COMMON_MIN_DOCS:
        for t in terms:
            df = stats.df(conn, t, n)
            if df > _COMMON_SHARE * n:
                common[t] = math.log((n - df + 0.5) / (df + 0.5) + 1)
    rare = [t for t in terms if t not in common]
    if not common:
        return query(conn, or_query(terms), where, params, limit)
    if not rare:  # only common words: cards with all of them, else any of them
        cap = _COMMON_ONLY_CANDIDATES
        hits = query(conn, _and(terms), where, params, limit, newest=cap)
        return hits if len(hits) >= limit else query(conn, or_query(terms), where, params, limit, newest=cap)
    hits = query(conn, or_query(rare), where, params, max(limit * 5, 50), with_text=True)
    rescored = sorted(((h.score + _bonus(h, common), i, h) for i, h in enumerate(hits)), key=lambda x: (-x[0], x[1]))
    return [Hit(h.card_id, h.kind, h.title, h.quest_id, h.record_type, score, h.snippet) for score, _, h in rescored[:limit]]


def similar(conn: sqlite3.Connection, terms: list[str], key: str, limit: int,
            kind: str | None, records_only: bool) -> list[Hit]:  # fmt: skip
    """The near-duplicate candidates of a card with words ``terms`` and title key ``key``
    (:meth:`MemoryIndex.similar <.memory_index.MemoryIndex.similar>`)."""
    where, params = filters(kind, None, records_only)
    dfs = _term_dfs(conn, terms)
    chosen: list[str] = []
    postings = 0
    for t in sorted((t for t in terms if dfs[t]), key=lambda t: (dfs[t], t)):
        if postings + dfs[t] > SIMILAR_POSTINGS and chosen:
            break
        chosen.append(t)
        postings += dfs[t]
    if not chosen:
        return _same_title(conn, key, where, params, limit)  # no word of the card is in any card
    if postings <= SIMILAR_POSTINGS:  # every match ranked: at most SIMILAR_POSTINGS of them
        # bm25() called directly: the same score as ``rank``, which FTS5 evaluates
        # through a statement of its own per row (0.7 vs 0.45 ms for 128 rows).
        rows = conn.execute(
            f"SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, {BM25} AS score FROM fts "
            f"JOIN cards c ON c.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY score, fts.rowid LIMIT ?",
            [or_query(chosen), *params, limit],
        ).fetchall()
        hits = [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), "") for r in rows]
    else:  # even the rarest word is common: rank only its newest matches
        hits = _newest_ranked(conn, or_query(chosen), where, params, limit, SIMILAR_POSTINGS)
    seen = {h.card_id for h in hits}
    return hits + [h for h in _same_title(conn, key, where, params, limit) if h.card_id not in seen]


def _same_title(conn: sqlite3.Connection, key: str, where: str, params: list[Any], limit: int) -> list[Hit]:
    """The newest active cards whose title has exactly the same content words (a
    near-duplicate by definition): one lookup of ``cards.title_key``."""
    if not key:
        return []
    rows = conn.execute(
        f"SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type FROM cards c "
        f"WHERE c.title_key = ? AND c.active = 1{where} ORDER BY c.seq DESC LIMIT ?",
        [key, *params, limit],
    ).fetchall()
    return [Hit(r[0], r[1], r[2], r[3], r[4], 0.0, "") for r in rows]


def _newest_ranked(conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int,
                   newest: int) -> list[Hit]:  # fmt: skip
    """The best ``limit`` by BM25 among the ``newest`` most recent matching cards,
    without snippets (FTS5 walks the matches by descending rowid and stops)."""
    rows = conn.execute(
        f"SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, {BM25} FROM fts "
        f"JOIN cards c ON c.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY fts.rowid DESC LIMIT ?",
        [match, *params, newest],
    ).fetchall()
    rows.sort(key=lambda r: r[5])  # stable: ties stay newest first
    return [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), "") for r in rows[:limit]]


def query(conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int, *,
          with_text: bool = False, newest: int | None = None) -> list[Hit]:  # fmt: skip
    """The best ``limit`` cards for the FTS5 query ``match`` under the :func:`filters`
    ``where``/``params``, with snippets (and their columns, ``with_text``); ``newest``:
    among that many of the most recent matches only."""
    if newest is not None:
        return _query_newest(conn, match, where, params, limit, newest)
    text = ", fts.title, fts.body, fts.tags, fts.hints" if with_text else ""
    sql = (
        "SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, fts.rank, "
        f"snippet(fts, 1, '[', ']', '…', 16){text} FROM fts JOIN cards c ON c.rowid = fts.rowid "
        f"WHERE fts MATCH ?{where} ORDER BY fts.rank LIMIT ?"
    )
    rows = conn.execute(sql, [match, *params, limit]).fetchall()
    return [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), r[6] or "", tuple(r[7:]) if with_text else ()) for r in rows]


def _query_newest(conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int,
                  newest: int) -> list[Hit]:  # fmt: skip
    """The best ``limit`` by BM25 among the ``newest`` most recent matching cards.

    FTS5 walks the matches in descending rowid order and stops after ``newest``, so
    only those are scored; ties go to the newer card. Snippets are made afterwards,
    for the returned rows only (in the walk they would be made for every candidate).
    """
    top = conn.execute(
        f"SELECT rowid, score FROM (SELECT fts.rowid AS rowid, {BM25} AS score FROM fts "
        f"JOIN cards c ON c.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY fts.rowid DESC LIMIT ?) "
        "ORDER BY score, rowid DESC LIMIT ?",
        [match, *params, newest, limit],
    ).fetchall()
    if not top:
        return []
    rows = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT fts.rowid, c.card_id, c.kind, c.title, c.quest_id, c.record_type, "
            "snippet(fts, 1, '[', ']', '…', 16) FROM fts JOIN cards c ON c.rowid = fts.rowid "
            f"WHERE fts MATCH ? AND fts.rowid IN ({','.join('?' * len(top))})",
            [match, *(rowid for rowid, _ in top)],
        )
    }
    out = []
    for rowid, score in top:
        if rowid in rows:
            card_id, kind, title, quest_id, record_type, snippet = rows[rowid]
            out.append(Hit(card_id, kind, title, quest_id, record_type, -float(score), snippet or ""))
    return out


def filters(kind: str | None, tags: Sequence[str] | None, records_only: bool) -> tuple[str, list[Any]]:
    """The SQL conditions (on ``cards c``) and their parameters for the filters a query takes."""
    where, params = "", list[Any]()
    if kind:
        where += " AND c.kind = ?"
        params.append(kind)
    if records_only:
        where += " AND c.record_type != ''"
    wanted = sorted({t.lower() for t in tags or [] if t})
    if wanted:  # every given tag must be on the card
        marks = ",".join("?" * len(wanted))
        where += (
            f" AND c.rowid IN (SELECT card_rowid FROM card_tags WHERE tag IN ({marks}) "
            "GROUP BY card_rowid HAVING count(*) = ?)"
        )
        params += [*wanted, len(wanted)]
    return where, params


def _term_dfs(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
    """The ``term_df`` count of each of ``terms`` (0 for a word no active card has)."""
    found = dict(conn.execute(f"SELECT term, df FROM term_df WHERE term IN ({','.join('?' * len(terms))})", list(terms)))
    return {t: found.get(t, 0) for t in terms}
