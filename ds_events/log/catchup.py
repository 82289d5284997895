"""Catching up with the file: other processes' appends, a replaced file, a changed one.

A handle keeps where complete batches end (:mod:`.opening`). Before reading it looks
at the file's size without the lock (``_refresh``) and consumes the complete lines
others appended; before appending it does the same under the lock (``_catch_up``),
recovering a batch another writer left half written. A file ``ds repair`` replaced is
reopened; a file that shrank or no longer continues the chain this handle read makes
a writing handle refuse to append (``_reload``). The methods here are part of
:class:`~ds_events.log.eventlog.EventLog`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec

from ..errors import LogError
from ..events import LogRecovered, encode, new_event_id, utc_now
from ..fdio import write_all
from .anchor import Anchor, HeadAnchor
from .format import line_hash, line_id, line_prev, line_seq
from .index import INDEX_EVERY, SparseIndex
from .lock import FileLock
from .recovery import Torn, quarantine, torn_after
from .scan import scan_lines
from .sync import DurableFile

__all__ = ["CatchUp"]


class CatchUp:
    """How :class:`~ds_events.log.eventlog.EventLog` follows the file under it."""

    path: str
    quest_id: str
    actor: str
    read_only: bool
    recovered: LogRecovered | None
    torn: Torn | None
    _torn_size: int
    _file: DurableFile
    _lock: FileLock
    _index: SparseIndex
    _anchor: HeadAnchor
    _size: int
    _last_seq: int
    _last_hash: str
    _generation: int
    _ids: dict[str, int] | None

    if TYPE_CHECKING:

        def _reset_state(self) -> None: ...

        def _set_tail(self, size: int, seq: int, line_hash_: str) -> None: ...

        def _load_tail(self, *, recover: bool, anchored: Anchor | None = None, keep: bool = False) -> Torn | None: ...

        def _load_index(self) -> None: ...

        def _recover(self, torn: Torn) -> None: ...

        def _write_failed(self, exc: OSError, what: str, *, cut: bool = True) -> LogError: ...

    def _catch_up(self) -> None:
        """Under the lock: absorb other processes' appends (or a replaced file)."""
        if self._replaced(missing=True):  # ds repair replaced the file: reopen it
            self._file.reopen()
            self._anchor.forget()
            self._generation += 1
            self._reset_state()
            self._ids = None
            torn = self._load_tail(recover=not self.read_only)
            self._load_index()
            if torn is not None:
                self._recover(torn)
                self.recovered = None
                raise LogError(f"{self.path} had a torn tail after a replace; reopen the log")
            return
        size = os.fstat(self._file.fd).st_size
        if self.torn is not None and size == self._torn_size:
            return  # the torn tail we keep: nothing new
        if size < self._size:  # lines this handle had seen are gone
            self._reload(f"it shrank to {size:,} bytes, below the {self._size:,} this handle had read")
        elif size > self._size:
            if not self._advance(size):
                self._reload(f"the bytes at offset {self._size:,} no longer continue the chain this handle had read")
                return
            if self._size != size and not self.read_only:  # a writer died mid-batch since we last looked
                torn = torn_after(self._file.fd, self._size, size)
                try:
                    recovered = quarantine(self._file.fd, self.path, torn)
                except OSError as exc:
                    raise self._write_failed(exc, "recovery of a torn tail", cut=False) from exc
                self._file.forget()  # the file shrank: sync the next append whatever it covers
                # Record it as part of this same append: it is the next seq.
                self._commit_recovered(recovered)

    def _reload(self, what: str) -> None:
        """Under the lock: the file is not what this handle last saw (``what``): read
        its tail afresh and trust no offset from before, the durable one included.

        Recovery never cuts lines that anyone has read, so this is not a crashed write:
        a writing handle refuses to append from now on (appending would bury the
        evidence) until ``ds repair``; reads go on, of what the file holds now.
        """
        self._file.forget()
        self._generation += 1
        self._reset_state()
        self._ids = None
        self._load_tail(recover=False, keep=True)
        self._load_index()
        if not self.read_only:
            self._file.refuse(
                LogError(
                    f"{self.path} changed under this handle: {what}. Nothing will be appended: "
                    "check it with `ds verify`, then `ds repair`"
                )
            )

    def _commit_recovered(self, event: LogRecovered) -> None:
        event = msgspec.structs.replace(
            event,
            seq=self._last_seq + 1,
            id=new_event_id(),
            ts=utc_now(),
            quest_id=self.quest_id,
            actor=self.actor or "log",
            prev=self._last_hash,
        )
        line = encode(event)
        try:
            write_all(self._file.fd, line + b"\n")
        except OSError as exc:
            raise self._write_failed(exc, "recording a recovery") from exc
        self._index.add([(event.seq, self._size)], persist=True)
        self._set_tail(self._size + len(line) + 1, event.seq, line_hash(line))
        self._file.note_written(self._size)
        self._file.sync_through(self._size)

    def _refresh(self) -> None:
        """Without the lock: see complete lines other processes appended."""
        if self._replaced():  # ds repair swapped the file: reopen under the lock
            with self._lock:
                self._catch_up()
            return
        size = os.fstat(self._file.fd).st_size
        if self.torn is not None:
            if size == self._torn_size:
                return  # the torn tail we know of, still there: nothing to read beyond
            self.torn = None  # someone recovered it: look again
        if size > self._size:
            with self._lock.threads:
                if self._advance(size):
                    return
        elif size == self._size:
            return
        with self._lock:  # it shrank or was rewritten: look again under the lock
            self._catch_up()

    def _replaced(self, *, missing: bool = False) -> bool:
        """Whether the path now names another file than the one we have open.

        ``missing`` is the answer when the path names no file at all.
        """
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return missing
        return named.st_ino != os.fstat(self._file.fd).st_ino

    def _advance(self, size: int) -> bool:
        """Consume complete lines in ``[self._size, size)`` into the tail state and index.

        False, having consumed nothing, if the first of them does not chain onto the
        last line this handle knows: the file was rewritten under us.
        """
        seq, last, offset = self._last_seq, None, self._size
        new_offsets: list[tuple[int, int]] = []
        for line, end in scan_lines(self._file.fd, self._size, size, whole_batches=True):
            if last is None and seq and line_prev(line) != self._last_hash:
                return False
            seq += 1
            if (seq - 1) % INDEX_EVERY == 0:
                new_offsets.append((seq, offset))
            if self._ids is not None:
                found = line_id(line)
                if found:
                    self._ids[found] = seq
            last, offset = line, end
        if last is not None:
            self._set_tail(offset, line_seq(last), line_hash(last))
            self._index.add(new_offsets, persist=False)
        return True
