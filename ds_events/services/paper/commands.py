"""The commands of the paper tools of the `artifact` namespace and their answers: the
outline (``submit_paper_outline``, ``list_paper_outlines``), the writing plan
(``compile_outline_to_writing_plan``), the bundle (``submit_paper_bundle``), the paper
contract and its health, and the three validators.

Names, arguments and key result fields follow DeepScientist's paper flow, so its
``write`` and ``finalize`` skills call these as they are. Every command also takes
``comment`` (on the base Command). Paths in answers are relative to the quest root.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from ds_events.services.commands import Command, Result

__all__ = [
    "SubmitPaperOutline", "ListPaperOutlines", "CompileOutlineToWritingPlan", "SubmitPaperBundle", "GetPaperContract",
    "GetPaperContractHealth", "ValidateAcademicOutline", "ValidateManuscriptLanguage", "ValidateManuscriptCoverage",
    "PaperOutlineResult", "PaperOutlinesResult", "WritingPlanResult", "PaperBundleResult", "PaperContractResult",
    "PaperContractHealthResult", "AcademicOutlineResult", "ManuscriptLanguageResult", "ManuscriptCoverageResult",
    "Detail",
]  # fmt: skip

Detail = Literal["summary", "full"]
_DETAIL = "summary (the default: the decision surface) | full (every item behind it)."


class SubmitPaperOutline(Command):
    mode: Annotated[Literal["candidate", "select", "revise"], Meta(description=(
        "candidate (the default: record an outline to compare) | select (make an outline the paper's plan: the first "
        "selection opens the paper/... branch and its worktree, your workspace for writing) | revise (rewrite the "
        "selected outline, or the one outline_id names, and keep it selected)."
    ))] = "candidate"
    outline_id: Annotated[str | None, Meta(description=(
        "The outline's id. When null: outline-NNN for a new candidate; the selected outline for revise."
    ))] = None
    title: Annotated[str, Meta(description="The paper's working title. When empty: detailed_outline.title or the id.")] = ""
    note: Annotated[str, Meta(description="A note on this outline (why it exists, what it tries).")] = ""
    story: Annotated[str, Meta(description="The paper's story in a paragraph.")] = ""
    ten_questions: Annotated[list[str] | None, Meta(description="Answers to the ten questions a reader asks, if you wrote them.")] = None
    detailed_outline: Annotated[dict[str, Any] | None, Meta(description=(
        "The outline: research_questions, experimental_designs, contributions, methodology, abstract, sections "
        "([{section_id, title, paper_role, claims, required_items}]) and paper_view {story_spine {problem, gap, method, "
        "main_result, scope_limit}, narrative_strategy {central_thesis, central_insight}, core_claims [{claim_id, claim, "
        "evidence_needed, what_would_falsify_it}], evidence_grounding {observed_facts, allowed_interpretations, "
        "must_not_claim}, method_abstraction {intuition, mechanism_steps}, evaluation_plan {setting, "
        "datasets_or_benchmarks}, analysis_plan [{analysis_id, title, analysis_role, reviewer_question, target_display, "
        "main_or_appendix, claim_links}], analysis_budget_waiver, paper_type, outline_maturity}. paper_view's keys are "
        "also read at the top level. Other keys are kept as given."
    ))] = None
    review_result: Annotated[str | None, Meta(description="The verdict of a review of this outline, if any.")] = None
    selected_reason: Annotated[str | None, Meta(description="Why this outline is selected or revised (select, revise).")] = None


class ListPaperOutlines(Command):
    pass


class CompileOutlineToWritingPlan(Command):
    detail: Annotated[Detail, Meta(description="summary (the default: the first 8 jobs) | full (every job).")] = "summary"


# A claim's shape as the schema says it (the rest of its keys are free).
_CLAIM = {"properties": {"claim_id": {"type": "string"}, "statement": {"type": "string"}}}


class SubmitPaperBundle(Command):
    title: Annotated[str | None, Meta(description="The paper's title. When null: the selected outline's.")] = None
    summary: Annotated[str, Meta(description="What this bundle is (a checkpoint of what, ready for what).")] = ""
    outline_path: Annotated[str | None, Meta(description="An outline file, when no outline is selected.")] = None
    draft_path: Annotated[str | None, Meta(description=(
        "The Markdown manuscript under paper/ of the paper workspace. When null: paper/draft.md if it exists."
    ))] = None
    writing_plan_path: Annotated[str | None, Meta(description="Your writing plan file, if any.")] = None
    references_path: Annotated[str | None, Meta(description=(
        "The bibliography (BibTeX). When null: paper/references.bib if it exists."
    ))] = None
    claim_evidence_map_path: Annotated[str | None, Meta(description="A claim -> evidence map file, if any.")] = None
    compile_report_path: Annotated[str | None, Meta(description="The LaTeX compile report, if any.")] = None
    pdf_path: Annotated[str | None, Meta(description="The compiled PDF, if any (a submission needs one).")] = None
    latex_root_path: Annotated[str | None, Meta(description=(
        "The LaTeX manuscript under paper/: a directory (its .tex files) or one .tex file."
    ))] = None
    package_type: Annotated[str, Meta(description=(
        "draft_checkpoint (the default) | review_package | submission_package (only for a submission-ready manuscript)."
    ))] = "draft_checkpoint"
    figure_paths: Annotated[list[str] | None, Meta(description="Figure files of the paper (images, plots).")] = None
    table_paths: Annotated[list[str] | None, Meta(description="Table files of the paper (CSV, Markdown, LaTeX).")] = None
    claims: Annotated[list[Annotated[dict[str, Any], Meta(extra_json_schema=_CLAIM)]] | None, Meta(description=(
        "The claims the manuscript makes: [{claim_id, statement, evidence: [run, slice or artifact ids, or paths], section}]."
    ))] = None


class GetPaperContract(Command):
    detail: Annotated[Detail, Meta(description="full (the default: every section and item) | summary (counts per section).")] = "full"


class GetPaperContractHealth(Command):
    detail: Annotated[Detail, Meta(description=_DETAIL)] = "summary"


class ValidateAcademicOutline(Command):
    detail: Annotated[Detail, Meta(description=_DETAIL)] = "summary"


class ValidateManuscriptLanguage(Command):
    detail: Annotated[Detail, Meta(description="summary (the default: the first 12 violations) | full (up to 200).")] = "summary"
    scope: Annotated[Literal["main_text", "all"], Meta(description=(
        "main_text (the default: the manuscript, appendix files left out) | all (every Markdown and LaTeX file under paper/)."
    ))] = "main_text"


class ValidateManuscriptCoverage(Command):
    detail: Annotated[Detail, Meta(description=_DETAIL)] = "summary"
    minimum_sections: Annotated[int, Meta(ge=1, le=50, description="Section-like units a full manuscript has, 1-50. Default 5.")] = 5
    minimum_analysis_groups: Annotated[int, Meta(ge=0, le=50, description=(
        "Completed analysis slices a full manuscript reports, 0-50. Default 5."
    ))] = 5


class PaperOutlineResult(Result, kw_only=True):
    ok: bool
    tool_name: str
    mode: str
    outline_id: str
    status: str
    title: str
    selected_outline_ref: str | None
    paper_branch: str | None
    worktree_root: str | None
    paths: dict[str, str | None]
    next_anchor: str | None
    seq: int


class PaperOutlinesResult(Result, kw_only=True):
    ok: bool
    selected_outline_ref: str | None
    selected_outline: dict[str, Any] | None
    paper_branch: str | None
    count: int
    outlines: list[dict[str, Any]]


class WritingPlanResult(Result, kw_only=True):
    ok: bool
    detail: str
    outline_id: str
    writing_plan_path: str
    writing_plan_md_path: str
    writing_plan: dict[str, Any]
    seq: int


class PaperBundleResult(Result, kw_only=True):
    ok: bool
    tool_name: str
    bundle_id: str
    title: str
    package_type: str
    selected_outline_ref: str | None
    paper_branch: str | None
    manuscript_paths: list[str]
    files: list[dict[str, Any]]
    claim_count: int
    manuscript_facts: dict[str, Any]
    paths: dict[str, str | None]
    next_anchor: str
    seq: int


class PaperContractResult(Result, kw_only=True):
    ok: bool
    detail: str
    message: str | None
    active_paper_line_ref: str | None
    paper_contract_bundle: dict[str, Any] | None


class PaperContractHealthResult(Result, kw_only=True):
    ok: bool
    detail: str
    message: str | None
    active_paper_line_ref: str | None
    paper_contract_health: dict[str, Any] | None
    outline_candidates: list[dict[str, Any]]


class AcademicOutlineResult(Result, kw_only=True):
    ok: bool
    detail: str
    academic_outline_validation: dict[str, Any]


class ManuscriptLanguageResult(Result, kw_only=True):
    ok: bool
    detail: str
    manuscript_language_validation: dict[str, Any]


class ManuscriptCoverageResult(Result, kw_only=True):
    ok: bool
    detail: str
    manuscript_coverage: dict[str, Any]
