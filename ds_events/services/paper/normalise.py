"""DeepScientist's free-form ``detailed_outline`` parsed once into a typed
:class:`~ds_events.events.paper.PaperOutline`, refusing (``invalid_field``) what has the
wrong JSON type. ``paper_view``'s parts are read under ``paper_view`` first, then at the
top level of ``detailed_outline``; keys nobody reads are kept in ``extra``."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from ds_events.artifacts.validate import check_text, check_text_list
from ds_events.errors import Invalid
from ds_events.events.paper import (
    EvidenceBoundaries,
    OutlineClaim,
    OutlineSection,
    PaperOutline,
    PlannedAnalysis,
    StorySpine,
)

__all__ = ["parse_outline", "merge_outline"]

_MAX = 20_000
_READ = {
    "title", "abstract", "research_questions", "methodology", "experimental_designs", "contributions", "sections",
    "paper_view", "story_spine", "narrative_strategy", "core_claims", "evidence_grounding", "evidence_boundaries",
    "method_abstraction", "evaluation_plan", "analysis_plan", "analysis_budget_waiver", "paper_type", "outline_maturity",
    "central_thesis", "central_insight",
}  # fmt: skip


def parse_outline(
    outline_id: str, *, title: str, note: str, story: str, ten_questions: list[str] | None,
    detailed: dict[str, Any] | None, review_result: str | None,
) -> PaperOutline:  # fmt: skip
    """The outline the arguments of ``submit_paper_outline`` describe."""
    d = dict(detailed or {})
    pv = _obj(d.get("paper_view"), "detailed_outline.paper_view")

    def part(key: str) -> Any:
        return pv.get(key) if pv.get(key) is not None else d.get(key)

    spine = _obj(part("story_spine"), "story_spine")
    narrative = _obj(part("narrative_strategy"), "narrative_strategy")
    grounding = _obj(part("evidence_grounding") or part("evidence_boundaries"), "evidence_grounding")
    method = _obj(part("method_abstraction"), "method_abstraction")
    evaluation = _obj(part("evaluation_plan"), "evaluation_plan")
    contributions = check_text_list(d.get("contributions"), "contributions")
    methodology = _text(d.get("methodology"), "methodology")
    designs = check_text_list(d.get("experimental_designs"), "experimental_designs")
    resolved_title = (title or _text(d.get("title"), "detailed_outline.title") or outline_id).strip()
    return PaperOutline(
        outline_id=outline_id,
        title=resolved_title,
        note=note.strip(),
        story=story.strip(),
        ten_questions=check_text_list(ten_questions, "ten_questions"),
        abstract=_text(d.get("abstract"), "abstract"),
        research_questions=check_text_list(d.get("research_questions"), "research_questions"),
        methodology=methodology,
        experimental_designs=designs,
        contributions=contributions,
        paper_type=_text(part("paper_type"), "paper_type") or "full_empirical",
        outline_maturity=_text(part("outline_maturity"), "outline_maturity"),
        central_thesis=_text(narrative.get("central_thesis") or part("central_thesis"), "central_thesis"),
        central_insight=_text(narrative.get("central_insight") or narrative.get("reader_takeaway") or part("central_insight"),
                              "central_insight"),
        story_spine=StorySpine(**{k: _text(spine.get(k), f"story_spine.{k}") for k in StorySpine.__struct_fields__}),
        core_claims=_claims(part("core_claims"), contributions),
        evidence_boundaries=EvidenceBoundaries(**{
            k: check_text_list(grounding.get(k), f"evidence_grounding.{k}") for k in EvidenceBoundaries.__struct_fields__
        }),
        method_intuition=_text(method.get("intuition"), "method_abstraction.intuition") or methodology,
        mechanism_steps=check_text_list(method.get("mechanism_steps"), "method_abstraction.mechanism_steps"),
        evaluation_setting=_text(evaluation.get("setting"), "evaluation_plan.setting") or "; ".join(designs),
        datasets_or_benchmarks=check_text_list(evaluation.get("datasets_or_benchmarks"), "evaluation_plan.datasets_or_benchmarks"),
        planned_analyses=_analyses(part("analysis_plan")),
        analysis_budget_waiver=_text(part("analysis_budget_waiver"), "analysis_budget_waiver"),
        sections=_sections(d.get("sections")),
        review_result=_text(review_result, "review_result"),
        extra={k: v for k, v in d.items() if k not in _READ},
    )


def merge_outline(
    old: PaperOutline, *, title: str, note: str, story: str, ten_questions: list[str] | None,
    detailed: dict[str, Any] | None, review_result: str | None,
) -> PaperOutline:  # fmt: skip
    """``old`` with what the caller gave replacing it (a field not given stays)."""
    if detailed is not None:
        return parse_outline(old.outline_id, title=title or old.title, note=note or old.note, story=story or old.story,
                             ten_questions=ten_questions or old.ten_questions, detailed=detailed,
                             review_result=review_result or old.review_result)  # fmt: skip
    return replace(
        old, title=title.strip() or old.title, note=note.strip() or old.note, story=story.strip() or old.story,
        ten_questions=check_text_list(ten_questions, "ten_questions") or old.ten_questions,
        review_result=_text(review_result, "review_result") or old.review_result,
    )  # fmt: skip


# -- private helpers ----------------------------------------------------------------------


def _obj(value: Any, field: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Invalid(f"{field} must be an object", code="invalid_field", field=field, expected="object")
    return value


def _text(value: Any, field: str) -> str:
    return check_text(value, field, required=False, max_chars=_MAX).strip()


def _items(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 200:
        raise Invalid(f"{field} must be a list of up to 200 entries", code="invalid_field", field=field, expected="array")
    return value


def _claims(value: Any, contributions: list[str]) -> list[OutlineClaim]:
    raw = _items(value, "core_claims")
    if not raw:  # DeepScientist reads the contributions as the claims when none are given
        return [OutlineClaim(claim_id=f"C{n}", claim=c) for n, c in enumerate(contributions, start=1)]
    out = []
    for n, item in enumerate(raw, start=1):
        if isinstance(item, str):
            out.append(OutlineClaim(claim_id=f"C{n}", claim=_text(item, "core_claims")))
            continue
        item = _obj(item, "core_claims[]")
        claim = _text(item.get("claim") or item.get("statement") or item.get("text"), "core_claims[].claim")
        out.append(OutlineClaim(
            claim_id=_text(item.get("claim_id"), "core_claims[].claim_id") or f"C{n}", claim=claim,
            evidence_needed=check_text_list(item.get("evidence_needed"), "core_claims[].evidence_needed"),
            what_would_falsify_it=_text(item.get("what_would_falsify_it"), "core_claims[].what_would_falsify_it"),
        ))  # fmt: skip
    return out


def _analyses(value: Any) -> list[PlannedAnalysis]:
    out = []
    for n, item in enumerate(_items(value, "analysis_plan"), start=1):
        if isinstance(item, str):
            out.append(PlannedAnalysis(analysis_id=f"A{n}", title=_text(item, "analysis_plan")))
            continue
        item = _obj(item, "analysis_plan[]")
        ident = item.get("analysis_id") or item.get("item_id") or item.get("exp_id")
        out.append(PlannedAnalysis(
            analysis_id=_text(ident, "analysis_plan[].analysis_id") or f"A{n}",
            title=_text(item.get("title"), "analysis_plan[].title"),
            analysis_role=_text(item.get("analysis_role"), "analysis_plan[].analysis_role"),
            reviewer_question=_text(item.get("reviewer_question"), "analysis_plan[].reviewer_question"),
            target_display=_text(item.get("target_display"), "analysis_plan[].target_display"),
            main_or_appendix=_text(item.get("main_or_appendix"), "analysis_plan[].main_or_appendix"),
            claim_links=check_text_list(item.get("claim_links"), "analysis_plan[].claim_links"),
        ))  # fmt: skip
    return out


def _sections(value: Any) -> list[OutlineSection]:
    out = []
    for n, item in enumerate(_items(value, "sections"), start=1):
        item = _obj(item, "sections[]")
        title = _text(item.get("title"), "sections[].title")
        out.append(OutlineSection(
            section_id=_text(item.get("section_id"), "sections[].section_id") or f"S{n}", title=title,
            paper_role=_text(item.get("paper_role"), "sections[].paper_role") or "main_text",
            claims=check_text_list(item.get("claims"), "sections[].claims"),
            required_items=check_text_list(item.get("required_items"), "sections[].required_items"),
            optional_items=check_text_list(item.get("optional_items"), "sections[].optional_items"),
        ))  # fmt: skip
    return out
