"""One process's handle on a memory log's search index: keeping its rows the fold of the
log (:meth:`MemoryIndex.sync`, :meth:`MemoryIndex.rebuild`) and answering queries.

The log is the truth: the rows (:mod:`.rows`) are its fold up to the seq recorded beside
them (:mod:`.schema`), and every process that serves the quest may sync the one file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from ds_events.errors import ServiceError
from ds_events.store import EventStore

from ..sqlite_file import SharedSqlite
from . import ranking
from .ranking import Hit
from .rows import Behind, apply_lines, title_key
from .schema import SCHEMA_VERSION, applied_seq, merges_eagerly, read_meta, setup

__all__ = ["MemoryIndex"]

_FOLD_CHUNK = 20_000  # log lines held in memory and applied per transaction
_SYNC_ATTEMPTS = 5


class MemoryIndex:
    """The FTS5 index of one memory log, stored at ``path`` (generation 0; see
    :mod:`ds_events.memory.sqlite_file` for the later ones)."""

    def __init__(self, path: str | os.PathLike[str], log: EventStore) -> None:
        self.path = Path(path)
        self.log = log
        self._db = SharedSqlite(self.path, setup)
        self._stats = ranking.TermStats(self._db)
        self._merging_checked = -1  # the connection (``opens``) whose file has the merge setting

    # -- public API -----------------------------------------------------------------

    @property
    def applied_seq(self) -> int:
        return self._db.run(applied_seq)

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
            meta = self._db.run(read_meta)
            if self._log_changed(meta, last):
                return self._fold(0, reset=True)
            applied = int(meta.get("seq", 0))
            if applied >= last - max_lag:
                return 0
            try:
                return self._fold(applied)
            except Behind:
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
            except Behind:
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
        than :data:`~.ranking._COMMON_SHARE` of the cards with rarer ones, on an index of at least
        :data:`~.ranking._COMMON_MIN_DOCS` cards): FTS5 ranks the cards matching the rarer words,
        then the common words add their BM25 share (idf x saturated tf, per column
        weight, no length normalisation) to those candidates only. Scoring every card
        that contains a near-ubiquitous word is what makes OR queries slow, and such a
        word can barely change the order among cards that already match a rare one.

        Common-only cap (triggered by the same size rule when every word is common):
        BM25 ranks only the :data:`~.ranking._COMMON_ONLY_CANDIDATES` newest cards that match (all
        the words, else any), so the work no longer grows with the corpus. Such words
        barely separate cards (FTS5 floors the idf of a word in over half the cards at
        1e-6, leaving ties), the newest are the likeliest to matter, and when fewer
        cards than the cap match the order is exactly that of ranking them all.
        """
        terms = ranking.query_terms(query)
        if not terms:
            return []
        if exhaustive:
            where, params = ranking.filters(kind, tags, records_only)
            return self._db.run(lambda conn: ranking.query(conn, ranking.or_query(terms), where, params, limit))
        return self._db.run(lambda conn: ranking.ranked(conn, self._stats, terms, limit, kind, tags, records_only))

    def active_ids(self, *, kind: str | None = None, tags: Sequence[str] | None = None, records_only: bool = False) -> list[str]:
        """Ids of active cards matching the filters, newest first."""
        where, params = ranking.filters(kind, tags, records_only)
        sql = f"SELECT c.card_id FROM cards c WHERE c.active = 1{where} ORDER BY c.seq DESC"
        return self._db.run(lambda conn: [r[0] for r in conn.execute(sql, params)])

    def similar(self, title: str, body: str, *, limit: int = 25, kind: str | None = None,
                records_only: bool = False) -> list[Hit]:  # fmt: skip
        """Candidates for the near-duplicate check: the active cards (best first, BM25)
        sharing the *rarest* words of (title, body), never more than a bounded number.
        Hits carry no snippet (making one reads and tokenises the card again).

        The words are taken rarest first (their counts come from ``term_df`` in one
        lookup) while those counts add up to at most :data:`~.ranking.SIMILAR_POSTINGS`, so the cards
        ranked are bounded at any store size (a whole-text OR query ranks every card
        sharing any common word). A near-duplicate shares at least half of the card's
        words and almost always its specific ones, and the rarest words are what BM25
        weights most. When even the rarest word is common, only the newest
        :data:`~.ranking.SIMILAR_POSTINGS` cards that contain it are ranked. A card with the same
        title words is a duplicate by definition: the newest such cards are added by one
        lookup of ``cards.title_key`` (:func:`title_key`).
        """
        terms = ranking.query_terms(f"{title}\n{body}")
        if not terms:
            return []
        return self._db.run(lambda conn: ranking.similar(conn, terms, title_key(title), limit, kind, records_only))

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
        (:data:`~.schema.CRISISMERGE`; by an older version): a fresh generation is published in its
        place (:meth:`SharedSqlite.renew`) and the next fold fills it from the log. Writing
        the setting into the file in use would fail the next query of every other process
        that has it open. Checked once per connection."""
        if self._merging_checked == self._db.opens:
            return
        merging, file, opens = self._db.run(lambda conn: (merges_eagerly(conn), self._db.opened_file, self._db.opens))
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
                count += self._db.run(functools.partial(self._apply_lines, lines=chunk, reset=reset))
                chunk, reset = [], False
        if chunk or reset:
            count += self._db.run(lambda conn: self._apply_lines(conn, chunk, reset=reset))
        return count

    def _apply_lines(self, conn: sqlite3.Connection, lines: list[tuple[int, bytes]], *, reset: bool) -> int:
        # One fold transaction (:func:`.rows.apply_lines`), on this handle's connection.
        return apply_lines(conn, lines, reset=reset)

    def _log_changed(self, meta: dict[str, str], last_seq: int) -> bool:
        """Whether the index was folded from another log (or schema) than today's."""
        if meta.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
            return True
        applied = int(meta.get("seq", 0))
        if applied > last_seq:
            return True  # the log is shorter than what we indexed: it was repaired
        if applied:
            event = self.log.get(applied)
            return event is None or event.id != meta.get("event_id")
        return False

