"""``ds store migrate``: copy a log from one store to another, byte for byte.

The stored lines move as they are: seq, ids, timestamps and the ``prev`` chain do not
change, so the target verifies with the same hashes and the same anchors (git
trailers, snapshots) still vouch for it. What the target already holds decides:

- nothing: every line is copied;
- the same lines: nothing to do (a re-run is a no-op);
- the first lines of the source, the same bytes: the rest is copied (a migration cut
  short resumes);
- anything else (another line at some seq, or more lines): :class:`Conflict`
  ``history_differs``, and nothing is written.

Copy while nothing appends to the source (stop the daemon and the runners): lines
appended to the source after the copy began are not copied, and a re-run copies them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import Conflict, Invalid, NotFound
from .fdio import fsync_dir, write_all
from .log import EventLog, line_hash
from .log.anchor import HeadAnchor
from .log.format import line_seq
from .stores import connection, display_store, is_file_store, open_log

__all__ = ["MigrateResult", "migrate_log"]

_CHUNK = 2000  # lines per write (and per database round trip)


@dataclass(frozen=True)
class MigrateResult:
    name: str  # the log's name (a quest id)
    source: str  # the stores, passwords hidden
    target: str
    events: int  # lines the source holds
    copied: int  # lines written to the target now
    last_seq: int
    head: str  # the chain hash of the last line, equal on both stores


def migrate_log(home: Any, name: str, *, source: str, target: str, root: Path | None = None) -> MigrateResult:
    """Copy the log ``name`` of ``home`` from the store ``source`` to ``target``.

    ``root``: the directory the log's files belong to (default ``home.log_root(name)``);
    a file target is ``<root>/.ds/events.jsonl``, written with the home's key on its
    head anchor.
    """
    if source == target:
        raise Invalid(f"the log is in {display_store(source)} already: give --to another store", code="same_store")
    root = root if root is not None else home.log_root(name)
    path = root / ".ds" / "events.jsonl"
    if is_file_store(source) and not path.is_file():
        raise NotFound(f"no log file {path}: nothing to migrate", code="unknown_quest")
    src = open_log(source, path=path, name=name, actor="migrate", read_only=True)
    try:
        if src.last_seq == 0:
            raise NotFound(f"no log {name!r} in {display_store(source)}: nothing to migrate", code="unknown_quest")
        if is_file_store(target):
            copied = _into_file(src, path, key=home.log_key(), name=name, witness=home.log_witness(name))
        else:
            copied = _into_database(src, target, name=name)
        head = src.head()
    finally:
        src.close()
    return MigrateResult(
        name=name, source=display_store(source), target=display_store(target), events=head.seq, copied=copied,
        last_seq=head.seq, head=head.hash,
    )  # fmt: skip


# -- the targets --------------------------------------------------------------------------


def _into_file(src: Any, path: Path, *, key: bytes, name: str, witness: Path) -> int:
    """Copy ``src``'s lines into the file at ``path`` (made, or extended under its lock)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        copied, last = 0, b""
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".migrate-")
        try:
            with os.fdopen(fd, "wb") as f:
                for _seq, line in src.iter_lines():
                    f.write(line + b"\n")
                    copied, last = copied + 1, line
                f.flush()
                os.fsync(f.fileno())
            # Another migration may have made the file meanwhile: link, never overwrite.
            os.link(tmp, path)
        except FileExistsError:
            return _into_file(src, path, key=key, name=name, witness=witness)
        finally:
            os.unlink(tmp)
        fsync_dir(str(path.parent))
        _anchor(path, key, last, name, witness)
        return copied
    with EventLog(path, quest_id=name, actor="migrate", policy="always", key=key, witness=witness) as log, log.transaction():
        # Under the file's append lock: nobody appends to it while we compare and copy.
        missing = _missing(log.iter_lines(), src.iter_lines(), where=f"{path}")
        if missing:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                for i in range(0, len(missing), _CHUNK):
                    write_all(fd, b"".join(line + b"\n" for line in missing[i : i + _CHUNK]))
                os.fsync(fd)
            finally:
                os.close(fd)
    if missing:
        _anchor(path, key, missing[-1], name, witness)
    return len(missing)


def _into_database(src: Any, url: str, *, name: str) -> int:
    """Copy ``src``'s lines into the database ``url`` as the PostgreSQL store keeps them
    (one row per line, with its seq, id, type and hash), in one database transaction
    holding the log's lock, so appenders and other migrations wait and a failure
    leaves nothing behind."""
    from .log.postgres import LOCK_CLASS, insert_lines

    where = f"{display_store(url)}"
    with connection(url) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_CLASS, name))
        with conn.cursor(name="ds_migrate_have") as have:  # server side: the target may be long
            have.execute("SELECT seq, line FROM ds_events WHERE quest_id = %s ORDER BY seq", (name,))
            missing = _missing(((seq, bytes(line)) for seq, line in have), src.iter_lines(), where=where)
        for i in range(0, len(missing), _CHUNK):  # rows as the store writes them; followers are told at commit
            insert_lines(conn, name, missing[i : i + _CHUNK])
    return len(missing)


def _missing(have: Iterator[tuple[int, bytes]], want: Iterator[tuple[int, bytes]], *, where: str) -> list[bytes]:
    """The lines of ``want`` after the ones ``have`` holds, if ``have`` holds the same
    first lines; else ``history_differs``, naming the first seq that differs."""
    for seq, line in want:
        other = next(have, None)
        if other is None:
            return [line, *(rest for _s, rest in want)]
        if other[1] != line:
            raise Conflict(
                f"{where} already holds a different history for this log (seq {seq} differs): nothing was copied; "
                "migrate into an empty store, or remove that log there first",
                code="history_differs",
                seq=seq,
            )
    extra = next(have, None)
    if extra is not None:
        raise Conflict(
            f"{where} already holds more of this log than the source (seq {extra[0]} and later): nothing was copied",
            code="history_differs",
            seq=extra[0],
        )
    return []


def _anchor(path: Path, key: bytes, last: bytes, name: str, witness: Path) -> None:
    """Sign the file's new head (and the home's witness of it) and build its index (as
    a fresh open would)."""
    HeadAnchor(str(path), key, witness=str(witness)).reset(line_seq(last), line_hash(last))
    EventLog(path, quest_id=name, key=key, witness=witness).close()


