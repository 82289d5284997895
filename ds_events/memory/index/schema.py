"""The index file's tables, its full-text settings and the bookkeeping kept beside the rows.

``meta`` holds the seq (and the event id at that seq) the rows are the fold of, how many
active cards they hold and the schema version, written in the same transaction as the
rows (:mod:`.rows`), so the file is never ahead of or out of step with itself.
"""

from __future__ import annotations

import sqlite3

__all__ = [
    "SCHEMA_VERSION",
    "WEIGHTS",
    "BM25",
    "CRISISMERGE",
    "setup",
    "read_meta",
    "applied_seq",
    "active_count",
    "merges_eagerly",
]

SCHEMA_VERSION = "3"  # 2: term_df joined the schema; 3: cards.title_key
# Column weights for bm25(title, body, tags, hints).
WEIGHTS = (8.0, 1.0, 4.0, 3.0)
_RANK = f"bm25({', '.join(map(str, WEIGHTS))})"
BM25 = f"bm25(fts, {', '.join(map(str, WEIGHTS))})"  # the same score, called directly
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
CRISISMERGE = 4
# Created once: writing a setting (rank, crisismerge) again would bump FTS5's config
# cookie and make the next query on every other open connection fail. A file made
# without the merge setting is replaced instead (see ``MemoryIndex._check_merging``).
_FTS = f"""
CREATE VIRTUAL TABLE fts USING fts5(title, body, tags, hints, tokenize='porter unicode61 remove_diacritics 2');
INSERT INTO fts(fts, rank) VALUES('rank', '{_RANK}');
INSERT INTO fts(fts, rank) VALUES('crisismerge', {CRISISMERGE});
"""


def setup(conn: sqlite3.Connection) -> None:
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


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def applied_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key='seq'").fetchone()
    return int(row[0]) if row else 0


def active_count(conn: sqlite3.Connection) -> int:
    """Active cards (rows of the full-text table), kept in ``meta`` by every fold; an index
    written before that key existed is counted once, and the next fold stores it."""
    row = conn.execute("SELECT value FROM meta WHERE key='active'").fetchone()
    return int(row[0]) if row else int(conn.execute("SELECT count(*) FROM fts").fetchone()[0])


def merges_eagerly(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT v FROM fts_config WHERE k = 'crisismerge'").fetchone()
    return row is not None and row[0] == CRISISMERGE

