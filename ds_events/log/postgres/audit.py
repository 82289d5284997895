"""Checking a quest's rows (``ds verify`` on the PostgreSQL store), changing nothing.

Built from the store contract's report types (:mod:`ds_events.store`): the store never
imports the auditor, :mod:`ds_events.verify` adds this store's findings to its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...events import EventDecodeError, decode_line
from ...store import Problem, VerifyReport
from ..format import line_hash

__all__ = ["audit_rows"]


def audit_rows(rows: Iterable[tuple[int, bytes, str, str, str]], *, quest_id: str, location: str) -> VerifyReport:
    """The problems of ``rows`` (``(seq, line, id, type, hash)`` in seq order, every row
    of ``quest_id``), each at its row.

    Reported at their seq: a gap in the seqs; a row whose line does not decode, whose
    columns (seq, id, type, hash) are not what its line says (the row was edited by
    hand), whose ``prev`` is not the previous line's hash (a line before it was edited,
    removed or moved); an incomplete last batch.
    """
    report = VerifyReport(path=location)
    prev_hash, batch_start = "", 0  # the seq of an unfinished batch's first line
    for position, (seq, line, *columns) in enumerate(rows, start=1):
        found: list[str] = []
        if seq != report.last_seq + 1:
            found.append(f"seq gap: expected seq {report.last_seq + 1}, found {seq}")
        actual = line_hash(line)
        try:
            event = decode_line(line)
        except EventDecodeError as exc:
            found.append(str(exc))
        else:
            said = [event.seq, event.id, event.type, actual]
            if said != [seq, *columns] or event.quest_id not in ("", quest_id):
                found.append(
                    f"the row's seq, id, type and hash {[seq, *columns]} are not its line's {said} "
                    f"(of quest {event.quest_id!r}): the row was edited"
                )
            if event.prev != prev_hash:
                found.append("broken hash chain: prev does not match the line before (that line was edited, removed or moved)")
            batch_start = (batch_start or seq) if event.more else 0
        report.problems += [Problem(position, 0, f"seq {seq}: {what}") for what in found]
        prev_hash, report.lines, report.last_seq = actual, position, seq
    if batch_start:
        report.problems.append(Problem(report.lines, 0, f"seq {batch_start}: incomplete batch at the end: its last line is missing"))
    return report
