"""Where the log ends, found on open: the tail, the head anchor's word, a torn tail.

On open (and after ``ds repair`` replaced the file) the handle finds the end of the
last complete batch (:mod:`.recovery`), reads the head anchor (:mod:`.anchor`) if it
can be trusted, refuses to append to a log that lost or changed the head its anchor
names, and quarantines a torn tail a crashed writer left, unless that tail lies below
the anchored head (only ``ds repair`` may cut such a log). The methods here are part
of :class:`~ds_events.log.eventlog.EventLog`.
"""

from __future__ import annotations

from ..errors import LogError
from ..events import LogRecovered
from .anchor import Anchor, HeadAnchor
from .format import line_hash
from .index import SparseIndex
from .recovery import Torn, find_tail, quarantine
from .scan import scan_lines
from .sync import DISK_FULL_ERRNOS, DurableFile

__all__ = ["Opening"]


class Opening:
    """The tail state of :class:`~ds_events.log.eventlog.EventLog` and how it is found."""

    path: str
    read_only: bool
    recovered: LogRecovered | None
    torn: Torn | None
    _torn_size: int
    _file: DurableFile
    _index: SparseIndex
    _anchor: HeadAnchor
    _size: int
    _last_seq: int
    _last_hash: str
    _tail: tuple[int, int, str]

    def _reset_state(self) -> None:
        self._set_tail(0, 0, "")
        self._index.reset()

    def _set_tail(self, size: int, seq: int, line_hash_: str) -> None:
        """Where complete batches end, and the seq and line hash of the last one's last
        line; also as one tuple, which a sync thread reads in one step."""
        self._size, self._last_seq, self._last_hash = size, seq, line_hash_
        self._tail = (size, seq, line_hash_)

    def _load_tail(self, *, recover: bool, anchored: Anchor | None = None, keep: bool = False) -> Torn | None:
        """Find the end of the last complete batch. Returns what follows it if that is
        to be recovered (the caller quarantines it with :meth:`_recover`): only if asked
        to recover and it can be a crashed write, which it cannot if the anchor names a
        later seq (the file then shrank below a head it once had, and only ``ds
        repair`` may cut it). Otherwise a torn tail is kept in place (read-only,
        ``keep``, or below the anchored head) or refused."""
        tail, torn = find_tail(self._file.fd)
        self.torn = None
        self._set_tail(tail.size, tail.last_seq, tail.last_hash)
        if torn is None:
            return None
        if self.read_only or (keep and not recover):
            self._keep_torn(torn)
        elif not recover:
            raise LogError(f"{self.path}: {torn.reason} at byte {torn.offset}; open with recovery or run ds repair")
        elif anchored is not None and anchored.seq > tail.last_seq:
            self._keep_torn(torn)
            self._file.refuse(
                LogError(
                    f"{self.path}: the log ends in a torn tail at byte {torn.offset} after seq {tail.last_seq}, "
                    f"but its {anchored.source} names seq {anchored.seq}: it shrank below a head it had, which a crashed "
                    "write cannot do. Nothing was recovered or appended: check it with `ds verify`, then `ds repair`"
                )
            )
        else:
            return torn
        return None

    def _recover(self, torn: Torn) -> None:
        """Under the lock: quarantine ``torn`` (sets :attr:`recovered`, the event to
        append), unless the handle refuses to append: then it stays where it is. On a
        full disk it stays too, and appends are refused (DiskFull) until reopened."""
        if self._file.refusal is not None:
            self._keep_torn(torn)
            return
        try:
            self.recovered = quarantine(self._file.fd, self.path, torn)
        except OSError as exc:
            if exc.errno not in DISK_FULL_ERRNOS:
                raise
            self._keep_torn(torn)
            self._file.fail_write(exc)

    def _keep_torn(self, torn: Torn) -> None:
        """Leave ``torn`` where it is: reads stop before it."""
        self.torn = torn
        self._torn_size = torn.offset + len(torn.data)

    def _trusted_anchor(self) -> list[Anchor]:
        """The heads the anchor and the witness name that can be trusted (their MACs
        check with our key, or no key is in play), highest seq last. A garbled,
        forged or rolled-back anchor makes this handle refuse to append."""
        found = self._anchor.check(past=False)
        if found.refusal and not self.read_only:
            self._file.refuse(
                LogError(
                    f"{self.path}: {found.refusal}: nothing will be appended; check it with `ds verify` "
                    "(the anchor was edited or rolled back, or the log comes from another home)"
                )
            )
        return sorted(found.claims(), key=lambda a: a.seq)

    def _check_head(self, anchored: list[Anchor]) -> None:
        """Under the lock: refuse to append to a log that lost or changed a head its
        anchor or witness names (a truncated, rolled-back or rewritten end);
        appending would bury the evidence."""
        if self._file.refusal is not None:
            return
        for anchor in anchored:
            problem = ""
            if anchor.seq > self._last_seq:
                problem = (
                    f"it ends at seq {self._last_seq} but its {anchor.source} names seq {anchor.seq}: "
                    "lines were removed (it was cut or rolled back)"
                )
            else:
                line = self._line_at(anchor.seq)
                if line is None or line_hash(line) != anchor.hash:
                    problem = f"its line for seq {anchor.seq} is not the one its {anchor.source} names: the log was rewritten"
            if problem:
                self._file.refuse(
                    LogError(f"{self.path}: {problem}. Nothing will be appended: check it with `ds verify`, then `ds repair`")
                )
                return

    def _line_at(self, seq: int) -> bytes | None:
        """The stored line of ``seq`` among the complete lines this handle knows (no
        catching up: what lies beyond may be a torn tail not yet recovered)."""
        start, offset = self._index.seek(self._file.fd, seq, self._size)
        for line, _end in scan_lines(self._file.fd, offset, self._size):
            if start == seq:
                return line
            start += 1
        return None

    def _load_index(self) -> None:
        """Under the lock: load ``.idx``, check it against the log, extend it to the tail."""
        self._index.load(self._file.fd, self._size, self._last_seq, persist=not self.read_only)
