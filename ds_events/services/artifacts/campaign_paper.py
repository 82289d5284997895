"""The paper fields of ``create_analysis_campaign`` (DeepScientist's
``selected_outline_ref``, ``research_questions``, ``experimental_designs``,
``todo_items``): a writing-facing campaign is tied to the selected outline, and each
slice to the outline item it resolves (a todo item's ``item_id``, else its ``exp_id``
or ``todo_id``), so that a completed slice resolves that item in the paper contract.

Kept apart from :mod:`.campaigns` so the paper side of a campaign stays in one place.
Error codes: ``no_selected_outline``, ``invalid_field``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.artifacts.validate import check_objects, check_text_list
from ds_events.errors import Conflict, Invalid
from ds_events.home import Quest

from .commands import CreateAnalysisCampaign

__all__ = ["PaperLinks", "paper_links"]


class PaperLinks(msgspec.Struct, frozen=True, kw_only=True):
    """What a campaign's event carries for the paper (all empty for a plain campaign)."""

    selected_outline_ref: str | None = None
    research_questions: list[str] = []
    experimental_designs: list[str] = []
    todo_items: list[dict[str, Any]] = []
    slice_items: dict[str, str] = {}  # slice_id -> the outline item it resolves


def paper_links(quest: Quest, cmd: CreateAnalysisCampaign, slice_ids: list[str]) -> PaperLinks:
    """The paper links of ``cmd``, checked against the selected outline; a campaign that
    sends none of the paper fields gets empty links."""
    questions = check_text_list(cmd.research_questions, "research_questions")
    designs = check_text_list(cmd.experimental_designs, "experimental_designs")
    todos = check_objects(cmd.todo_items, "todo_items")
    if cmd.selected_outline_ref is None and not (questions or designs or todos):
        return PaperLinks()
    paper = quest.state("manuscript")
    selected = paper.selected_outline_id
    if selected is None or (cmd.selected_outline_ref is not None and cmd.selected_outline_ref != selected):
        raise Conflict(
            "a writing-facing campaign (research_questions, experimental_designs, todo_items) needs the selected outline "
            "as selected_outline_ref: select one with submit_paper_outline(mode='select', outline_id=...), or drop the "
            "paper fields for a plain campaign",
            code="no_selected_outline", selected_outline_ref=selected, outline_candidates=list(paper.outlines)[:20],
        )  # fmt: skip
    items: dict[str, str] = {}
    for todo in todos:
        slice_id = str(todo.get("slice_id") or todo.get("todo_id") or "")
        item = todo.get("item_id") or todo.get("exp_id") or todo.get("todo_id")
        if slice_id in slice_ids and isinstance(item, str) and item.strip():
            items[slice_id] = item.strip()
        elif todo.get("slice_id") and slice_id not in slice_ids:
            raise Invalid(f"todo_items names slice {slice_id!r}, which is not one of the slices", code="invalid_field",
                          field="todo_items", slice_ids=slice_ids)  # fmt: skip
    return PaperLinks(selected_outline_ref=selected, research_questions=questions, experimental_designs=designs,
                      todo_items=todos, slice_items=items)  # fmt: skip
