"""Record-style memory for agents that speak in typed records (``mem-NNN``).

Records are cards in the same store (same duplicate and config-pollution rules), with a
``record_type`` and a short sequential ``mem-NNN`` id. Failures and constraints are
shown first: they are what an agent most needs before repeating a mistake.
"""

from __future__ import annotations

from ds_events.errors import Invalid
from ds_events.memory.store import MemoryContext
from ds_events.services.memory.audit import audit_memory
from ds_events.services.memory.cards import info, search, write
from ds_events.services.memory.commands import (
    AppendRecord,
    AuditMemory,
    AuditRecords,
    AuditReport,
    ReadRecords,
    RecordsResult,
    SearchCards,
    SearchHit,
    WriteCard,
    WriteResult,
)
from projections.memory import RECORD_TYPES, digest_line

__all__ = ["RECORD_KINDS", "append_record", "read_records", "audit_records"]

# Which card kind holds each record type.
RECORD_KINDS: dict[str, str] = {
    "mistake_fix": "episodes",
    "pipeline_constraint": "decisions",
    "working_solution": "knowledge",
    "methodology_note": "knowledge",
}


def append_record(mem: MemoryContext, cmd: AppendRecord) -> WriteResult:
    """Append a record; on success ``message`` reads ``appended mem-NNN -> <path>``."""
    if cmd.record_type not in RECORD_KINDS:
        raise Invalid(f"unknown record_type {cmd.record_type!r}: use {' | '.join(RECORD_TYPES)}", code="invalid_record_type")
    if not isinstance(cmd.session_id, str) or not cmd.session_id.strip():
        raise Invalid("session_id is required: the id of the agent session that learned this", code="missing_session_id")
    card = WriteCard(kind=RECORD_KINDS[cmd.record_type], title=cmd.summary, body=cmd.detail, tags=cmd.tags,
                     supersedes=cmd.supersedes, force=cmd.force)  # fmt: skip
    extra = {"session_id": cmd.session_id.strip(), "summary": cmd.summary}
    result = write(mem, card, record_type=cmd.record_type, extra=extra)
    if result.status == "written":
        result.message = f"appended {result.record_id} -> {result.path}"
    return result


def read_records(mem: MemoryContext, cmd: ReadRecords) -> RecordsResult:
    """The top-k relevant, mutually different active records grouped by type (failures and
    constraints first); with no task and no tags, a one-line digest of every active record."""
    store = mem.store("quest")
    state = store.state()
    task, tags = cmd.task_description, cmd.tags
    if not isinstance(task, str):
        raise Invalid("task_description must be a string", code="invalid_argument", argument="task_description")
    if not task.strip() and not tags:
        cards = [state.cards[c] for c in state.records.values() if state.cards[c].active]
        cards.sort(key=lambda c: (RECORD_TYPES.index(c.record_type), c.created_seq))
        lines = [digest_line(c) for c in cards]
        return RecordsResult(text="\n".join(lines) or "no active records", count=len(cards),
                             groups=_group([info(store, c, SearchHit) for c in cards]))  # fmt: skip
    if task.strip():
        found = search(mem, SearchCards(query=task, limit=cmd.top_k, tags=tags, diverse=True), records_only=True)
        hits = found.results
    else:
        if not isinstance(cmd.top_k, int) or isinstance(cmd.top_k, bool) or not 1 <= cmd.top_k <= 100:
            raise Invalid("limit must be an integer from 1 to 100", code="invalid_limit")
        ids = store.synced_index().active_ids(tags=tags, records_only=True)[: cmd.top_k]
        hits = [info(store, state.cards[i], SearchHit) for i in ids]
    groups = _group(hits)
    lines = []
    for rtype, items in groups.items():
        lines.append(f"## {rtype}")
        lines += [f"- {h.record_id}: {h.title}" + (f" — {h.snippet}" if h.snippet else "") for h in items]
    return RecordsResult(text="\n".join(lines) or "no matching records", count=len(hits), groups=groups)


def audit_records(mem: MemoryContext, cmd: AuditRecords | None = None) -> AuditReport:
    """:func:`~.audit.audit_memory` restricted to records, counted per record type."""
    return audit_memory(mem, AuditMemory(scope="quest"), records_only=True)


def _group(items: list[SearchHit]) -> dict[str, list[SearchHit]]:
    groups: dict[str, list[SearchHit]] = {t: [] for t in RECORD_TYPES}
    for item in items:
        groups[item.record_type].append(item)
    return {k: v for k, v in groups.items() if v}
