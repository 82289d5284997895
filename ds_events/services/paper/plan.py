"""``compile_outline_to_writing_plan``: the selected outline turned into writing jobs —
introduction, method, setup, one per section of the outline and per planned analysis,
limitations, abstract — recorded as a ``paper.writing_plan_compiled`` event and
materialised as ``paper/writing_plan.json`` and ``paper/writing_plan.md``.

The jobs are compiled here and kept in the event, so the plan stays what it was when it
was compiled (a later revision of the outline needs a new compile).

Error codes: ``no_selected_outline``.
"""

from __future__ import annotations

import msgspec

from ds_events.artifacts.validate import check_materialised
from ds_events.errors import Conflict
from ds_events.events.paper import PaperOutline, WritingJob, WritingPlanCompiled
from ds_events.home import Quest
from projections.manuscript import PAPER_FILES, State, plan_record
from projections.manuscript_checks import validate_outline

from .commands import CompileOutlineToWritingPlan, WritingPlanResult

__all__ = ["compile_outline_to_writing_plan", "compile_jobs", "require_selected"]

_SUMMARY_JOBS = 8


def compile_outline_to_writing_plan(quest: Quest, cmd: CompileOutlineToWritingPlan) -> WritingPlanResult:
    """Compile the selected outline into writing jobs and record the plan."""
    check_materialised(quest.root, [PAPER_FILES["writing_plan"], PAPER_FILES["writing_plan_md"]])
    with quest.transaction() as txn:
        outline = require_selected(quest.state("manuscript"), "compile_outline_to_writing_plan")
        validation = validate_outline(outline)
        stored = txn.append(WritingPlanCompiled(
            outline_id=outline.outline_id, jobs=compile_jobs(outline), validation_ok=validation["ok"],
            validation_blockers=validation["blockers"],
        ))  # fmt: skip
    plan = plan_record(stored)
    plan.update(working_title=outline.title, paper_type=outline.paper_type, story_spine=msgspec.to_builtins(outline.story_spine),
                core_claims=msgspec.to_builtins(outline.core_claims),
                evidence_grounding=msgspec.to_builtins(outline.evidence_boundaries))  # fmt: skip
    if cmd.detail == "summary":
        plan["writing_jobs"] = plan["writing_jobs"][:_SUMMARY_JOBS]
    return WritingPlanResult(
        ok=True, detail=cmd.detail, outline_id=outline.outline_id, writing_plan_path=PAPER_FILES["writing_plan"],
        writing_plan_md_path=PAPER_FILES["writing_plan_md"], writing_plan=plan, seq=stored.seq,
    )  # fmt: skip


def require_selected(paper: State, tool: str) -> PaperOutline:
    """The selected outline, or ``no_selected_outline`` naming the candidates to choose from."""
    selected = paper.selected
    if selected is None:
        raise Conflict(
            f"{tool} needs a selected outline: submit_paper_outline(mode='select', outline_id=...)",
            code="no_selected_outline", outline_candidates=list(paper.outlines)[:20],
        )  # fmt: skip
    return selected.outline


def compile_jobs(outline: PaperOutline) -> list[WritingJob]:
    """The writing jobs of ``outline``, in the order a paper is best written."""
    claim_ids = [c.claim_id for c in outline.core_claims]
    spine = outline.story_spine
    jobs = [
        WritingJob(job_id="intro", section="Introduction", source="story_spine + central_thesis + core_claims",
                   write_when="early", claim_links=claim_ids, evidence_lookup=claim_ids,
                   must_do=[t for t in (
                       f"Open with the problem: {spine.problem}" if spine.problem else "",
                       f"State the paper's idea in one sentence: {outline.central_thesis}" if outline.central_thesis else "",
                       f"Name the gap: {spine.gap}" if spine.gap else "",
                       "State each claim's scope before interpreting it.",
                   ) if t]),
        WritingJob(job_id="method", section="Method", source="method_abstraction", write_when="after the introduction's idea is stable",
                   must_do=[*([outline.method_intuition] if outline.method_intuition else []), *outline.mechanism_steps]),
        WritingJob(job_id="evaluation", section="Experimental Setup", source="evaluation_plan", write_when="before results",
                   must_do=[t for t in (outline.evaluation_setting, *outline.datasets_or_benchmarks) if t]),
    ]  # fmt: skip
    for section in outline.sections:
        jobs.append(WritingJob(
            job_id=section.section_id, section=section.title or section.section_id, source="sections",
            write_when="after its required evidence is recorded" if section.required_items else "any time",
            claim_links=section.claims, evidence_lookup=section.required_items, paper_role=section.paper_role,
        ))  # fmt: skip
    for analysis in outline.planned_analyses:
        jobs.append(WritingJob(
            job_id=analysis.analysis_id, section=analysis.title or analysis.analysis_id, source="analysis_plan",
            write_when="after the analysis slice is recorded", claim_links=analysis.claim_links,
            must_do=[t for t in (analysis.reviewer_question, analysis.target_display) if t],
            paper_role="appendix" if analysis.main_or_appendix.lower().startswith("app") else "main_text",
        ))  # fmt: skip
    jobs += [
        WritingJob(job_id="limitations", section="Limitations", source="story_spine.scope_limit + must_not_claim",
                   write_when="after results and analysis",
                   must_do=[t for t in (spine.scope_limit, *outline.evidence_boundaries.must_not_claim) if t]),
        WritingJob(job_id="abstract", section="Abstract", source="the finished sections", write_when="last",
                   must_do=["Summarise problem, method, main result and scope in that order."]),
    ]  # fmt: skip
    return jobs
