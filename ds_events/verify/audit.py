"""Auditing an event log (``ds verify``): read it line by line, change nothing.

Reported: every line that is not a valid event; every seq that does not follow its
predecessor (gap, duplicate, reorder); every ``prev`` that does not match the hash of
the line before it (so an edited, removed or swapped line is caught); a torn last line
or an incomplete last batch; every anchor (:mod:`.anchors`) the log disagrees with (so
a shortened log, an edited last line or a forged suffix is caught, with the anchor that
caught it); and every entry of the sparse index that does not point at its line.

:func:`verify_store` audits a log in any store (PostgreSQL) the same way through its
stored lines: decoding, seqs and the chain, against the anchors this machine keeps
(view snapshots, git trailers), plus the store's own checks if it has any. A database
has no file to tear, no head anchor and no index: those checks are the file's.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from ..events import EventDecodeError, LogRepaired, decode_line
from ..events.base import ts_seconds
from ..log import INDEX_EVERY, line_hash
from ..store import AuditedStore, EventStore, Problem, VerifyReport
from ..stores import display_store, is_file_store, local_dir
from .anchors import Claim, collect_anchors

__all__ = ["Problem", "VerifyReport", "verify_log", "verify_store", "verify_home_log", "read_lines", "index_problems"]


def read_lines(path: str) -> Iterator[tuple[int, int, bytes, bool]]:
    """``(line_no, offset, line without newline, had_newline)`` for every line."""
    with open(path, "rb") as f:
        offset = 0
        for n, raw in enumerate(f, start=1):
            has_nl = raw.endswith(b"\n")
            yield n, offset, raw[:-1] if has_nl else raw, has_nl
            offset += len(raw)


def verify_log(
    path: str,
    *,
    key: bytes | None = None,
    repo: str | os.PathLike[str] | None = None,
    witness: str | os.PathLike[str] | None = None,
) -> VerifyReport:
    """Audit the log at ``path`` without changing it.

    ``key`` (the home's log key) lets the head anchor's MACs be checked; ``witness``
    (where the home keeps the log's head witness) adds it as an anchor; ``repo`` (the
    quest repository) adds the ``DS-Log-Head`` trailers of its commits as anchors.
    """
    report = VerifyReport(path=path)
    # Anchors first: the log only grows meanwhile, so it still holds what they name.
    anchors = collect_anchors(path, key=key, repo=repo, witness=witness)
    last_raw, starts = _audit(report, read_lines(path), anchors)
    if anchors.head_missing and key is not None and b',"more":' in last_raw:
        # The log was written by a version that keeps a head anchor: where is it?
        report.problems.append(Problem(0, 0, "the head anchor (events.jsonl.head) is missing: the end of the log cannot be checked"))
    report.problems.extend(index_problems(path, starts, report.last_seq))
    return report


def verify_store(
    store: EventStore, *, local: str | os.PathLike[str], repo: str | os.PathLike[str] | None = None, name: str = ""
) -> VerifyReport:
    """Audit the log ``store`` (any :class:`~ds_events.store.EventStore`) without changing it.

    ``local``: the directory where this machine keeps the log's working files (view
    snapshots, checked as anchors); ``repo`` as for :func:`verify_log`. A store with a
    ``verify()`` of its own (rows the database holds that its lines do not show) adds
    what it finds. Problems name rows in seq order (``offset`` -1).
    """
    report = VerifyReport(path=name or os.fspath(local))
    anchors = collect_anchors(os.path.join(os.fspath(local), "events.jsonl"), repo=repo)
    # A head anchor left beside the path is a file log's (before a migration): not this store's.
    anchors.claims = [c for c in anchors.claims if not c.name.startswith("head anchor")]
    anchors.checked = [c for c in anchors.checked if not c.startswith("head anchor")]
    anchors.problems = [p for p in anchors.problems if not p.startswith("head anchor")]
    rows = ((n, -1, line, True) for n, (_seq, line) in enumerate(store.iter_lines(), start=1))
    _audit(report, rows, anchors)
    if isinstance(store, AuditedStore):
        # The store's own audit sees what lines alone cannot (a row whose stored hash
        # is not its line's): it replaces the line checks; the anchors' findings stay.
        found = store.verify()
        by_anchor = [p for p in report.problems if p.anchor or not p.line]
        report.problems = [Problem(p.line, -1, p.reason, p.anchor) for p in found.problems] + by_anchor
    return report


def verify_home_log(home: Any, name: str, *, repo: str | os.PathLike[str] | None = None) -> VerifyReport:
    """Audit the log ``name`` of ``home`` (a :class:`~ds_events.home.Home`) in whichever
    store the home keeps it: the file with its anchors and index, or the database's rows."""
    root = home.log_root(name)
    url = home.store_url(strict=False)
    if is_file_store(url):
        key = home.log_key(create=False)
        path = str(root / ".ds" / "events.jsonl")
        report = verify_log(path, key=key, repo=repo, witness=home.log_witness(name))
        if key is None and collect_anchors(path, witness=home.log_witness(name)).signed:
            report.problems.append(
                Problem(
                    0, 0, "the head anchor is signed, but this home has no log key (.ds/log.key): its MACs cannot be "
                    "checked (the key was removed, or the quest comes from another home)",
                )
            )
        return report
    log = home.open_log(name, actor="verify", read_only=True)
    try:
        return verify_store(log, local=local_dir(log, root), repo=repo, name=f"{display_store(url)} log {name!r}")
    finally:
        log.close()


def _audit(
    report: VerifyReport, lines: Iterable[tuple[int, int, bytes, bool]], anchors: Any
) -> tuple[bytes, dict[int, int]]:
    """Check ``lines`` (``(number, offset, line, had_newline)``) into ``report``; returns
    the last line and the offsets of the seqs an index would name."""
    report.anchors = anchors.checked
    wanted = {claim.seq for claim in anchors.claims}
    at_seq: dict[int, tuple[int, int, str, str]] = {}  # seq -> (line, offset, hash, id) for anchored seqs
    starts: dict[int, int] = {}  # seq -> offset, for the seqs the index names
    repairs: list[LogRepaired] = []
    expected_seq = 1
    prev_hash = ""
    last_line, last_offset, last_raw = 0, 0, b""
    batch_start: tuple[int, int] | None = None  # (line, offset) of an unfinished batch's first line
    torn = False
    for n, offset, line, has_nl in lines:
        report.lines = n
        last_line, last_offset, last_raw = n, offset, line
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
        if event.seq in wanted and event.seq not in at_seq:
            at_seq[event.seq] = (n, offset, prev_hash, event.id)
        if (event.seq - 1) % INDEX_EVERY == 0 and event.seq not in starts:
            starts[event.seq] = offset
        if isinstance(event, LogRepaired):
            repairs.append(event)
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
    for problem in anchors.problems:
        report.problems.append(Problem(0, 0, problem))
    for name, seq in anchors.rollbacks:
        report.problems.append(
            Problem(
                last_line,
                last_offset,
                f"rollback: the log ends at seq {report.last_seq} and the head slot of the {name} holds a copy of its "
                f"past head of seq {seq}, not a head record: the log and its anchor were cut back to an earlier head",
                anchor=name,
            )
        )
    for claim in anchors.claims:
        _check_claim(report, claim, at_seq, repairs, (last_line, last_offset))
    return last_raw, starts




def index_problems(path: str, starts: dict[int, int], last_seq: int) -> list[Problem]:
    """Entries of ``<path>.idx`` that do not point at the start of their seq's line
    (``starts``: seq -> offset of the lines the index names)."""
    try:
        with open(path + ".idx", "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    problems = []
    for slot, (offset,) in enumerate(struct.iter_unpack("<Q", data[: len(data) // 8 * 8])):
        seq = slot * INDEX_EVERY + 1
        if starts.get(seq) == offset:
            continue
        where = f"the line of seq {seq} starts at byte {starts[seq]}" if seq in starts else f"the log has no seq {seq}"
        problems.append(
            Problem(
                0,
                offset,
                f"index entry {slot} points at byte {offset}, but {where}: reads after seq {seq - 1} would return "
                "the wrong events (`ds repair` rebuilds the index)",
                anchor=f"index {os.path.basename(path)}.idx",
            )
        )
        if seq > last_seq:
            break  # entries past the end: one report is enough
    return problems


def _check_claim(
    report: VerifyReport,
    claim: Claim,
    at_seq: dict[int, tuple[int, int, str, str]],
    repairs: list[LogRepaired],
    last: tuple[int, int],
) -> None:
    found = at_seq.get(claim.seq)
    if found is None:
        problem = Problem(
            *last,
            f"the log ends at seq {report.last_seq} but the {claim.name} names seq {claim.seq}: lines were removed "
            "from its end (it was cut, or rolled back to an earlier state)",
            anchor=claim.name,
        )
    else:
        n, offset, found_hash, found_id = found
        if (claim.hash and claim.hash != found_hash) or (claim.event_id and claim.event_id != found_id):
            problem = Problem(
                n,
                offset,
                f"the line of seq {claim.seq} is not the one the {claim.name} names: it was edited, or the log was "
                "rewritten from there",
                anchor=claim.name,
            )
        else:
            return
    repair = _repair_after(claim, repairs)
    if repair is not None:
        report.notes.append(
            f"the {claim.name} names seq {claim.seq} of the log as it was before `ds repair` rewrote it "
            f"(log.repaired at seq {repair.seq}): not checked"
        )
        return
    report.problems.append(problem)


def _repair_after(claim: Claim, repairs: list[LogRepaired]) -> LogRepaired | None:
    """A repair made after the claim, which changed the log at or before its seq."""
    if claim.made_at is None:
        return None
    for repair in repairs:
        changed_from = min([repair.rechained_from_seq or repair.seq, *repair.unvouched])
        if changed_from <= claim.seq and _when(repair.ts) > claim.made_at:
            return repair
    return None


def _when(ts: str) -> float:
    try:
        return ts_seconds(ts)
    except ValueError:
        return 0.0
