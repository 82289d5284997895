"""The lower part of memory: where cards live and how they are found again.

- :mod:`.store`: a memory log (a quest's or global memory's) with its view, search index
  and card files, and the :class:`MemoryContext` a service call works through;
- :mod:`.index`: the SQLite FTS5 search index, a persisted projection of one log (the
  handle, the file's schema, events to rows, ranked queries);
- :mod:`.sqlite_file`: the index's file shared by processes: busy waited out, a broken
  file replaced by a new generation every process follows, never unlinked under them;
- :mod:`.text`: tokens, the near-duplicate measure, config-pollution checks;
- :mod:`.cards`: checking card values, parsing card files, card summaries.

The commands and queries built on them (write, search, records, audit, the stage plan)
are the memory domain's services, :mod:`ds_events.services.memory`.
"""
