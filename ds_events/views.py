"""Live views of one log: projection states kept current, snapshots, materialised files.

:class:`Views` folds every registered projection over a log, catches up with events
other processes appended, writes the files the projections render (atomically, only
when their bytes change) and saves snapshots (state + seq + the id of the event at
that seq) so a long log starts fast. A snapshot whose seq or event id no longer
matches the log (after a repair, say) is ignored and the projection is rebuilt.

A state handed out by :meth:`Views.state` is the caller's to keep: it never changes
afterwards. The next event is folded into a copy (``Projection.thawed``), made once per
hand-out, so a replay that hands nothing out still updates one state in place. A state
only *lent* for a block (:meth:`Views.lend`) is copied only if an event arrives while the
block runs: a command that reads the state, decides and appends under the log's lock
costs no copy at all (copying a 50,000-card map took a millisecond per write). Several
threads may share one Views: states, seqs and renders are guarded by a lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec

from projections import quest_projections
from projections.base import Projection

from .errors import Invalid
from .events import Event, decode_line
from .log import line_hash
from .paths import confined, read_confined, write_atomic
from .store import EventStore
from .stores import local_dir

__all__ = ["Views", "write_atomic"]  # write_atomic: re-exported from ds_events.paths

_SNAPSHOT_EVERY = 2000
_CHUNK = 512  # events decoded outside the lock, then applied under it
S = TypeVar("S")


class _Snapshot(msgspec.Struct):
    projection: str
    version: int
    seq: int
    event_id: str
    state: msgspec.Raw
    line_hash: str = ""  # the chain hash of the line at ``seq``: also an anchor ds verify checks


class Views:
    """Projection states of one log, and the files they materialise under ``root``."""

    def __init__(
        self,
        log: EventStore,
        root: str | os.PathLike[str],
        projections: list[Projection[Any]] | None = None,
        *,
        snapshot_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.log = log
        self.root = Path(root)
        self.projections = projections if projections is not None else quest_projections()
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir else local_dir(log, root) / "snapshots"
        # Guards ``_states``, ``seqs`` and ``_handed_out`` between threads (see catch_up).
        self._lock = threading.RLock()
        self._states: dict[str, Any] = {}
        self.seqs: dict[str, int] = {}
        # Names whose current state object a caller holds: folded into a copy next time.
        self._handed_out: set[str] = set()
        # (name, id of the state object) lent to blocks running now (see ``lend``): an
        # event applied to that object meanwhile is folded into a copy, as for a hand-out;
        # once copied, the new current state is not lent and is folded in place.
        self._lent: Counter[tuple[str, int]] = Counter()
        # What this process last wrote (or found) at each path, with the file's stat
        # signature then: another process may have rewritten the file since.
        self._written: dict[str, tuple[bytes, tuple[int, int, int]]] = {}
        self._since_snapshot = 0
        self._keep_replaced: Path | None = None
        self.replaced: list[str] = []
        # Files a materialisation could not write (a link out of the root, a directory
        # in the way): reported by replay, retried on the next materialisation.
        self.refused: list[str] = []
        self.applied = 0
        for p in self.projections:
            self._states[p.name] = p.initial()
            self.seqs[p.name] = 0

    # -- state ----------------------------------------------------------------------

    def state(self, name: str) -> Any:
        """The current state of projection ``name``. It never changes afterwards: the
        next event is applied to a copy (see :mod:`projections.base`)."""
        with self._lock:
            self._handed_out.add(name)
            return self._states[name]

    @contextlib.contextmanager
    def lend(self, name: str) -> Iterator[Any]:
        """The current state of projection ``name`` for the length of the block only.

        It does not change while the block runs (an event another thread applies
        meanwhile goes into a copy, as after :meth:`state`), and costs no copy when
        none arrives. Keep nothing from it past the block but its immutable records.
        """
        with self._lock:
            state = self._states[name]
            key = (name, id(state))  # the block holds ``state``: its id is not reused meanwhile
            self._lent[key] += 1
        try:
            yield state
        finally:
            with self._lock:
                self._lent[key] -= 1
                if not self._lent[key]:
                    del self._lent[key]

    def view(self, projection: Projection[S]) -> S:
        """:meth:`state` typed by the projection value itself."""
        # The views keep their states by name; the projection value says the type.
        return cast(S, self.state(projection.name))

    @property
    def last_seq(self) -> int:
        with self._lock:
            return min(self.seqs.values(), default=0)

    def load(self, *, use_snapshots: bool = True) -> Views:
        """Start from valid snapshots (if asked) and catch up with the log."""
        if use_snapshots:
            for p in self.projections:
                self._load_snapshot(p)
        self.catch_up()
        return self

    def catch_up(self, progress: Callable[[int], None] | None = None, *, keep: bool = True) -> list[Event]:
        """Apply events appended since the last call (by any process).

        Returns the events this call applied (an empty list with ``keep=False``, for
        replays of long logs); ``self.applied`` says how many were applied either way.
        ``progress`` receives the byte count of each consumed line.

        Safe from several threads: lines are read and decoded without ``self._lock``
        and applied under it, a chunk at a time. Reading takes the log's own lock, and a
        thread inside ``Quest.transaction`` holds that one while it catches up here
        (waiting for ``self._lock``): reading under ``self._lock`` would deadlock the two.
        Another thread may apply some of the same events first; the seqs each
        projection has reached make sure every event is applied once.
        """
        applied: list[Event] = []
        count = 0
        chunk: list[Event] = []
        for _seq, line in self.log.iter_lines(after_seq=self.last_seq):
            chunk.append(decode_line(line))
            if progress is not None:
                progress(len(line) + 1)
            if len(chunk) >= _CHUNK:
                count += self._apply_chunk(chunk, applied if keep else None)
                chunk = []
        if chunk:
            count += self._apply_chunk(chunk, applied if keep else None)
        self.applied = count
        return applied

    def _apply_chunk(self, events: list[Event], applied: list[Event] | None) -> int:
        """Apply each event to the projections that have not seen it; how many were new."""
        with self._lock:
            states = self._states
            # Projections whose snapshot (or another thread) is ahead skip what they have.
            behind = [(p, self.seqs[p.name]) for p in self.projections if self.seqs[p.name] < events[-1].seq]
            for p, _done in behind:
                if p.name in self._handed_out or (p.name, id(states[p.name])) in self._lent:  # a caller holds it: copy
                    states[p.name] = p.thawed(states[p.name])
                    self._handed_out.discard(p.name)
            floor = min((done for _p, done in behind), default=events[-1].seq)
            folds = [(p.name, p.apply, done) for p, done in behind]  # bound once: this loop is replay's
            fresh = 0
            for event in events:
                seq = event.seq
                if seq <= floor:
                    continue
                for name, apply, done in folds:
                    if seq > done:
                        states[name] = apply(states[name], event)
                fresh += 1
                if applied is not None:
                    applied.append(event)
            for p, _done in behind:
                self.seqs[p.name] = events[-1].seq
            self._since_snapshot += fresh
            return fresh

    # -- files ----------------------------------------------------------------------

    def materialise(
        self,
        events: Iterable[Event] | None = None,
        *,
        full: bool = False,
        keep_replaced: str | os.PathLike[str] | None = None,
    ) -> list[str]:
        """Write the files the projections render; returns the paths that changed.

        Takes ``.ds/materialise.lock`` and catches up first, so whichever process
        writes last writes the newest state. With ``keep_replaced``, a file whose bytes
        on disk differ from what the log renders (a hand edit nobody imported) is
        copied under that directory before it is overwritten, and listed in
        ``self.replaced``: replay never silently destroys a person's edit.
        """
        self.replaced = []
        self.refused = []
        self._keep_replaced = Path(keep_replaced) if keep_replaced is not None else None
        lock_path = local_dir(self.log, self.root) / "materialise.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            fresh = self.catch_up()
            touched = list(events or []) + fresh
            # Collect first, then write: when two projections render the same path the
            # later one in the registry owns it, and the file is written once.
            files: dict[str, bytes] = {}
            with self._lock:  # no other thread's catch-up applies events mid-render
                for p in self.projections:
                    state = self._states[p.name]
                    if full or p.render_changed is None:
                        if not full and not touched and self._written:
                            continue
                        files.update(p.render(state) if p.render is not None else {})
                    else:
                        files.update(p.render_changed(state, touched))
            changed = [rel for rel, data in files.items() if self._write_if_changed(rel, data)]
            if self._since_snapshot >= _SNAPSHOT_EVERY:
                self.save_snapshots()
            return changed
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _write_if_changed(self, rel: str, data: bytes) -> bool:
        try:
            target = confined(self.root, rel)
        except Invalid as exc:
            # A symlink planted since the command checked its paths: never write through
            # it. The event is in the log; the file appears once the link is removed.
            self.refused.append(f"{rel}: {exc.message}")
            return False
        known = self._written.get(rel)
        signature = _signature(target) if known is not None else None
        if known is not None and known[0] == data and known[1] == signature:
            return False
        if known is not None and known[1] == signature:
            on_disk: bytes | None = known[0]  # unchanged since this process wrote it: no need to read it back
        else:
            try:
                on_disk = read_confined(self.root, rel)
            except Invalid:
                on_disk = None  # a link or a directory in the way: replaced below, never followed
        if on_disk == data:
            self._written[rel] = (data, _signature(target))
            return False
        if on_disk is not None and self._keep_replaced is not None:
            write_atomic(self._keep_replaced / rel, on_disk)
            self.replaced.append(rel)
        if target.is_dir() and not target.is_symlink():
            self.refused.append(f"{rel}: a directory stands where the file goes")
            return False
        write_atomic(target, data)
        self._written[rel] = (data, _signature(target))
        return True

    # -- snapshots ------------------------------------------------------------------

    def save_snapshots(self) -> None:
        self.snapshot_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:  # each state with the seq it has reached, from one moment
            taken = [(p, self.seqs[p.name], msgspec.json.encode(self._states[p.name])) for p in self.projections]
        for p, seq, state in taken:
            line = self._line(seq)  # outside self._lock: reading takes the log's lock
            snap = _Snapshot(
                projection=p.name,
                version=p.version,
                seq=seq,
                event_id=decode_line(line).id if line else "",
                state=msgspec.Raw(state),
                line_hash=line_hash(line) if line else "",
            )
            write_atomic(self.snapshot_dir / f"{p.name}.json", msgspec.json.encode(snap))
        self._since_snapshot = 0

    def _load_snapshot(self, p: Projection[Any]) -> None:
        path = self.snapshot_dir / f"{p.name}.json"
        try:
            snap = msgspec.json.decode(path.read_bytes(), type=_Snapshot)
            if snap.projection != p.name or snap.version != p.version:
                return
            if snap.seq:
                line = self._line(snap.seq)
                if line is None or decode_line(line).id != snap.event_id:
                    return  # the log changed under the snapshot (repair): rebuild
                if snap.line_hash and line_hash(line) != snap.line_hash:
                    return  # that line was rewritten since: rebuild (ds verify reports it)
            with self._lock:
                self._states[p.name] = msgspec.json.decode(snap.state, type=p.state_type)
                self._handed_out.discard(p.name)
                self.seqs[p.name] = snap.seq
        except (FileNotFoundError, msgspec.DecodeError, msgspec.ValidationError):
            return


    def _line(self, seq: int) -> bytes | None:
        """The stored line of ``seq`` (None if the log has no such seq)."""
        if seq < 1:
            return None
        for found, line in self.log.iter_lines(after_seq=seq - 1):
            return line if found == seq else None
        return None


def _signature(path: Path) -> tuple[int, int, int]:
    """Identity of a file's current version: a rewrite by anyone changes it."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)
