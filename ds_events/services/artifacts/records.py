"""Quest records (ideas, decisions, progress notes, answers, milestones, runs, reports,
approvals, graphs) and the refresh of ``SUMMARY.md``.

A record validates against the `artifacts` view inside ``quest.transaction()``, so ids
are allocated and duplicates refused across processes, and checks that the file its
event materialises stays inside the quest. A decision that names another stage moves the
quest's anchor in the same append.
"""

from __future__ import annotations

from ds_events.artifacts.validate import check_materialised, check_record, check_text
from ds_events.errors import Conflict, Invalid
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.artifact import ArtifactRecorded, SummaryRefreshed
from ds_events.home import Quest
from ds_events.services.quest.commands import ANCHORS
from projections.artifacts import record_path

from .commands import Record, RefreshSummary
from .results import RecordResult, SummaryResult

__all__ = ["record", "refresh_summary"]


def record(quest: Quest, cmd: Record) -> RecordResult:
    """Record an artifact of ``payload['kind']``; returns its id and file path."""
    kind, artifact_id, clean = check_record(cmd.payload, quest.root)
    next_anchor = clean.get("next_anchor") if kind == "decision" else None
    if next_anchor is not None and next_anchor not in ANCHORS:
        raise Invalid(
            f"next_anchor {next_anchor!r} is not a stage: use one of {', '.join(ANCHORS)}",
            code="invalid_anchor", allowed=list(ANCHORS),
        )  # fmt: skip
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        if artifact_id is None:
            n = state.counters.get(kind, 0) + 1
            while state.id_taken(f"{kind}-{n:04d}"):
                n += 1
            artifact_id = f"{kind}-{n:04d}"
        elif state.id_taken(artifact_id):
            raise Conflict(
                f"artifact id {artifact_id!r} is taken: omit artifact_id for a fresh one", code="artifact_exists", artifact_id=artifact_id
            )
        check_materialised(quest.root, [record_path(kind, artifact_id)])
        batch: list[Event] = [ArtifactRecorded(artifact_id=artifact_id, kind=kind, payload=clean, branch=state.active_branch)]
        previous = quest.state("status").anchor
        if next_anchor is not None and next_anchor != previous:
            # A decision that moves the quest to another stage (forward, or back: write ->
            # experiment, experiment -> idea) moves its anchor, with the decision's reason.
            reason = str(clean.get("reason") or clean.get("action") or "")[:2000]
            batch.append(QuestAnchorChanged(anchor=next_anchor, previous=previous, reason=f"{artifact_id}: {reason}"))
        stored = txn.append(batch)[0]
    return RecordResult(
        artifact_id=artifact_id, kind=kind, path=record_path(kind, artifact_id), branch=state.active_branch, seq=stored.seq
    )


def refresh_summary(quest: Quest, cmd: RefreshSummary) -> SummaryResult:
    """Record a refresh and return ``SUMMARY.md`` as rendered from the log."""
    reason_text = check_text(cmd.reason, "reason", required=False, max_chars=2000)
    check_materialised(quest.root, ["SUMMARY.md"])
    stored = quest.emit(SummaryRefreshed(reason=reason_text))
    path = quest.root / "SUMMARY.md"
    return SummaryResult(path="SUMMARY.md", markdown=path.read_text(encoding="utf-8"), seq=stored.seq, summary_path=str(path))
