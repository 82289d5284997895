"""The PostgreSQL store: every quest's event log as rows of one table, for homes spread
over machines, with the file log's contract (gapless seqs, idempotent ids, the same
hash chain byte for byte, cross-process transactions, follow, verify).

One job per module:

- :mod:`.schema`  the table, its statements, writing and reading rows
- :mod:`.pool`    the connection pool stores share, and what each connection is set to
- :mod:`.errors`  database failures as the store contract's errors
- :mod:`.store`   :class:`PostgresStore` and :class:`PgTransaction`: append, lock, read
- :mod:`.follow`  following a quest's rows by notification and poll
- :mod:`.audit`   checking a quest's rows (``ds verify``)

psycopg is imported only where a database is used, so importing this package is cheap.
"""

from __future__ import annotations

from .errors import as_log_error
from .pool import CONNECTION_WAIT, configure_connection, open_pool
from .schema import CHANNEL, LOCK_CLASS, SCHEMA, ensure_schema, insert_lines
from .store import PgTransaction, PostgresStore

__all__ = [
    "PostgresStore",
    "PgTransaction",
    "SCHEMA",
    "ensure_schema",
    "open_pool",
    "insert_lines",
    "configure_connection",
    "CHANNEL",
    "LOCK_CLASS",
    "as_log_error",
    "CONNECTION_WAIT",
]
