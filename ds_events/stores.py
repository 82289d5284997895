"""Which store a home's logs live in, and the one place a log is opened.

A home keeps its logs in one store, named by ``store:`` in ``config.yaml`` (or
``DS_STORE`` in the environment, which wins): ``file`` (the default: each log is a
JSONL file, ``<root>/.ds/events.jsonl``) or a PostgreSQL URL (one database several
homes share; each log is a stream of rows keyed by its name). Everything that opens
a quest's log, global memory's or the baseline registry's goes through
:func:`open_log`, so services, projections, MCP handlers and the CLI never know which
store they talk to: they get an :class:`~ds_events.store.EventStore`.

What only makes sense for a file (the head anchor, the torn-tail recovery, ``ds
repair``, the sparse index) stays with the file store; asking for it on PostgreSQL is
:class:`~ds_events.errors.Invalid` ``file_store_only`` (:func:`require_file_store`).
The files a person reads (memory cards, ``quest.yaml``, ``SUMMARY.md``), the search
index and view snapshots are per-machine projections under each home, rebuilt from
whichever store holds the log; :func:`local_dir` says where a log's working files go.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .config import check_store_url
from .errors import Invalid, LogError
from .log import MAX_EVENT_BYTES, EventLog, Policy
from .log.postgres import CONNECTION_WAIT, PostgresStore, as_log_error, open_pool
from .store import EventStore

__all__ = [
    "FILE",
    "GLOBAL_LOG",
    "REGISTRY_LOG",
    "RESERVED_LOG_NAMES",
    "resolve_store",
    "is_file_store",
    "open_log",
    "log_exists",
    "delete_stored_log",
    "stored_log_names",
    "local_dir",
    "require_file_store",
    "display_store",
    "pool",
    "close_pool",
    "connection",
]

FILE = "file"
# The names of a home's logs that are not quests': a quest may not take them (on a
# shared database its log would be theirs).
GLOBAL_LOG = "global"
REGISTRY_LOG = "baseline-registry"
RESERVED_LOG_NAMES = frozenset({GLOBAL_LOG, REGISTRY_LOG})


def resolve_store(configured: str) -> str:
    """The store in force: ``DS_STORE`` if set (checked like the config key), else
    ``configured`` (``config.yaml``'s ``store``)."""
    env = os.environ.get("DS_STORE")
    if env:
        return check_store_url(env, "DS_STORE")
    return configured


def is_file_store(url: str) -> bool:
    return url == FILE


def display_store(url: str) -> str:
    """``url`` without its password, for messages."""
    if is_file_store(url):
        return url
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def open_log(
    url: str,
    *,
    path: str | os.PathLike[str],
    name: str,
    actor: str = "",
    policy: Policy = "group",
    read_only: bool = False,
    recover: bool = True,
    key: bytes | None = None,
    max_event_bytes: int = MAX_EVENT_BYTES,
    connection_wait: float = CONNECTION_WAIT,
    witness: str | os.PathLike[str] | None = None,
) -> EventStore:
    """The log ``name`` (a quest id, :data:`GLOBAL_LOG` or :data:`REGISTRY_LOG`) in the
    store ``url``: the file at ``path``, or ``name``'s rows in the database.

    ``policy``, ``recover``, ``key`` and ``witness`` (the home's copy of its head) are
    the file's (a database's durability is its own: ``synchronous_commit``);
    ``connection_wait`` is the database's (the most seconds an operation waits for a
    connection); ``read_only`` opens a handle that never writes.
    """
    if is_file_store(url):
        return EventLog(
            path, quest_id=name, actor=actor, policy=policy, read_only=read_only, recover=recover, key=key,
            max_event_bytes=max_event_bytes, witness=witness,
        )  # fmt: skip
    return PostgresStore(
        url,
        quest_id=name,
        actor=actor,
        pool=pool(url, wait=connection_wait),
        read_only=read_only,
        max_event_bytes=max_event_bytes,
        connection_wait=connection_wait,
    )


def log_exists(url: str, *, path: str | os.PathLike[str], name: str, wait: float = CONNECTION_WAIT) -> bool:
    """Whether the log ``name`` holds anything yet (a quest exists once its first event
    does); ``wait``: as for :func:`connection`."""
    if is_file_store(url):
        return os.path.isfile(path)
    with connection(url, wait=wait) as conn:
        return conn.execute("SELECT 1 FROM ds_events WHERE quest_id = %s LIMIT 1", (name,)).fetchone() is not None


def stored_log_names(url: str, *, wait: float = CONNECTION_WAIT) -> list[str]:
    """Every log name the database holds events for, sorted (quests and reserved
    names); ``wait``: as for :func:`connection`."""
    if is_file_store(url):
        raise ValueError("a file store has no catalogue: list the quest directories")
    with connection(url, wait=wait) as conn:
        # A loose index scan: one probe of the primary key per log, not a pass over every row.
        rows = conn.execute(
            "WITH RECURSIVE names(q) AS ("
            " (SELECT quest_id FROM ds_events ORDER BY quest_id LIMIT 1)"
            " UNION ALL"
            " SELECT (SELECT quest_id FROM ds_events WHERE quest_id > names.q ORDER BY quest_id LIMIT 1)"
            " FROM names WHERE names.q IS NOT NULL"
            ") SELECT q FROM names WHERE q IS NOT NULL"
        ).fetchall()
    return [name for (name,) in rows]


def delete_stored_log(url: str, name: str, *, wait: float = CONNECTION_WAIT) -> int:
    """Remove every row of the log ``name`` from the database ``url``; returns how many
    (``ds quest delete`` on a database store; the caller holds the quest's lock)."""
    if is_file_store(url):
        raise ValueError("a file store's log is its file: remove the quest directory")
    with connection(url, wait=wait) as conn:
        return int(conn.execute("DELETE FROM ds_events WHERE quest_id = %s", (name,)).rowcount)


def local_dir(log: Any, root: str | os.PathLike[str]) -> Path:
    """Where this machine keeps a log's working files (view snapshots, the search index,
    the materialisation lock): beside the file for a file log, ``<root>/.ds`` otherwise."""
    return Path(log.path).parent if isinstance(log, EventLog) else Path(root) / ".ds"


def pool(url: str, *, wait: float = CONNECTION_WAIT) -> Any:
    """This process's connection pool for the database ``url``, shared by every log
    opened on it (a daemon with a hundred quests holds a few connections, not a
    hundred); its connections commit synchronously. Closed when the process exits.
    ``wait`` bounds the first connection (and is the pool's default wait: each store
    passes its own); a server that cannot be reached is :class:`LogUnavailable`."""
    key = (os.getpid(), url)  # a forked child opens its own: connections are not shared across a fork
    with _POOLS_LOCK:
        found = _POOLS.get(key)
        if found is None:
            import psycopg  # psycopg is loaded only by a home that uses a database

            try:
                found = open_pool(url, max_size=_POOL_SIZE, name="ds", wait=wait)  # a down server is said at once
            except psycopg.Error as exc:
                raise _unreachable(url, exc, wait) from exc
            if not _POOLS:
                atexit.register(_close_pools)
            _POOLS[key] = found
        return found


def close_pool(url: str) -> None:
    """Close this process's pool for ``url`` (a database about to be dropped)."""
    with _POOLS_LOCK:
        found = _POOLS.pop((os.getpid(), url), None)
    if found is not None:
        found.close()


@contextlib.contextmanager
def connection(url: str, *, wait: float = CONNECTION_WAIT) -> Iterator[Any]:
    """A connection of :func:`pool` for a query outside a log (listing the logs, ``ds
    store migrate``), waited for ``wait`` seconds at most; every database error in the
    block is a :class:`LogError` (``log_timeout``, ``log_connection_lost``, ...)."""
    import psycopg

    where = display_store(url)
    try:
        with pool(url, wait=wait).connection(timeout=wait) as conn:
            try:
                yield conn
            except psycopg.Error as exc:
                raise as_log_error(exc, where, lost=conn.broken) from exc
    except psycopg.Error as exc:  # no connection came (a pool timeout), or giving it back failed
        raise as_log_error(exc, where, wait=wait) from exc


def require_file_store(url: str, what: str) -> None:
    """Raise ``file_store_only`` if ``url`` is not the file store: ``what`` (a command or
    an operation) works on a log file only."""
    if not is_file_store(url):
        raise Invalid(
            f"{what} works on a log file only; this home's logs are in {display_store(url)}, where the database "
            "keeps them whole (nothing to repair or recover): use `ds verify` to audit a quest there",
            code="file_store_only",
            store=display_store(url),
        )


# -- private helpers ----------------------------------------------------------------------

_POOLS: dict[tuple[int, str], Any] = {}
_POOLS_LOCK = threading.Lock()
_POOL_SIZE = 8  # connections per database per process at most (follow opens its own)


def _unreachable(url: str, exc: BaseException, wait: float) -> BaseException:
    error = as_log_error(exc, f"cannot use the store {display_store(url)}", wait=wait)
    if not isinstance(error, LogError):
        return error
    # The same class (and so the same code), with what to check when it persists.
    return type(error)(f"{error}; check that the server runs and the URL in config.yaml's store (or DS_STORE) is right")


def _close_pools() -> None:
    with _POOLS_LOCK:
        for (pid, _url), found in _POOLS.items():
            if pid == os.getpid():
                found.close()
        _POOLS.clear()
