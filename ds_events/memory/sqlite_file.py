"""One SQLite file that several processes share, and that may be busy or broken.

A memory search index is a cache of the log, opened by every process that serves the
quest (the daemon, each MCP server, the CLI). Two things go wrong with such a file:

- **Busy.** Another process holds a lock. SQLite's busy handler waits for most of
  these, but not all: when waiting could deadlock (two connections both promoting a
  read lock, as when several processes put a fresh file into WAL mode at once) SQLite
  answers ``database is locked`` at once. Busy is never damage: it is waited out with
  a bounded, jittered backoff (:func:`retry_busy`), and only a wait longer than
  :data:`BUSY_DEADLINE` reaches the caller, as ``index_busy``.
- **Broken.** Garbage bytes, a truncated file, a missing table. The log is the truth,
  so the cure is a new, empty file that the owner refills from the log. It must never
  be made by unlinking the broken file: other processes have it (and its ``-wal`` and
  ``-shm``) open, and a file re-created under the same name would share their
  write-ahead log and lock memory with a different database.

So the file has *generations*. Generation 0 is ``<stem>.sqlite`` itself; a later one is
``<stem>.<token>.sqlite`` (a name never used twice) and ``<stem>.current`` names it.
A process that finds the current generation broken (or missing) takes
``<stem>.lock``, checks that nobody replaced it meanwhile, builds a fresh file aside,
moves it into place and points ``<stem>.current`` at it. Every process stats the
pointer and the current file before each operation (two ``stat`` calls), so each one
notices and reopens. A generation is deleted only when a later replacement supersedes
the one after it, i.e. once every process has had a whole generation to move off it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import random
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ds_events.errors import ServiceError
from ds_events.paths import write_atomic

__all__ = ["SharedSqlite", "retry_busy", "is_busy", "is_corrupt", "BUSY_DEADLINE"]

T = TypeVar("T")

# How long one operation may keep finding the file busy before the caller hears of it.
BUSY_DEADLINE = 60.0
# SQLite's own busy handler waits this long per attempt; deadlock-avoiding BUSY (which
# skips the handler) is retried by ``retry_busy`` until BUSY_DEADLINE.
_BUSY_HANDLER_SECONDS = 5.0
_BACKOFF_FIRST, _BACKOFF_MAX = 0.001, 0.1
_RECOVERIES = 2  # broken-file replacements tried within one operation
_CORRUPT_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
# SQLITE_ERROR messages that mean the schema was damaged from outside (tables deleted
# by hand, FTS shadow tables missing): the file is as good as corrupt.
_DAMAGED_SCHEMA = ("malformed", "vtable constructor failed", "no such table", "no such column")
# The file moved, vanished or cannot be read right now: reopen by name and try again.
_REOPEN_CODES = {sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY}


def is_busy(exc: BaseException) -> bool:
    """``database is locked`` / ``database table is locked`` in any of their variants."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def is_corrupt(exc: BaseException) -> bool:
    """An error that says the file itself is damaged (not that it is busy)."""
    if not isinstance(exc, sqlite3.DatabaseError) or is_busy(exc):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _CORRUPT_CODES:
        return True
    return any(m in str(exc) for m in _DAMAGED_SCHEMA)


def retry_busy(fn: Callable[[], T], *, deadline: float | None = None, on_busy: Callable[[], None] | None = None) -> T:
    """``fn()``, called again after a short, growing, jittered pause while it finds the
    database busy (for at most ``deadline`` seconds, default :data:`BUSY_DEADLINE`).
    ``fn`` must leave no transaction open when it raises: the lock it holds is what the
    other side waits for."""
    deadline = BUSY_DEADLINE if deadline is None else deadline
    stop = time.monotonic() + deadline
    delay = _BACKOFF_FIRST
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if on_busy is not None:
                on_busy()
            if time.monotonic() >= stop:
                raise ServiceError(
                    f"the memory index stayed busy for {deadline:.0f} s ({exc}): another process holds it; try again",
                    code="index_busy",
                ) from exc
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, _BACKOFF_MAX)


class SharedSqlite:
    """The current generation of one shared SQLite file, opened lazily.

    ``setup(conn)`` creates the schema of a new file (run once per generation, on the
    file built aside, before anyone else can see it) and must be harmless on an existing
    one. :meth:`run` gives an operation a connection to the current generation, waits
    out busy, and replaces a broken generation before trying the operation again; an
    operation must therefore be safe to repeat (each of ours is a read, or a
    transaction that re-reads its position inside).
    """

    def __init__(self, path: str | os.PathLike[str], setup: Callable[[sqlite3.Connection], None]) -> None:
        self.base = Path(path)  # generation 0
        self._setup = setup
        stem = self.base.name.removesuffix(".sqlite")
        self._pointer = self.base.with_name(f"{stem}.current")
        self._lock_path = self.base.with_name(f"{stem}.lock")
        self._gen_re = re.compile(rf"{re.escape(stem)}\.[0-9a-f]{{16}}\.sqlite")
        self._stem = stem
        self._mutex = threading.RLock()  # one connection, used by one thread at a time
        self._conn: sqlite3.Connection | None = None
        self._opened: tuple[Path, int, int] | None = None  # (file, st_dev, st_ino) of _conn
        self._pointer_seen: tuple[tuple[int, int, int], Path | None] | None = None
        self.opens = 0  # how many times a connection was (re)opened: callers key caches on it
        self.busy_waits = 0  # how many times an operation found the file busy and waited
        self.replaced = 0  # how many broken generations this process replaced

    # -- public API -----------------------------------------------------------------

    @property
    def current_path(self) -> Path:
        """The file of the current generation (what :meth:`run` uses)."""
        return self._current() or self.base

    def run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """``op(conn)`` on the current generation; see the class docstring."""
        with self._mutex:
            recoveries = 0
            reopened = False
            while True:
                try:
                    conn = self._connection()
                    return retry_busy(functools.partial(op, conn), on_busy=self._count_busy)
                except sqlite3.DatabaseError as exc:
                    self.close()  # whatever happened, the next attempt starts from the name
                    if is_corrupt(exc) and recoveries < _RECOVERIES:
                        recoveries += 1
                        self._replace(self.opened_file or self.base)
                        continue
                    code = getattr(exc, "sqlite_errorcode", -1) & 0xFF
                    if code in _REOPEN_CODES and not reopened:
                        reopened = True
                        continue
                    raise ServiceError(
                        f"the memory index at {self.current_path.name} failed ({exc}); the next call reopens it",
                        code="index_unavailable",
                    ) from exc

    @property
    def opened_file(self) -> Path | None:
        """The file of the open connection (None before the first :meth:`run`); read it
        inside an operation to know which generation that operation saw."""
        return self._opened[0] if self._opened else None

    def renew(self, stale: Path) -> None:
        """Publish a fresh, empty generation in place of ``stale`` (a file usable but
        out of date, e.g. made with older settings), unless another process already has.
        Like a broken file's replacement: nobody's open file is touched, and every
        process moves to the new one at its next operation."""
        with self._mutex:
            self._replace(stale)

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
            self._conn = None

    # -- opening --------------------------------------------------------------------

    def _count_busy(self) -> None:
        self.busy_waits += 1

    def _connection(self) -> sqlite3.Connection:
        for _ in range(_RECOVERIES + 2):
            target = self._current()
            if target is None:  # the pointer is unreadable: start a new generation
                self._replace(None)
                continue
            try:
                st = os.stat(target)
            except FileNotFoundError:
                self.close()
                self._create_missing(target)
                continue
            if self._conn is not None and self._opened == (target, st.st_dev, st.st_ino):
                return self._conn
            self.close()
            try:
                self._conn = retry_busy(functools.partial(self._open, target, create=False), on_busy=self._count_busy)
            except sqlite3.DatabaseError as exc:
                if is_corrupt(exc):
                    self._replace(target)
                    continue
                if getattr(exc, "sqlite_errorcode", -1) & 0xFF == sqlite3.SQLITE_CANTOPEN:
                    continue  # vanished between stat and open: look again
                raise
            self._opened = (target, st.st_dev, st.st_ino)
            self.opens += 1
            return self._conn
        raise ServiceError(f"the memory index at {self.base.parent} keeps changing under us; try again", code="index_unavailable")

    def _open(self, path: Path, *, create: bool) -> sqlite3.Connection:
        # mode=rw: a file that vanished is an error here, never silently re-created next
        # to another generation's -wal and -shm. Only builds (under the lock) create.
        uri = f"file:{_uri_path(path)}?mode={'rwc' if create else 'rw'}"
        conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_HANDLER_SECONDS, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._setup(conn)
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            conn.close()
            raise
        return conn

    def _current(self) -> Path | None:
        """The current generation's file; None if the pointer names something invalid."""
        try:
            st = os.stat(self._pointer)
        except FileNotFoundError:
            self._pointer_seen = None
            return self.base
        sig = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._pointer_seen is None or self._pointer_seen[0] != sig:
            self._pointer_seen = (sig, self._read_pointer())
        return self._pointer_seen[1]

    def _read_pointer(self) -> Path | None:
        try:
            fd = os.open(self._pointer, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return self.base
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None  # a planted link: never followed
            raise
        with os.fdopen(fd, "rb") as f:
            name = f.read(200).decode("ascii", "replace").strip()
        return self.base.with_name(name) if self._gen_re.fullmatch(name) else None

    # -- replacing ------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.base.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _create_missing(self, target: Path) -> None:
        """The current generation's file does not exist: make it, or move past it."""
        with self._locked():
            self._pointer_seen = None
            if self._current() != target or target.exists():
                return  # somebody else made it (or moved on) while we waited
            leftovers = any(Path(f"{target}{s}").exists() for s in ("-wal", "-shm", "-journal"))
            if target == self.base and not leftovers:
                self._publish_base()  # a fresh store: its first file
            else:
                # Deleted under live connections (their -wal/-shm are still there): a new
                # file of that name would be joined to them, so take a new name instead.
                self._publish_generation(superseded=target)

    def _replace(self, broken: Path | None) -> None:
        """``broken`` (None: an unreadable pointer) is damaged: publish a fresh generation
        unless another process already has."""
        with self._locked():
            self._pointer_seen = None
            current = self._current()
            if current is not None and current != broken:
                return
            self._publish_generation(superseded=broken)

    def _publish_base(self) -> None:
        tmp = self._build()
        try:
            os.link(tmp, self.base)  # never over an existing file
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)

    def _publish_generation(self, *, superseded: Path | None) -> None:
        name = f"{self._stem}.{secrets.token_hex(8)}.sqlite"
        tmp = self._build()
        os.rename(tmp, self.base.with_name(name))
        self.replaced += 1
        write_atomic(self._pointer, f"{name}\n".encode())
        self._pointer_seen = None
        self._delete_generations(keep={name, superseded.name if superseded else ""})

    def _build(self) -> Path:
        """A complete, empty file under a temporary name, closed (so it has no -wal)."""
        # Builds only happen under the lock, so any other one left is a crashed build's.
        for stale in self.base.parent.glob(f".{self._stem}.*.building*"):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        tmp = self.base.with_name(f".{self._stem}.{secrets.token_hex(8)}.building")
        conn = self._open(tmp, create=True)
        conn.close()
        return tmp

    def _delete_generations(self, *, keep: set[str]) -> None:
        # Only generations older than the one just superseded: a process still on that
        # one moves to the new one at its next call (it stats the pointer first).
        for entry in os.scandir(self.base.parent):
            name = entry.name
            for suffix in ("-wal", "-shm", "-journal"):
                name = name.removesuffix(suffix)
            if name in keep or not (name == self.base.name or self._gen_re.fullmatch(name)):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def _uri_path(path: Path) -> str:
    return str(path.resolve()).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
