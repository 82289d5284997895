"""Auditing (``ds verify``) and explicit repair (``ds repair``) of an event log.

Verification reads the file line by line and never changes it. It reports every line
that is not a valid event, every seq that does not follow its predecessor (gap,
duplicate, reorder) and every ``prev`` that does not match the hash of the line before
it — so an edited, removed or swapped line is caught.

Repair is explicit and says exactly what it did: undecodable lines go to a quarantine
file; the remaining events are put back in seq order, renumbered where needed so seqs
run 1..N again, and re-chained; a ``log.repaired`` event records all of it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import msgspec

from .events import Event, EventDecodeError, LogRepaired, decode_line, encode, new_event_id, utc_now
from .fdio import fsync_dir
from .log import EventLog, append_lock, line_hash

__all__ = ["Problem", "VerifyReport", "verify_log", "repair_log", "RepairReport"]


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based line number in the file
    offset: int  # byte offset of the line's start
    reason: str

    def __str__(self) -> str:
        return f"line {self.line} (byte {self.offset}): {self.reason}"


@dataclass
class VerifyReport:
    path: str
    lines: int = 0
    last_seq: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _lines(path: str) -> Iterator[tuple[int, int, bytes, bool]]:
    """``(line_no, offset, line without newline, had_newline)`` for every line."""
    with open(path, "rb") as f:
        offset = 0
        for n, raw in enumerate(f, start=1):
            has_nl = raw.endswith(b"\n")
            yield n, offset, raw[:-1] if has_nl else raw, has_nl
            offset += len(raw)


def verify_log(path: str) -> VerifyReport:
    """Audit the log at ``path`` without changing it."""
    report = VerifyReport(path=path)
    expected_seq = 1
    prev_hash = ""
    batch_start: tuple[int, int] | None = None  # (line, offset) of an unfinished batch's first line
    torn = False
    for n, offset, line, has_nl in _lines(path):
        report.lines = n
        if not has_nl:
            report.problems.append(Problem(n, offset, "torn last line: no newline (a crashed write; open the log to recover it)"))
            torn = True
            break
        try:
            event = decode_line(line)
        except EventDecodeError as exc:
            report.problems.append(Problem(n, offset, str(exc)))
            prev_hash = line_hash(line)
            expected_seq += 1
            continue
        if event.seq != expected_seq:
            if event.seq < expected_seq:
                what = "duplicate or out-of-order seq"
            else:
                what = "seq gap"
            report.problems.append(Problem(n, offset, f"{what}: expected seq {expected_seq}, found {event.seq}"))
        if event.prev != prev_hash:
            report.problems.append(
                Problem(n, offset, "broken hash chain: prev does not match the line before (that line was edited, removed or moved)")
            )
        prev_hash = line_hash(line)
        expected_seq = event.seq + 1
        report.last_seq = event.seq
        if event.more and batch_start is None:
            batch_start = (n, offset)
        elif not event.more:
            batch_start = None
    if batch_start is not None and not torn:
        report.problems.append(
            Problem(*batch_start, "incomplete batch at the end: its last line is missing (a crashed write; open the log to recover it)")
        )
    return report


@dataclass
class RepairReport:
    removed: list[Problem] = field(default_factory=list)
    removed_bytes: int = 0
    renumbered: int = 0
    reordered: int = 0  # events put back in seq order (they stood elsewhere in the file)
    rechained_from_seq: int | None = None
    quarantine_path: str | None = None
    event: Event | None = None

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.renumbered or self.reordered or self.rechained_from_seq is not None)


def repair_log(path: str, *, quest_id: str = "", actor: str = "cli") -> RepairReport:
    """Quarantine bad lines, restore seq order and the chain; record it as an event.

    Holds the log's append lock throughout and replaces the file atomically, so a
    concurrent appender lands either before the repair or after it. Lines that need no
    change are kept byte for byte.
    """
    report = RepairReport()
    with append_lock(path):
        kept: list[tuple[int, Event, bytes]] = []
        bad: list[bytes] = []
        seen_ids: set[str] = set()
        offsets: dict[int, int] = {}
        for n, offset, line, has_nl in _lines(path):
            offsets[n] = offset
            try:
                event = decode_line(line)
            except EventDecodeError as exc:
                report.removed.append(Problem(n, offset, str(exc) if has_nl else "torn last line: no newline"))
                bad.append(line + (b"\n" if has_nl else b""))
                continue
            if event.id in seen_ids:
                report.removed.append(Problem(n, offset, f"duplicate event id {event.id}"))
                bad.append(line + b"\n")
                continue
            seen_ids.add(event.id)
            kept.append((n, event, line))
        # A batch whose last line never made it (a crashed write) goes whole.
        unfinished: list[tuple[int, Event, bytes]] = []
        while kept and kept[-1][1].more:
            unfinished.insert(0, kept.pop())
        for n, _event, line in unfinished:
            report.removed.append(Problem(n, offsets[n], "part of an incomplete batch: its last line is missing"))
            bad.append(line + b"\n")
        in_file = [n for n, _e, _l in kept]
        kept.sort(key=lambda item: (item[1].seq, item[0]))  # seq order; file order breaks ties
        report.reordered = sum(1 for before, (n, _e, _l) in zip(in_file, kept) if before != n)
        lines_out: list[bytes] = []
        prev = ""
        for new_seq, (_n, event, line) in enumerate(kept, start=1):
            if event.seq != new_seq:
                report.renumbered += 1
            if event.seq != new_seq or event.prev != prev:
                if report.rechained_from_seq is None:
                    report.rechained_from_seq = new_seq
                line = encode(msgspec.structs.replace(event, seq=new_seq, prev=prev))
            prev = line_hash(line)
            lines_out.append(line + b"\n")
        if not report.changed:
            return report
        report.removed_bytes = sum(len(b) for b in bad)
        directory = os.path.dirname(path) or "."
        if bad:
            qdir = os.path.join(directory, "quarantine")
            os.makedirs(qdir, exist_ok=True)
            qpath = os.path.join(qdir, f"{os.path.basename(path)}.{new_event_id()}.repair")
            _write_durably(qpath, bad)
            report.quarantine_path = os.path.relpath(qpath, directory)
        repaired = LogRepaired(
            seq=len(lines_out) + 1,
            id=new_event_id(),
            ts=utc_now(),
            quest_id=quest_id,
            actor=actor,
            prev=prev,
            removed_lines=[p.line for p in report.removed],
            removed_bytes=report.removed_bytes,
            quarantine_path=report.quarantine_path or "",
            reasons=[p.reason for p in report.removed],
            renumbered=report.renumbered,
            rechained_from_seq=report.rechained_from_seq,
            reordered=report.reordered,
        )
        lines_out.append(encode(repaired) + b"\n")
        report.event = repaired
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".repair-")
        os.close(fd)
        _write_durably(tmp, lines_out)
        os.replace(tmp, path)
        if os.path.exists(path + ".idx"):  # the sparse index describes the old bytes
            os.remove(path + ".idx")
        fsync_dir(directory)
    EventLog(path, quest_id=quest_id).close()  # rebuild the index now, not on a later open
    return report


def _write_durably(path: str, chunks: list[bytes]) -> None:
    with open(path, "wb") as f:
        f.writelines(chunks)
        f.flush()
        os.fsync(f.fileno())
