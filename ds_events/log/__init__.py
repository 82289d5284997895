"""The append-only, typed, hash-chained event log: one JSON line per event.

One concept per module:

- :mod:`.format`   the stored line and its hash; peeking at seq/id/type; encoding a batch
- :mod:`.scan`     reading complete lines by byte offset
- :mod:`.lock`     the re-entrant append lock (thread lock + ``flock``), ``append_lock``
- :mod:`.index`    the sparse seq index ``<log>.idx``
- :mod:`.sync`     the open file and its durable prefix; a failed sync is final
- :mod:`.group`    group commit for threads and for asyncio
- :mod:`.recovery` finding the tail; quarantining a torn one
- :mod:`.anchor`   the head anchor ``<log>.head`` and the home's witness: the signed,
  chained head, kept outside the log; :mod:`.headrecord` its records and their checks
- :mod:`.eventlog` :class:`EventLog`, the facade over them, whose methods live by job in
  :mod:`.append` (one write per batch, the sync, :class:`Transaction`), :mod:`.reads`
  (reads by position, ``follow``), :mod:`.opening` (the tail, the anchor's word and a
  torn tail on open) and :mod:`.catchup` (other processes' appends, a replaced file)
"""

from __future__ import annotations

from ..errors import LogError
from .eventlog import MAX_EVENT_BYTES, EventLog, Policy, Transaction
from .format import line_hash
from .index import INDEX_EVERY
from .lock import append_lock

__all__ = ["EventLog", "Transaction", "Policy", "LogError", "line_hash", "append_lock", "INDEX_EVERY", "MAX_EVENT_BYTES"]
