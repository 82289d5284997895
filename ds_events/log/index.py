"""The sparse seq index ``<log>.idx``: where every ``INDEX_EVERY``-th event starts.

Entry ``i`` (a little-endian uint64) is the byte offset of the line of seq
``i * INDEX_EVERY + 1``, so a read after seq N seeks to the nearest entry at or before
it and scans at most ``INDEX_EVERY`` lines, whatever the log's length.

The index is a cache of the log, never a source of truth: it is checked on open (the
longest prefix whose last entry really starts the expected seq is kept, the rest
rebuilt from the log) and only appenders, under the append lock, write it.
"""

from __future__ import annotations

import functools
import os
import struct
import threading
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from ..events import EventDecodeError
from ..fdio import file_size, truncate_file
from .format import line_seq
from .scan import scan_lines

__all__ = ["INDEX_EVERY", "SparseIndex"]

INDEX_EVERY = 64


P = ParamSpec("P")
R = TypeVar("R")


def _guarded(method: Callable[Concatenate[SparseIndex, P], R]) -> Callable[Concatenate[SparseIndex, P], R]:
    """Run the method under the index's own lock: readers seek (and pick up entries other
    processes wrote) without the log's lock while this process's appenders add entries,
    and the two once interleaved between sizing a read of the file and doing it."""

    @functools.wraps(method)
    def wrapper(self: SparseIndex, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._guard:
            return method(self, *args, **kwargs)

    return wrapper


class SparseIndex:
    """The entries of one log's ``.idx`` known to this process.

    Methods that look at the log take its descriptor (``fd``): the log may reopen its
    file (after ``ds repair`` replaced it), and the index follows. Threads may share one:
    every method that reads or changes the entries holds its lock.
    """

    def __init__(self, path: str) -> None:
        self._guard = threading.RLock()
        self.path = path
        self._offsets: list[int] = []  # _offsets[i] = byte offset of seq i*INDEX_EVERY + 1
        self._persisted = 0  # how many of them are in the file
        self._checked: set[int] = set()  # slots known to point where they should
        self._bad_from = 1 << 62  # the file's entries from this slot on were found wrong

    @_guarded
    def __len__(self) -> int:
        return len(self._offsets)

    @_guarded
    def entry(self, slot: int) -> tuple[int, int]:
        """``(seq, offset)`` of entry ``slot``."""
        return slot * INDEX_EVERY + 1, self._offsets[slot]

    @_guarded
    def reset(self) -> None:
        """Forget every entry (the log was truncated or replaced)."""
        self._offsets, self._persisted = [], 0
        self._checked = set()
        self._bad_from = 1 << 62  # the file's entries from this slot on were found wrong

    @_guarded
    def load(self, fd: int, size: int, last_seq: int, *, persist: bool = True) -> None:
        """Load the file, check it against the log's first ``size`` bytes (ending with
        seq ``last_seq``) and extend it to the tail. ``persist`` (under the append
        lock) also cuts what was wrong from the file and writes what was missing."""
        offsets: list[int] = []
        try:
            with open(self.path, "rb") as f:
                data = f.read()
            offsets = list(struct.unpack(f"<{len(data) // 8}Q", data[: len(data) // 8 * 8]))
        except FileNotFoundError:
            pass
        # Keep the longest prefix whose last entry really starts the expected seq.
        while offsets and not self.entry_matches(fd, size, len(offsets) - 1, offsets[-1]):
            offsets = [] if len(offsets) < 8 else offsets[: len(offsets) // 2]
        self._offsets = offsets
        self._persisted = len(offsets)
        self._checked = set(range(len(offsets) - 1, len(offsets)))  # the last one was
        if not offsets or size == 0:
            self.reset()
            if persist:
                _quietly(truncate_file, self.path, 0)
            start_seq, start = 1, 0
        else:
            if persist:
                _quietly(truncate_file, self.path, len(offsets) * 8)
            start_seq, start = (len(offsets) - 1) * INDEX_EVERY + 1, offsets[-1]
        new_offsets: list[tuple[int, int]] = [(1, 0)] if start_seq == 1 and size else []
        seq = start_seq
        for _line, end in scan_lines(fd, start, size):
            seq += 1
            if (seq - 1) % INDEX_EVERY == 0 and seq <= last_seq:
                new_offsets.append((seq, end))
        self.add(new_offsets, persist=persist, checked=True)

    @staticmethod
    def entry_matches(fd: int, size: int, slot: int, offset: int) -> bool:
        """Whether ``offset`` starts a line of the log (first ``size`` bytes) whose seq is
        the one entry ``slot`` names."""
        if offset >= size:
            return False
        if offset > 0 and os.pread(fd, 1, offset - 1) != b"\n":
            return False
        head = os.pread(fd, 256, offset)
        try:
            return line_seq(head.split(b"\n", 1)[0]) == slot * INDEX_EVERY + 1
        except EventDecodeError:
            return False

    @_guarded
    def add(self, pairs: list[tuple[int, int]], *, persist: bool, checked: bool = True) -> None:
        """Note ``(seq, offset)`` of lines just read or written; only indexed seqs count.

        ``persist`` (appenders, under the append lock) also writes new entries to the
        file. ``checked``: the offsets come from the log itself (not from the file).
        """
        offsets = self._offsets
        for seq, offset in pairs:
            if (seq - 1) % INDEX_EVERY == 0 and (seq - 1) // INDEX_EVERY == len(offsets):
                if checked:
                    self._checked.add(len(offsets))
                offsets.append(offset)
        if persist and len(offsets) > self._persisted:
            try:
                on_disk = file_size(self.path) // 8
                if on_disk < len(offsets):
                    start = max(on_disk, 0)
                    data = struct.pack(f"<{len(offsets) - start}Q", *offsets[start:])
                    with open(self.path, "r+b" if on_disk else "wb") as f:
                        f.seek(start * 8)
                        f.write(data)
            except OSError:
                # A cache that could not be written (a full disk): the events are in
                # the log; the next append or open writes the entries again.
                return
            self._persisted = len(offsets)

    @_guarded
    def add_lines(self, first_seq: int, starts: list[int], *, persist: bool) -> None:
        """Note the start offsets of consecutive lines from seq ``first_seq``."""
        gap = (-(first_seq - 1)) % INDEX_EVERY  # lines before the first indexed seq
        if gap < len(starts):
            self.add([(first_seq + i, starts[i]) for i in range(gap, len(starts), INDEX_EVERY)], persist=persist)

    @_guarded
    def seek(self, fd: int, seq: int, size: int | None = None) -> tuple[int, int]:
        """The nearest indexed ``(seq, offset)`` at or before ``seq`` (``(1, 0)`` if none).

        An entry read from the file is checked against the line it points to the first
        time it is used (``size``: where the log's complete lines end); a wrong one is
        dropped, with every entry after it, and an earlier one used instead.
        """
        self.refresh(fd)
        slot = min((max(seq, 1) - 1) // INDEX_EVERY, len(self._offsets) - 1)
        if size is None:
            size = os.fstat(fd).st_size
        while slot >= 0 and slot not in self._checked:
            if self._offsets[slot] >= size:
                slot -= 1  # past what the caller reads (a line written since): not wrong, not for now
                continue
            if self.entry_matches(fd, size, slot, self._offsets[slot]):
                self._checked.add(slot)
                break
            del self._offsets[slot:]  # wrong (tampered, or a stale cache): never used again
            self._persisted = min(self._persisted, slot)
            self._bad_from = slot  # nor reread from the file (ds repair rebuilds it)
            slot -= 1
        if slot < 0:
            return 1, 0
        return slot * INDEX_EVERY + 1, self._offsets[slot]

    @_guarded
    def refresh(self, fd: int) -> None:
        """Pick up entries that other processes' appends wrote to the file."""
        on_disk = min(file_size(self.path) // 8, self._bad_from)
        if on_disk <= len(self._offsets):
            return
        with open(self.path, "rb") as f:
            f.seek(len(self._offsets) * 8)
            data = f.read((on_disk - len(self._offsets)) * 8)
        for (offset,) in struct.iter_unpack("<Q", data[: len(data) // 8 * 8]):
            if offset >= os.fstat(fd).st_size:
                break
            self._offsets.append(offset)  # unchecked until used (see seek)


def _quietly(fn: Callable[..., object], *args: object) -> None:
    """Maintain the cache file if we can: the log does not depend on it."""
    try:
        fn(*args)
    except OSError:
        pass
