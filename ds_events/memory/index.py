"""The ranked search index: a persisted projection of one memory log in SQLite FTS5.

Only *active* cards have a row in the full-text table (title, body, tags, hints), so a
superseded card can never be returned. BM25 (FTS5's built-in ``bm25``) ranks matches,
with title and tags weighted over the body. A natural-language query is split into its
content words and the words are OR-ed, so a multi-word question never comes back
empty because one word is missing; BM25 puts cards matching more (and rarer) words first.

The index records the seq (and the event id at that seq) it has applied, and how many
active cards it holds, in the same SQLite transaction as the rows, so it is never ahead of or out of step with itself;
:meth:`MemoryIndex.sync` applies whatever any process appended since, and replaces every
row when the log changed under it (a repair). Several processes may sync one index
file: ``BEGIN IMMEDIATE`` serialises them and the seq is re-read inside the transaction.

The file itself is a :class:`~.sqlite_file.SharedSqlite`: a busy file is waited for, and
a broken or missing one is replaced by a fresh generation that every process moves to
and that the next sync refills from the log; nothing is lost because the log is the
truth. Nothing is opened before the first call needs it.
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ds_events.errors import ServiceError
from ds_events.events import decode_line
from ds_events.events.memory import CardImported, CardSuperseded, CardWritten
from ds_events.store import EventStore

from .sqlite_file import SharedSqlite
from .text import STOPWORDS, content_words, words

__all__ = ["MemoryIndex", "Hit", "fts_query", "query_terms", "is_memory_line", "SIMILAR_POSTINGS"]

_SCHEMA_VERSION = "3"  # 2: term_df joined the schema; 3: cards.title_key
# Column weights for bm25(title, body, tags, hints).
_WEIGHTS = (8.0, 1.0, 4.0, 3.0)
_RANK = f"bm25({', '.join(map(str, _WEIGHTS))})"
_BM25 = f"bm25(fts, {', '.join(map(str, _WEIGHTS))})"  # the same score, called directly
_K1 = 1.2
_COMMON_SHARE = 0.1  # a word in more than this share of the cards is "common"
_COMMON_MIN_DOCS = 2000
# A query of common words only ranks at most this many of the newest matching cards: see
# ``MemoryIndex.search``. Ranking one card costs FTS5 about 1.5 us, so 2,000 keep such a
# query near 5 ms at 100,000 cards, where ranking all matches took 30-140 ms.
_COMMON_ONLY_CANDIDATES = 2000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards(
    rowid INTEGER PRIMARY KEY,
    card_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    quest_id TEXT NOT NULL,
    record_type TEXT NOT NULL DEFAULT '',
    active INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    title_key TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS card_tags(tag TEXT NOT NULL, card_rowid INTEGER NOT NULL, PRIMARY KEY(tag, card_rowid))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term_df(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
_TITLE_KEY_INDEX = "CREATE INDEX IF NOT EXISTS cards_title_key ON cards(title_key)"
# FTS5 writes each transaction's rows as a new segment and merges segments lazily: by
# default a level holds up to 16 of them before they are merged (``crisismerge``), and a
# query looks every word up in every segment. A write folds a few cards per transaction,
# so segments piled up (17 at 10,000 cards) and the near-duplicate query cost 1.2 ms
# instead of 0.4 ms on a merged index. Merging as soon as a level has 4 segments keeps
# about 7 (at most 13 in 10,000 card writes at 50,000 cards) for about 0.02 ms a card.
_CRISISMERGE = 4
# Created once: writing a setting (rank, crisismerge) again would bump FTS5's config
# cookie and make the next query on every other open connection fail. A file made
# without the merge setting is replaced instead (see ``MemoryIndex._check_merging``).
_FTS = f"""
CREATE VIRTUAL TABLE fts USING fts5(title, body, tags, hints, tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO fts(fts, rank) VALUES('rank', '{_RANK}');
INSERT INTO fts(fts, rank) VALUES('crisismerge', {_CRISISMERGE});
"""
_MEMORY_PREFIX = b"memory."
_FOLD_CHUNK = 20_000  # log lines held in memory and applied per transaction
# The near-duplicate check ranks at most this many postings (cards x query words): see
# ``MemoryIndex.similar``. Ranking one costs FTS5 about 3-5 us on a loaded machine
# (400 took 1.8 ms at 50,000 cards, 100 took 0.6 ms); a near-duplicate shares most of a
# card's rarest words, and the rarest few alone stay far below this.
SIMILAR_POSTINGS = 128
_SYNC_ATTEMPTS = 5


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


def is_memory_line(line: bytes) -> bool:
    """Whether a stored log line is a ``memory.*`` event (without decoding it)."""
    return line[9 : 9 + len(_MEMORY_PREFIX)] == _MEMORY_PREFIX


def query_terms(text: str) -> list[str]:
    """The distinct words of a query, stop words dropped (unless that leaves none)."""
    tokens = words(text)
    chosen = [t for t in tokens if t not in STOPWORDS] or tokens
    return list(dict.fromkeys(chosen))[:64]


def fts_query(text: str) -> str | None:
    """An FTS5 query that ORs the quoted content words of ``text`` (None if it has none)."""
    terms = query_terms(text)
    return _or(terms) if terms else None


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _or(terms: Sequence[str]) -> str:
    return " OR ".join(_quote(t) for t in terms)


def _and(terms: Sequence[str]) -> str:
    return " AND ".join(_quote(t) for t in terms)


def _bonus(hit: Hit, common: dict[str, float]) -> float:
    """The BM25 share of the common words in one candidate (see ``MemoryIndex.search``)."""
    total = 0.0
    for weight, column in zip(_WEIGHTS, hit.text, strict=True):
        counts: dict[str, int] = {}
        for w in words(column or ""):
            if w in common:
                counts[w] = counts.get(w, 0) + 1
        total += weight * sum(common[t] * tf * (_K1 + 1) / (tf + _K1) for t, tf in counts.items())
    return total


class MemoryIndex:
    """The FTS5 index of one memory log, stored at ``path`` (generation 0; see
    :mod:`.sqlite_file` for the later ones)."""

    def __init__(self, path: str | os.PathLike[str], log: EventStore) -> None:
        self.path = Path(path)
        self.log = log
        self._db = SharedSqlite(self.path, _setup)
        self._count: tuple[int, int, int] = (-1, -1, 0)  # (connection, applied seq, active cards)
        self._dfs: dict[str, tuple[int, int]] = {}  # term -> (document frequency, cards then)
        self._dfs_conn = -1
        self._steps = 0
        self._merging_checked = -1  # the connection (``opens``) whose file has the merge setting

    # -- public API -----------------------------------------------------------------

    @property
    def applied_seq(self) -> int:
        return self._db.run(_applied_seq)

    @property
    def file(self) -> Path:
        """The file the index currently lives in."""
        return self._db.current_path

    @property
    def busy_waits(self) -> int:
        """How often this handle found the file busy and waited (diagnostics, tests)."""
        return self._db.busy_waits

    def sync(self, *, max_lag: int = 0) -> int:
        """Apply every memory event appended since the index's seq; returns how many.

        With ``max_lag``, an index behind the log by at most that many events is left as
        it is (0 returned): a write's near-duplicate check takes those few cards from the
        caught-up state itself (``projections.memory.changed_after``), and folding several
        cards in one transaction costs less than one each.

        The log is read *before* the index is locked, never while: a thread that holds
        the log's lock (a write checking for duplicates) may be waiting for the index,
        and the log's reader may need that lock to see new lines.
        """
        for _ in range(_SYNC_ATTEMPTS):
            self._check_merging()
            last = self.log.last_seq
            meta = self._db.run(_meta)
            if self._log_changed(meta, last):
                return self._fold(0, reset=True)
            applied = int(meta.get("seq", 0))
            if applied >= last - max_lag:
                return 0
            try:
                return self._fold(applied)
            except _Behind:
                continue  # the file was replaced meanwhile: read its (lower) seq again
        raise ServiceError("the memory index kept being replaced while catching up; try again", code="index_unavailable")

    def rebuild(self) -> None:
        """Replace every row by folding the whole log again.

        Rows are replaced rather than the file, so other processes' open connections
        keep seeing the one index; readers see the old rows until the first chunk
        commits, and an index that is behind only until the last one does.
        """
        for _ in range(_SYNC_ATTEMPTS):
            self._check_merging()
            try:
                self._fold(0, reset=True)
                return
            except _Behind:
                continue  # the file was replaced between two chunks: start again
        raise ServiceError("the memory index kept being replaced while rebuilding; try again", code="index_unavailable")

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        kind: str | None = None,
        tags: Sequence[str] | None = None,
        records_only: bool = False,
        exhaustive: bool = False,
    ) -> list[Hit]:
        """Active cards matching ``query`` best first (BM25), optionally filtered.

        ``exhaustive=True`` skips both shortcuts below and ranks every matching card:
        the reference the shortcuts are measured against (tests, ``bench/``).

        Common-terms optimisation (what triggers it: a query mixing words found in more
        than :data:`_COMMON_SHARE` of the cards with rarer ones, on an index of at least
        :data:`_COMMON_MIN_DOCS` cards): FTS5 ranks the cards matching the rarer words,
        then the common words add their BM25 share (idf x saturated tf, per column
        weight, no length normalisation) to those candidates only. Scoring every card
        that contains a near-ubiquitous word is what makes OR queries slow, and such a
        word can barely change the order among cards that already match a rare one.

        Common-only cap (triggered by the same size rule when every word is common):
        BM25 ranks only the :data:`_COMMON_ONLY_CANDIDATES` newest cards that match (all
        the words, else any), so the work no longer grows with the corpus. Such words
        barely separate cards (FTS5 floors the idf of a word in over half the cards at
        1e-6, leaving ties), the newest are the likeliest to matter, and when fewer
        cards than the cap match the order is exactly that of ranking them all.
        """
        terms = query_terms(query)
        if not terms:
            return []
        if exhaustive:
            where, params = self._filters(kind, tags, records_only)
            return self._db.run(lambda conn: self._query(conn, _or(terms), where, params, limit))
        return self._db.run(lambda conn: self._search(conn, terms, limit, kind, tags, records_only))

    def active_ids(self, *, kind: str | None = None, tags: Sequence[str] | None = None, records_only: bool = False) -> list[str]:
        """Ids of active cards matching the filters, newest first."""
        where, params = self._filters(kind, tags, records_only)
        sql = f"SELECT c.card_id FROM cards c WHERE c.active = 1{where} ORDER BY c.seq DESC"
        return self._db.run(lambda conn: [r[0] for r in conn.execute(sql, params)])

    def similar(self, title: str, body: str, *, limit: int = 25, kind: str | None = None,
                records_only: bool = False) -> list[Hit]:  # fmt: skip
        """Candidates for the near-duplicate check: the active cards (best first, BM25)
        sharing the *rarest* words of (title, body), never more than a bounded number.
        Hits carry no snippet (making one reads and tokenises the card again).

        The words are taken rarest first (their counts come from ``term_df`` in one
        lookup) while those counts add up to at most :data:`SIMILAR_POSTINGS`, so the cards
        ranked are bounded at any store size (a whole-text OR query ranks every card
        sharing any common word). A near-duplicate shares at least half of the card's
        words and almost always its specific ones, and the rarest words are what BM25
        weights most. When even the rarest word is common, only the newest
        :data:`SIMILAR_POSTINGS` cards that contain it are ranked. A card with the same
        title words is a duplicate by definition: the newest such cards are added by one
        lookup of ``cards.title_key`` (:func:`title_key`).
        """
        terms = query_terms(f"{title}\n{body}")
        if not terms:
            return []
        return self._db.run(lambda conn: self._similar(conn, terms, title_key(title), limit, kind, records_only))

    @contextlib.contextmanager
    def tracing(self) -> Iterator[list[str]]:
        """Collect the SQL statements (parameters filled in) this handle runs inside the
        block: what a call asked of SQLite, to count its work (diagnostics, tests)."""
        statements: list[str] = []
        self._db.run(lambda conn: conn.set_trace_callback(statements.append))
        try:
            yield statements
        finally:
            self._db.run(lambda conn: conn.set_trace_callback(None))

    def close(self) -> None:
        self._db.close()

    # -- applying events ------------------------------------------------------------

    def _check_merging(self) -> None:
        """Move off an index file whose full-text table was made without the merge setting
        (:data:`_CRISISMERGE`; by an older version): a fresh generation is published in its
        place (:meth:`SharedSqlite.renew`) and the next fold fills it from the log. Writing
        the setting into the file in use would fail the next query of every other process
        that has it open. Checked once per connection."""
        if self._merging_checked == self._db.opens:
            return
        merging, file, opens = self._db.run(lambda conn: (_merges_eagerly(conn), self._db.opened_file, self._db.opens))
        if merging:
            self._merging_checked = opens
        elif file is not None:
            self._db.renew(file)

    def _fold(self, after: int, *, reset: bool = False) -> int:
        """Apply the log's lines after seq ``after``, read first, in chunks of
        :data:`_FOLD_CHUNK` lines (each its own transaction: the index is at every
        moment the fold of the log up to its recorded seq)."""
        count = 0
        chunk: list[tuple[int, bytes]] = []
        for item in self.log.iter_lines(after_seq=after):
            chunk.append(item)
            if len(chunk) >= _FOLD_CHUNK:
                count += self._db.run(lambda conn, c=chunk, r=reset: self._apply_lines(conn, c, reset=r))  # type: ignore[misc]
                chunk, reset = [], False
        if chunk or reset:
            count += self._db.run(lambda conn: self._apply_lines(conn, chunk, reset=reset))
        return count

    def _apply_lines(self, conn: sqlite3.Connection, lines: list[tuple[int, bytes]], *, reset: bool) -> int:
        count = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            if reset:
                for table in ("meta", "cards", "card_tags", "fts", "term_df"):
                    conn.execute(f"DELETE FROM {table}")
            applied = _applied_seq(conn)  # re-read: another process may have synced meanwhile
            if lines and applied < lines[0][0] - 1:
                raise _Behind  # a fresh file was swapped in since we read the seq
            last_line = None
            active = _active_count(conn)
            for seq, line in lines:
                if seq <= applied:
                    continue
                if is_memory_line(line):
                    active += self._apply(conn, decode_line(line))
                    count += 1
                applied, last_line = seq, line
            if last_line is not None or reset:
                last_id = decode_line(last_line).id if last_line is not None else ""
                conn.executemany(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)",
                    [("seq", str(applied)), ("event_id", last_id), ("schema", _SCHEMA_VERSION), ("active", str(active))],
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return count

    def _apply(self, conn: sqlite3.Connection, event: Any) -> int:
        """Apply one event; returns the change in the number of active cards."""
        match event:
            case CardWritten():
                hints = _hints(event.metadata, event.record_type)
                return self._upsert(conn, event.card_id, event.kind, event.title, event.body, event.tags, hints, event.seq,
                                    quest_id=event.source_quest or event.quest_id, record_type=event.record_type)
            case CardImported():
                row = conn.execute("SELECT active, quest_id, record_type FROM cards WHERE card_id=?", (event.card_id,)).fetchone()
                if row is not None and row[0]:
                    hints = _hints(event.metadata, row[2])
                    return self._upsert(conn, event.card_id, event.kind, event.title, event.body, event.tags, hints,
                                        event.seq, quest_id=row[1], record_type=row[2])
            case CardSuperseded(card_id=card_id):
                row = conn.execute("SELECT rowid, active FROM cards WHERE card_id=?", (card_id,)).fetchone()
                if row is not None:
                    conn.execute("UPDATE cards SET active=0, seq=? WHERE rowid=?", (event.seq, row[0]))
                    _delete_text(conn, row[0])
                    return -1 if row[1] else 0
        return 0

    def _upsert(self, conn: sqlite3.Connection, card_id: str, kind: str, title: str, body: str, tags: list[str],
                hints: str, seq: int, *, quest_id: str, record_type: str) -> int:  # fmt: skip
        row = conn.execute("SELECT rowid, active FROM cards WHERE card_id=?", (card_id,)).fetchone()
        if row is None:
            cur = conn.execute(
                "INSERT INTO cards(card_id, kind, title, quest_id, record_type, active, seq, title_key) VALUES(?,?,?,?,?,1,?,?)",
                (card_id, kind, title, quest_id, record_type, seq, title_key(title)),
            )
            rowid, active, added = cur.lastrowid, 1, 1
        else:
            rowid, active = row
            added = 0
            conn.execute("UPDATE cards SET kind=?, title=?, seq=?, title_key=? WHERE rowid=?",
                         (kind, title, seq, title_key(title), rowid))  # fmt: skip
            _delete_text(conn, rowid)
        if active:
            text = (title, body, " ".join(tags), hints)
            conn.execute("INSERT INTO fts(rowid, title, body, tags, hints) VALUES(?,?,?,?,?)", (rowid, *text))
            _count_terms(conn, text, +1)
            conn.executemany("INSERT OR IGNORE INTO card_tags(tag, card_rowid) VALUES(?, ?)",
                             [(t.lower(), rowid) for t in tags])  # fmt: skip
        return added

    # -- querying -------------------------------------------------------------------

    def _search(self, conn: sqlite3.Connection, terms: list[str], limit: int, kind: str | None,
                tags: Sequence[str] | None, records_only: bool) -> list[Hit]:  # fmt: skip
        where, params = self._filters(kind, tags, records_only)
        n = self._doc_count(conn)
        common: dict[str, float] = {}
        if n >= _COMMON_MIN_DOCS:
            for t in terms:
                df = self._df(conn, t, n)
                if df > _COMMON_SHARE * n:
                    common[t] = math.log((n - df + 0.5) / (df + 0.5) + 1)
        rare = [t for t in terms if t not in common]
        if not common:
            return self._query(conn, _or(terms), where, params, limit)
        if not rare:  # only common words: cards with all of them, else any of them
            cap = _COMMON_ONLY_CANDIDATES
            hits = self._query(conn, _and(terms), where, params, limit, newest=cap)
            return hits if len(hits) >= limit else self._query(conn, _or(terms), where, params, limit, newest=cap)
        hits = self._query(conn, _or(rare), where, params, max(limit * 5, 50), with_text=True)
        rescored = sorted(((h.score + _bonus(h, common), i, h) for i, h in enumerate(hits)), key=lambda x: (-x[0], x[1]))
        return [Hit(h.card_id, h.kind, h.title, h.quest_id, h.record_type, score, h.snippet) for score, _, h in rescored[:limit]]

    def _similar(self, conn: sqlite3.Connection, terms: list[str], key: str, limit: int,
                 kind: str | None, records_only: bool) -> list[Hit]:  # fmt: skip
        where, params = self._filters(kind, None, records_only)
        dfs = _term_dfs(conn, terms)
        chosen: list[str] = []
        postings = 0
        for t in sorted((t for t in terms if dfs[t]), key=lambda t: (dfs[t], t)):
            if postings + dfs[t] > SIMILAR_POSTINGS and chosen:
                break
            chosen.append(t)
            postings += dfs[t]
        if not chosen:
            return self._same_title(conn, key, where, params, limit)  # no word of the card is in any card
        if postings <= SIMILAR_POSTINGS:  # every match ranked: at most SIMILAR_POSTINGS of them
            # bm25() called directly: the same score as ``rank``, which FTS5 evaluates
            # through a statement of its own per row (0.7 vs 0.45 ms for 128 rows).
            rows = conn.execute(
                f"SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, {_BM25} AS score FROM fts "
                f"JOIN cards c ON c.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY score, fts.rowid LIMIT ?",
                [_or(chosen), *params, limit],
            ).fetchall()
            hits = [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), "") for r in rows]
        else:  # even the rarest word is common: rank only its newest matches
            hits = self._newest(conn, _or(chosen), where, params, limit, SIMILAR_POSTINGS)
        seen = {h.card_id for h in hits}
        return hits + [h for h in self._same_title(conn, key, where, params, limit) if h.card_id not in seen]

    def _same_title(self, conn: sqlite3.Connection, key: str, where: str, params: list[Any], limit: int) -> list[Hit]:
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

    def _newest(self, conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int,
                newest: int) -> list[Hit]:  # fmt: skip
        """The best ``limit`` by BM25 among the ``newest`` most recent matching cards,
        without snippets (FTS5 walks the matches by descending rowid and stops)."""
        rows = conn.execute(
            f"SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, {_BM25} FROM fts "
            f"JOIN cards c ON c.rowid = fts.rowid WHERE fts MATCH ?{where} ORDER BY fts.rowid DESC LIMIT ?",
            [match, *params, newest],
        ).fetchall()
        rows.sort(key=lambda r: r[5])  # stable: ties stay newest first
        return [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), "") for r in rows[:limit]]

    def _query(self, conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int, *,
               with_text: bool = False, newest: int | None = None) -> list[Hit]:  # fmt: skip
        if newest is not None:
            return self._query_newest(conn, match, where, params, limit, newest)
        text = ", fts.title, fts.body, fts.tags, fts.hints" if with_text else ""
        sql = (
            "SELECT c.card_id, c.kind, c.title, c.quest_id, c.record_type, fts.rank, "
            f"snippet(fts, 1, '[', ']', '…', 16){text} FROM fts JOIN cards c ON c.rowid = fts.rowid "
            f"WHERE fts MATCH ?{where} ORDER BY fts.rank LIMIT ?"
        )
        rows = conn.execute(sql, [match, *params, limit]).fetchall()
        return [Hit(r[0], r[1], r[2], r[3], r[4], -float(r[5]), r[6] or "", tuple(r[7:]) if with_text else ()) for r in rows]

    def _query_newest(self, conn: sqlite3.Connection, match: str, where: str, params: list[Any], limit: int,
                      newest: int) -> list[Hit]:  # fmt: skip
        """The best ``limit`` by BM25 among the ``newest`` most recent matching cards.

        FTS5 walks the matches in descending rowid order and stops after ``newest``, so
        only those are scored; ties go to the newer card. Snippets are made afterwards,
        for the returned rows only (in the walk they would be made for every candidate).
        """
        top = conn.execute(
            f"SELECT rowid, score FROM (SELECT fts.rowid AS rowid, {_BM25} AS score FROM fts "
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

    def _doc_count(self, conn: sqlite3.Connection) -> int:
        seq = _applied_seq(conn)
        if self._count[:2] != (self._db.opens, seq):
            self._count = (self._db.opens, seq, _active_count(conn))
        return self._count[2]

    def _df(self, conn: sqlite3.Connection, term: str, n: int) -> int:
        # Document frequencies drift slowly: recount a term only when the index grew or
        # shrank by a tenth since it was counted (or the file was replaced).
        if self._dfs_conn != self._db.opens:
            self._dfs, self._dfs_conn = {}, self._db.opens
        cached = self._dfs.get(term)
        if cached is None or abs(n - cached[1]) > 0.1 * max(cached[1], 1):
            df = conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (_or([term]),)).fetchone()[0]
            self._dfs[term] = cached = (df, n)
        return cached[0]

    # -- plumbing -------------------------------------------------------------------

    def _filters(self, kind: str | None, tags: Sequence[str] | None, records_only: bool) -> tuple[str, list[Any]]:
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

    def _log_changed(self, meta: dict[str, str], last_seq: int) -> bool:
        """Whether the index was folded from another log (or schema) than today's."""
        if meta.get("schema", _SCHEMA_VERSION) != _SCHEMA_VERSION:
            return True
        applied = int(meta.get("seq", 0))
        if applied > last_seq:
            return True  # the log is shorter than what we indexed: it was repaired
        if applied:
            event = self.log.get(applied)
            return event is None or event.id != meta.get("event_id")
        return False


class _Behind(Exception):
    """The index's seq went down between reading the log and applying it."""


def title_key(title: str) -> str:
    """The distinct content words of a title, sorted: two cards with the same key have
    the same title as far as the near-duplicate check is concerned (similarity 1.0)."""
    return " ".join(sorted(set(content_words(title))))


def _count_terms(conn: sqlite3.Connection, text: Sequence[str], delta: int) -> None:
    """Add ``delta`` to the document frequency of each distinct word of a card's text.

    ``term_df`` lets the near-duplicate check find a card's rarest words with one
    lookup, where counting FTS5 matches per word cost a millisecond or more per write and
    grew with the store. Its words are :func:`words` tokens, the ones queries are made of;
    FTS5 also stems them, so a word's count of matching cards can be somewhat higher.
    """
    terms = {t for column in text for t in words(column)}
    if delta > 0:
        conn.executemany("INSERT INTO term_df(term, df) VALUES(?, 1) ON CONFLICT(term) DO UPDATE SET df = df + 1",
                         [(t,) for t in terms])  # fmt: skip
    else:
        rows = [(t,) for t in terms]
        conn.executemany("UPDATE term_df SET df = df - 1 WHERE term = ?", rows)
        conn.executemany("DELETE FROM term_df WHERE term = ? AND df <= 0", rows)


def _delete_text(conn: sqlite3.Connection, rowid: int) -> None:
    """Remove a card's full-text row, its tags and its words' counts."""
    old = conn.execute("SELECT title, body, tags, hints FROM fts WHERE rowid=?", (rowid,)).fetchone()
    if old is not None:
        _count_terms(conn, [c or "" for c in old], -1)
    conn.execute("DELETE FROM fts WHERE rowid=?", (rowid,))
    conn.execute("DELETE FROM card_tags WHERE card_rowid=?", (rowid,))


def _term_dfs(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[str, int]:
    """The ``term_df`` count of each of ``terms`` (0 for a word no active card has)."""
    found = dict(conn.execute(f"SELECT term, df FROM term_df WHERE term IN ({','.join('?' * len(terms))})", list(terms)))
    return {t: found.get(t, 0) for t in terms}


def _merges_eagerly(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT v FROM fts_config WHERE k = 'crisismerge'").fetchone()
    return row is not None and row[0] == _CRISISMERGE


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def _applied_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key='seq'").fetchone()
    return int(row[0]) if row else 0


def _active_count(conn: sqlite3.Connection) -> int:
    """Active cards (rows of the full-text table), kept in ``meta`` by every fold; an index
    written before that key existed is counted once, and the next fold stores it."""
    row = conn.execute("SELECT value FROM meta WHERE key='active'").fetchone()
    return int(row[0]) if row else int(conn.execute("SELECT count(*) FROM fts").fetchone()[0])


def _setup(conn: sqlite3.Connection) -> None:
    """The schema, on a new file (and a no-op on a complete one). A file of schema 1
    gains ``cards.title_key`` here; its rows are refolded because its meta says an older schema."""
    conn.executescript(_SCHEMA)
    if "title_key" not in {row[1] for row in conn.execute("PRAGMA table_info(cards)")}:
        try:
            conn.execute("ALTER TABLE cards ADD COLUMN title_key TEXT NOT NULL DEFAULT ''")
        except sqlite3.OperationalError as exc:  # another process added it first
            if "duplicate column" not in str(exc):
                raise
    conn.execute(_TITLE_KEY_INDEX)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts'").fetchone() is None:
        try:
            conn.executescript(f"BEGIN IMMEDIATE; {_FTS} COMMIT;")
        except sqlite3.OperationalError as exc:  # another process created it first
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if "already exists" not in str(exc):
                raise


def _hints(metadata: dict[str, Any], record_type: str) -> str:
    hints = metadata.get("retrieval_hints") or []
    if isinstance(hints, str):
        hints = [hints]
    parts = [str(h) for h in hints] if isinstance(hints, list) else []
    for key in ("stage", "summary"):
        if isinstance(metadata.get(key), str):
            parts.append(metadata[key])
    if record_type:
        parts.append(record_type.replace("_", " "))
    return " ".join(parts)
