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

import os
import threading
from pathlib import Path
from typing import Any

from .config import check_store_url
from .errors import Invalid
from .log import MAX_EVENT_BYTES, EventLog, Policy
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
    "stored_log_names",
    "local_dir",
    "require_file_store",
    "display_store",
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
) -> EventStore:
    """The log ``name`` (a quest id, :data:`GLOBAL_LOG` or :data:`REGISTRY_LOG`) in the
    store ``url``: the file at ``path``, or ``name``'s rows in the database.

    ``policy``, ``recover`` and ``key`` are the file's (a database's durability is its
    own: ``synchronous_commit``); ``read_only`` opens a handle that never writes.
    """
    if is_file_store(url):
        return EventLog(
            path, quest_id=name, actor=actor, policy=policy, read_only=read_only, recover=recover, key=key,
            max_event_bytes=max_event_bytes,
        )  # fmt: skip
    from .log.postgres import PostgresStore  # psycopg is loaded only by a home that uses it

    return PostgresStore(url, quest_id=name, actor=actor, pool=_pool(url))


def log_exists(url: str, *, path: str | os.PathLike[str], name: str) -> bool:
    """Whether the log ``name`` holds anything yet (a quest exists once its first event does)."""
    if is_file_store(url):
        return os.path.isfile(path)
    return name in stored_log_names(url)


def stored_log_names(url: str) -> list[str]:
    """Every log name the database holds events for, sorted (quests and reserved names)."""
    if is_file_store(url):
        raise ValueError("a file store has no catalogue: list the quest directories")
    from .log.postgres import log_names

    return sorted(log_names(url, pool=_pool(url)))


def local_dir(log: Any, root: str | os.PathLike[str]) -> Path:
    """Where this machine keeps a log's working files (view snapshots, the search index,
    the materialisation lock): beside the file for a file log, ``<root>/.ds`` otherwise."""
    path = getattr(log, "path", None)
    return Path(path).parent if isinstance(path, str) else Path(root) / ".ds"


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

_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(url: str) -> Any:
    """One connection pool per database per process, shared by every log opened on it
    (a daemon with a hundred quests holds a few connections, not a hundred)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            from .log.postgres import open_pool

            pool = _POOLS[url] = open_pool(url)
        return pool
