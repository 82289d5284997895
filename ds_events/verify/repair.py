"""Explicit repair of an event log (``ds repair``): it says exactly what it did.

Lines that are not events, second copies of an event id and the lines of an
incomplete last batch go to a quarantine file. So does every line whose content repair
cannot vouch for: a line is vouched for when the next line's ``prev`` is its hash, or
when an anchor (head anchor and its past heads, snapshot, git trailer) names it — an
edited line is neither, and is never re-chained into the log as if it were genuine.
Where the log disagrees with an anchor, a forged stretch (which chains perfectly with
itself) may start after the last anchor that agrees: there only trust flowing back
through the chain from a later anchor that agrees vouches for a line. The remaining events are
put back in seq order, renumbered so seqs run 1..N again, and re-chained; a
``log.repaired`` event records all of it, the head anchor is reset to the new head,
snapshots (caches of the old seqs) are removed and the index is rebuilt.
"""

from __future__ import annotations

import glob
import os
import tempfile
from dataclasses import dataclass, field

import msgspec

from ..events import Event, EventDecodeError, LogRepaired, decode_line, encode, new_event_id, utc_now
from ..fdio import fsync_dir
from ..log import EventLog, append_lock, line_hash
from ..log.anchor import HeadAnchor
from .anchors import Anchors, Claim, collect_anchors
from .audit import Problem, index_problems, read_lines

__all__ = ["RepairReport", "repair_log", "Unvouched"]


@dataclass(frozen=True)
class Unvouched:
    """An event repair quarantined because nothing vouched for its content."""

    seq: int
    id: str
    line: int
    reason: str


@dataclass
class RepairReport:
    removed: list[Problem] = field(default_factory=list)
    removed_bytes: int = 0
    renumbered: int = 0
    reordered: int = 0  # events put back in seq order (they stood elsewhere in the file)
    rechained_from_seq: int | None = None
    quarantine_path: str | None = None
    unvouched: list[Unvouched] = field(default_factory=list)
    index_rebuilt: bool = False
    event: Event | None = None
    # What the anchors said that the kept lines do not bear out, when that alone is to
    # be repaired (a log cut back at a head some anchor still agrees with): the anchors
    # are reset to the log's head, and log.repaired records why.
    anchors_reset: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.removed or self.renumbered or self.reordered or self.rechained_from_seq is not None or self.anchors_reset
        )


def repair_log(
    path: str,
    *,
    quest_id: str = "",
    actor: str = "cli",
    key: bytes | None = None,
    repo: str | os.PathLike[str] | None = None,
    witness: str | os.PathLike[str] | None = None,
) -> RepairReport:
    """Quarantine what cannot stay, restore seq order and the chain; record it as an event.

    Holds the log's append lock throughout and replaces the file atomically, so a
    concurrent appender lands either before the repair or after it. Lines that need no
    change are kept byte for byte. ``key``, ``repo`` and ``witness`` as for ``verify_log``.

    A log whose lines all stay but that its anchors disagree with (cut back to a head a
    past head still names, or restored from an old copy its witness is ahead of) gets a
    ``log.repaired`` that says what the anchors named, and its anchors reset.
    """
    report = RepairReport()
    directory = os.path.dirname(path) or "."
    with append_lock(path):
        anchors = collect_anchors(path, key=key, repo=repo, witness=witness)
        kept: list[tuple[int, Event, bytes]] = []
        bad: list[bytes] = []
        seen_ids: set[str] = set()
        offsets: dict[int, int] = {}
        starts: dict[int, int] = {}
        for n, offset, line, has_nl in read_lines(path):
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
            starts.setdefault(event.seq, offset)
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
        kept = _vouch(kept, anchors.claims, report, offsets, bad)
        staying = {n for n, _e, _l in kept}
        report.reordered = sum(1 for before, (n, _e, _l) in zip([n for n in in_file if n in staying], kept, strict=False) if before != n)
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
            report.anchors_reset = _anchor_trouble(anchors, kept)
        if not report.changed:
            if index_problems(path, starts, max(starts, default=0)):
                os.remove(path + ".idx")
                report.index_rebuilt = True
        else:
            report.removed_bytes = sum(len(b) for b in bad)
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
                reasons=[p.reason for p in report.removed] + report.anchors_reset,
                renumbered=report.renumbered,
                rechained_from_seq=report.rechained_from_seq,
                reordered=report.reordered,
                unvouched=[u.seq for u in report.unvouched],
            )
            last = encode(repaired)
            lines_out.append(last + b"\n")
            report.event = repaired
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".repair-")
            os.close(fd)
            _write_durably(tmp, lines_out)
            os.replace(tmp, path)
            if os.path.exists(path + ".idx"):  # the sparse index describes the old bytes
                os.remove(path + ".idx")
            report.index_rebuilt = True
            # Snapshots name seqs of the old log: caches, rebuilt by the next replay.
            for snapshot in glob.glob(os.path.join(directory, "snapshots", "*.json")):
                os.remove(snapshot)
            HeadAnchor(path, key, witness=None if witness is None else os.fspath(witness)).reset(repaired.seq, line_hash(last))
            fsync_dir(directory)
    if report.index_rebuilt:
        EventLog(path, quest_id=quest_id, key=key, witness=witness).close()  # rebuild the index now, not on a later open
    return report


def _vouch(
    kept: list[tuple[int, Event, bytes]],
    claims: list[Claim],
    report: RepairReport,
    offsets: dict[int, int],
    bad: list[bytes],
) -> list[tuple[int, Event, bytes]]:
    """The lines (in seq order) whose content something vouches for; the others go to
    ``bad`` and ``report.unvouched``.

    A line is vouched for by an anchor that names it, or by the next line naming it in
    its ``prev``. Where an anchor disagrees with the log (at seq S), a forged stretch
    may lie anywhere after the last anchor that agrees before S and before the first
    that agrees after it: there only trust that flows back from that later anchor, line
    by line through the chain, vouches for a line.
    """
    hashes = [line_hash(line) for _n, _e, line in kept]
    by_seq = {event.seq: i for i, (_n, event, _l) in reversed(list(enumerate(kept)))}
    agreeing: dict[int, str] = {}  # seq -> hash an agreeing anchor names
    disagreeing: list[Claim] = []
    for claim in claims:
        i = by_seq.get(claim.seq)
        if i is not None and (not claim.hash or hashes[i] == claim.hash) and (not claim.event_id or kept[i][1].id == claim.event_id):
            agreeing[claim.seq] = hashes[i]
        else:
            disagreeing.append(claim)
    doubtful: list[tuple[int, float, Claim]] = []  # (after seq, before seq, the anchor): no local trust
    for claim in disagreeing:
        before = max((seq for seq in agreeing if seq < claim.seq), default=0)
        after = min((seq for seq in agreeing if seq > claim.seq), default=float("inf"))
        doubtful.append((before, after, claim))
    vouched = [False] * len(kept)
    reasons = [""] * len(kept)
    for i in range(len(kept) - 1, -1, -1):
        seq = kept[i][1].seq
        named_next = i + 1 < len(kept) and kept[i + 1][1].prev == hashes[i]
        doubt = next((claim for before, after, claim in doubtful if before < seq < after), None)
        if agreeing.get(seq) == hashes[i]:
            vouched[i] = True
        elif doubt is not None:
            vouched[i] = named_next and vouched[i + 1]
            reasons[i] = (
                f"the log disagrees with the {doubt.name} (seq {doubt.seq}) and no anchor after it vouches for this "
                "line through the chain: this stretch may be forged"
            )
        elif named_next:
            vouched[i] = True
        elif i + 1 < len(kept):
            reasons[i] = "the next line's prev names another line (this one was edited, or the next one is missing)"
        else:
            reasons[i] = "it is the last line and no anchor names it (the head anchor is missing, lags or disagrees)"
    out = []
    for i, (n, event, line) in enumerate(kept):
        if vouched[i]:
            out.append((n, event, line))
            continue
        report.unvouched.append(Unvouched(event.seq, event.id, n, reasons[i]))
        report.removed.append(Problem(n, offsets[n], f"could not vouch for seq {event.seq} ({event.id}): {reasons[i]}"))
        bad.append(line + b"\n")
    return out


def _anchor_trouble(anchors: Anchors, kept: list[tuple[int, Event, bytes]]) -> list[str]:
    """What the anchors say that the log (every line of which stays) does not bear out:
    a head beyond its end or another line at an anchored seq, a record that does not
    check, a rolled-back head slot. Git trailers aside: commits are the repository's
    history, which a repair does not rewrite (``ds verify`` notes those it predates)."""
    at = {event.seq: line_hash(line) for _n, event, line in kept}
    last = max(at, default=0)
    out: list[str] = []
    for claim in anchors.claims:
        if claim.made_at is not None:
            continue  # a git trailer: history of the repository, not reset by a repair
        if claim.seq > last:
            out.append(f"the {claim.name} named seq {claim.seq}, but the log ends at seq {last}: seqs after {last} are lost")
        elif claim.hash and at.get(claim.seq) != claim.hash:
            out.append(f"the {claim.name} named another line for seq {claim.seq}")
    out += [f"rollback: the head slot of the {name} held a copy of its past head of seq {seq}" for name, seq in anchors.rollbacks]
    return out + anchors.problems


def _write_durably(path: str, chunks: list[bytes]) -> None:
    with open(path, "wb") as f:
        f.writelines(chunks)
        f.flush()
        os.fsync(f.fileno())
