"""Record-style memory for agents that speak in typed records (``mem-NNN``).

Records are cards in the same store (same duplicate and config-pollution rules), with a
``record_type`` and a short sequential ``mem-NNN`` id. Failures and constraints are
shown first: they are what an agent most needs before repeating a mistake.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ds_events.errors import Invalid
from ds_events.memory.cards import card_summary
from ds_events.memory.store import MemoryContext
from projections.memory import RECORD_TYPES, digest_line

from .memory import search, write_card
from .memory_audit import audit

__all__ = ["RECORD_KINDS", "append_record", "read_records", "audit_records"]

# Which card kind holds each record type.
RECORD_KINDS: dict[str, str] = {
    "mistake_fix": "episodes",
    "pipeline_constraint": "decisions",
    "working_solution": "knowledge",
    "methodology_note": "knowledge",
}


def append_record(
    mem: MemoryContext,
    record_type: str,
    summary: str,
    detail: str,
    session_id: str,
    *,
    tags: Sequence[str] | None = None,
    supersedes: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Append a record; on success ``message`` reads ``appended mem-NNN -> <path>``."""
    if record_type not in RECORD_KINDS:
        raise Invalid(f"unknown record_type {record_type!r}: use {' | '.join(RECORD_TYPES)}", code="invalid_record_type")
    if not isinstance(session_id, str) or not session_id.strip():
        raise Invalid("session_id is required: the id of the agent session that learned this", code="missing_session_id")
    result = write_card(
        mem,
        RECORD_KINDS[record_type],
        summary,
        detail,
        tags=tags,
        metadata={"session_id": session_id.strip(), "summary": summary},
        supersedes=supersedes,
        force=force,
        record_type=record_type,
    )
    if result["status"] == "written":
        result["message"] = f"appended {result['record_id']} -> {result['path']}"
    return result


def read_records(
    mem: MemoryContext, task_description: str = "", tags: Sequence[str] | None = None, top_k: int = 5
) -> dict[str, Any]:
    """The top-k relevant, mutually different active records grouped by type (failures and
    constraints first); with no task and no tags, a one-line digest of every active record."""
    store = mem.store("quest")
    state = store.state()
    if not task_description.strip() and not tags:
        cards = [state.cards[c] for c in state.records.values() if state.cards[c].active]
        cards.sort(key=lambda c: (RECORD_TYPES.index(c.record_type), c.created_seq))
        lines = [digest_line(c) for c in cards]
        return {"text": "\n".join(lines) or "no active records", "count": len(cards), "groups": _group([card_summary(store, c) for c in cards])}
    if task_description.strip():
        hits = search(mem, task_description, limit=top_k, tags=tags, diverse=True, records_only=True)
    else:
        ids = store.synced_index().active_ids(tags=tags, records_only=True)[:top_k]
        hits = [card_summary(store, state.cards[i]) for i in ids]
    groups = _group(hits)
    lines = []
    for rtype, items in groups.items():
        lines.append(f"## {rtype}")
        lines += [f"- {h['record_id']}: {h['title']}" + (f" — {h['snippet']}" if h.get("snippet") else "") for h in items]
    return {"text": "\n".join(lines) or "no matching records", "count": len(hits), "groups": groups}


def audit_records(mem: MemoryContext) -> dict[str, Any]:
    """:func:`audit` restricted to records, counted per record type."""
    return audit(mem, "quest", records_only=True)


def _group(items: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {t: [] for t in RECORD_TYPES}
    for item in items:
        groups[item["record_type"]].append(item)
    return {k: v for k, v in groups.items() if v}
