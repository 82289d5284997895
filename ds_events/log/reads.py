"""Reading the log by position: pages after a seq, the tail, backwards, and ``follow``.

Readers never take the append lock: they consume only complete lines (:mod:`.scan`)
up to where complete batches end, seeking through the sparse index (:mod:`.index`).
A follower keeps a byte cursor and is woken by this process's appends
(``_wake_followers``) or polls for other processes'. The methods here are part of
:class:`~ds_events.log.eventlog.EventLog`; the state they read is kept by
:mod:`.opening` and :mod:`.catchup`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING

from ..errors import LogError
from ..events import Event, decode_line
from .format import line_type
from .index import INDEX_EVERY, SparseIndex
from .scan import scan_lines
from .sync import DurableFile

if TYPE_CHECKING:
    import asyncio  # at run time only follow needs it, and it runs on a loop

__all__ = ["Reads"]


class Reads:
    """The read side of :class:`~ds_events.log.eventlog.EventLog`."""

    _file: DurableFile
    _index: SparseIndex
    _size: int
    _generation: int
    _waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]

    if TYPE_CHECKING:

        @property
        def last_seq(self) -> int: ...

        def _refresh(self) -> None: ...

    def read(self, after_seq: int = 0, limit: int | None = None, types: Iterable[str] | None = None) -> list[Event]:
        """Events with ``seq > after_seq`` in order, at most ``limit``, optionally only ``types``."""
        wanted = {t.encode() for t in types} if types is not None else None
        out: list[Event] = []
        for _seq, line in self.iter_lines(after_seq):
            if wanted is not None and line_type(line) not in wanted:
                continue
            out.append(decode_line(line))
            if limit is not None and len(out) >= limit:
                break
        return out

    def get(self, seq: int) -> Event | None:
        """The event with this seq, or None."""
        found = self.read(after_seq=seq - 1, limit=1)
        return found[0] if found and found[0].seq == seq else None

    def tail(self, n: int, types: Iterable[str] | None = None) -> list[Event]:
        """The last ``n`` events (of ``types`` if given) in log order."""
        if types is None:
            return self.read(after_seq=max(0, self.last_seq - n))
        return self.read_reverse(limit=n, types=types)[::-1]

    def read_reverse(
        self, before_seq: int | None = None, limit: int = 100, types: Iterable[str] | None = None
    ) -> list[Event]:
        """Events with ``seq < before_seq`` newest first, scanning back window by window."""
        end = (self.last_seq + 1) if before_seq is None else before_seq
        out: list[Event] = []
        window = max(limit, INDEX_EVERY)
        while end > 1 and len(out) < limit:
            start = max(0, end - 1 - window)
            chunk = [e for e in self.read(after_seq=start, limit=end - 1 - start, types=types) if e.seq < end]
            out.extend(reversed(chunk))
            end = start + 1
            window *= 2
        return out[:limit]

    def iter_lines(self, after_seq: int = 0) -> Iterator[tuple[int, bytes]]:
        """Raw stored lines ``(seq, line)`` with ``seq > after_seq``, complete lines only."""
        self._refresh()
        end = self._size  # complete batches end here (what lies beyond is a write in progress)
        seq, offset = self._index.seek(self._file.fd, after_seq + 1, end)
        for line, _off in scan_lines(self._file.fd, offset, end):
            if seq > after_seq:
                yield seq, line
            seq += 1

    async def follow(self, after_seq: int = 0, *, poll_interval: float = 0.05) -> AsyncIterator[Event]:
        """Yield every event after ``after_seq`` as it is appended, by any process, forever.

        Keeps a byte cursor, so each wake reads only the new bytes. Appends in this
        process wake followers at once; other processes' appends are seen within
        ``poll_interval``.
        """
        import asyncio  # loaded already: we run on its loop

        self._refresh()
        generation = self._generation
        seq, offset = self._index.seek(self._file.fd, after_seq + 1, self._size)
        wake = asyncio.Event()
        waiter = (asyncio.get_running_loop(), wake)
        self._waiters.add(waiter)
        try:
            while True:
                progressed = False
                self._refresh()  # up to where complete batches end: a batch is seen whole
                if self._generation != generation:  # our byte cursor means nothing in it
                    raise LogError("the log was repaired or truncated under a follower: follow again from a seq")
                for line, end in scan_lines(self._file.fd, offset, max(offset, self._size)):
                    offset = end
                    if seq > after_seq:
                        yield decode_line(line)
                    seq += 1
                    progressed = True
                if not progressed:
                    try:
                        await asyncio.wait_for(wake.wait(), poll_interval)
                    except TimeoutError:
                        pass
                    wake.clear()
        finally:
            self._waiters.discard(waiter)

    def _wake_followers(self) -> None:
        for loop, wake in list(self._waiters):
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # that loop is closed: its follower is gone
                self._waiters.discard((loop, wake))
