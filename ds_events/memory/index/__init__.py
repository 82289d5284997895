"""The ranked search index: a persisted projection of one memory log in SQLite FTS5.

In four parts: :mod:`.memory_index` (the handle: sync with the log, queries), :mod:`.schema`
(the file's tables and bookkeeping), :mod:`.rows` (events to rows) and :mod:`.ranking`
(BM25 queries and the near-duplicate candidates).

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

The file itself is a :class:`~ds_events.memory.sqlite_file.SharedSqlite`: a busy file is waited for, and
a broken or missing one is replaced by a fresh generation that every process moves to
and that the next sync refills from the log; nothing is lost because the log is the
truth. Nothing is opened before the first call needs it.
"""

from __future__ import annotations

from .memory_index import MemoryIndex
from .ranking import SIMILAR_POSTINGS, Hit, fts_query, query_terms
from .rows import is_memory_line, title_key

__all__ = ["MemoryIndex", "Hit", "fts_query", "query_terms", "is_memory_line", "title_key", "SIMILAR_POSTINGS"]
