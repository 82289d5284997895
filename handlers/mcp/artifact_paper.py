"""The paper tools of the `artifact` namespace, with DeepScientist's names and
arguments: outlines (``submit_paper_outline``, ``list_paper_outlines``), the writing
plan (``compile_outline_to_writing_plan``), the bundle (``submit_paper_bundle``), the
contract and its health (``get_paper_contract``, ``get_paper_contract_health``) and the
validators (``validate_academic_outline``, ``validate_manuscript_language``,
``validate_manuscript_coverage``).

Thin adapters over :mod:`ds_events.services.paper`; ``handlers.mcp.artifact`` calls
:func:`register`.
"""

from __future__ import annotations

from ds_events.services import paper as service
from ds_events.services.paper.commands import (
    AcademicOutlineResult,
    CompileOutlineToWritingPlan,
    GetPaperContract,
    GetPaperContractHealth,
    ListPaperOutlines,
    ManuscriptCoverageResult,
    ManuscriptLanguageResult,
    PaperBundleResult,
    PaperContractHealthResult,
    PaperContractResult,
    PaperOutlineResult,
    PaperOutlinesResult,
    SubmitPaperBundle,
    SubmitPaperOutline,
    ValidateAcademicOutline,
    ValidateManuscriptCoverage,
    ValidateManuscriptLanguage,
    WritingPlanResult,
)

from .context import StateT, ToolContext
from .namespace import Namespace
from .tools import READ_ONLY, writes

__all__ = ["register"]


def register(ns: Namespace[StateT]) -> None:
    """Add the paper tools to ``ns``."""
    _outlines(ns)
    _writing(ns)
    _contract(ns)


def _outlines(ns: Namespace[StateT]) -> None:
    @ns.tool(writes(destructive=True, idempotent=False))  # revise (and a candidate resubmitted) rewrites an outline
    def submit_paper_outline(tc: ToolContext[StateT], cmd: SubmitPaperOutline) -> PaperOutlineResult:
        """Record a paper outline, select the one the paper follows, or revise it.
        mode="candidate" records an outline to compare (outline-NNN when outline_id is
        null; resubmitting a candidate replaces what you give). mode="select" makes an
        outline the paper's plan: the first selection opens the paper branch
        paper/<run or idea> from your research workspace, with its worktree (your
        workspace for writing: put the manuscript under its paper/), and moves the quest
        to write. mode="revise" rewrites the selected outline. Put the paper's idea in
        detailed_outline.paper_view: story_spine, core_claims, evidence_grounding (the
        evidence boundaries), method_abstraction, evaluation_plan and 4-8 analysis_plan
        entries tied to claims.
        A refused call changes nothing.

        Returns: outline_id, mode, status, selected_outline_ref, paper_branch,
        worktree_root, paths (outline_path, selected_outline_path, ...), next_anchor, seq.

        Examples:
          submit_paper_outline(mode="candidate", title="Adapters help small data",
                               detailed_outline={"research_questions": ["RQ1"], "paper_view": {
                                 "story_spine": {"problem": "...", "gap": "...", "method": "..."},
                                 "core_claims": [{"claim_id": "C1", "claim": "..."}]}})
          submit_paper_outline(mode="select", outline_id="outline-001", selected_reason="clearest story")
        """
        return service.submit_paper_outline(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def list_paper_outlines(tc: ToolContext[StateT], cmd: ListPaperOutlines) -> PaperOutlinesResult:
        """List the paper outlines (candidates, the selected one, revisions) and the
        selected outline in full. Use it before a writing-facing analysis campaign or
        when you need a valid outline_id. Read-only.

        Returns: selected_outline_ref, selected_outline, paper_branch, count, outlines
        (outline_id, title, status, review_result, path, is_selected).
        Example: list_paper_outlines()
        """
        return service.list_paper_outlines(tc.quest, cmd)


def _writing(ns: Namespace[StateT]) -> None:
    @ns.tool(writes(destructive=True, idempotent=True))  # a new compile replaces the plan; the same outline gives the same plan
    def compile_outline_to_writing_plan(tc: ToolContext[StateT], cmd: CompileOutlineToWritingPlan) -> WritingPlanResult:
        """Turn the selected outline into writing jobs: introduction, method, setup, one
        job per outline section and planned analysis, limitations, abstract — each with
        what it must do, the claims it carries and the evidence to look up. Use it after
        validate_academic_outline and before drafting; compile again after a revision.
        The plan is kept as paper/writing_plan.json and paper/writing_plan.md. Refused
        (no_selected_outline) while no outline is selected.
        A refused call changes nothing.

        Returns: outline_id, writing_plan_path, writing_plan_md_path, writing_plan
        (validation_ok, validation_blockers, story_spine, core_claims, writing_jobs), seq.
        Example: compile_outline_to_writing_plan(detail="full")
        """
        return service.compile_outline_to_writing_plan(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def submit_paper_bundle(tc: ToolContext[StateT], cmd: SubmitPaperBundle) -> PaperBundleResult:
        """Submit the paper as a bundle: the manuscript in Markdown (draft_path, default
        paper/draft.md) and/or LaTeX (latex_root_path: a .tex file or a directory) under
        paper/ of the paper workspace, with its bibliography, figures, tables, PDF and
        the claims it makes. Relative paths are looked up in the paper workspace, then
        the quest root; nothing outside the quest is read. Each file is recorded with its
        SHA-256. Defaults to a draft checkpoint; package_type="submission_package" only
        for a submission-ready manuscript (valid outline, clean wording). Refused while a
        required outline item is unresolved (paper_contract_incomplete).
        A refused call changes nothing.

        Returns: bundle_id, package_type, selected_outline_ref, paper_branch,
        manuscript_paths, files (role, path, sha256, bytes), claim_count,
        manuscript_facts (section_count, sections_found, figure_count, table_count,
        language_violations), paths (manifest_path, paper_line_state_path, ...), next_anchor, seq.

        Examples:
          submit_paper_bundle(title="Residual adapters", draft_path="paper/draft.md",
                              references_path="paper/references.bib", figure_paths=["paper/figures/gain.png"],
                              claims=[{"claim_id": "C1", "statement": "+1.2 top-1", "evidence": ["r1"]}])
          submit_paper_bundle(latex_root_path="paper/latex", pdf_path="paper/paper.pdf", package_type="submission_package")
        """
        return service.submit_paper_bundle(tc.quest, cmd)


def _contract(ns: Namespace[StateT]) -> None:
    @ns.tool(READ_ONLY)
    def get_paper_contract(tc: ToolContext[StateT], cmd: GetPaperContract) -> PaperContractResult:
        """The active paper contract: the selected outline's sections with their required
        items (resolved by recorded runs and analysis slices, or not), its story spine,
        core claims, evidence boundaries and planned analyses, the writing plan, the
        latest bundle, and the contract's health. ok=false with a message while no
        outline is selected. Use detail="full" when writing or finalising. Read-only.

        Returns: ok, detail, active_paper_line_ref, paper_contract_bundle
        (selected_outline_ref, paper_line_id, paper_contract, paper_contract_health, selected_outline).
        Example: get_paper_contract(detail="full")
        """
        return service.get_paper_contract(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_paper_contract_health(tc: ToolContext[StateT], cmd: GetPaperContractHealth) -> PaperContractHealthResult:
        """Whether the paper is unblocked for writing or finalising: readiness flags
        (contract_ok, writing_ready, academic_outline_ready, manuscript_ready,
        submission_ready, finalize_ready ...), counts, blocking reasons and the
        recommended next stage and action; detail="full" adds the unresolved items and
        open slices. ok=false with the outline candidates while no outline is selected.
        Read-only.

        Returns: ok, detail, active_paper_line_ref, paper_contract_health, outline_candidates.
        Example: get_paper_contract_health(detail="summary")
        """
        return service.get_paper_contract_health(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def validate_academic_outline(tc: ToolContext[StateT], cmd: ValidateAcademicOutline) -> AcademicOutlineResult:
        """Check that the selected outline is a real paper plan before drafting: a
        one-sentence idea or story spine, core claims, a method, an evaluation plan, 4-8
        planned analyses tied to claims (or a waiver), evidence grounding, and no
        implementation wording. Read-only.

        Returns: ok, detail, academic_outline_validation (academic_outline_ready,
        analysis_plan_ready, blockers, warnings, story_missing, claim_count, analysis_count, ...).
        Example: validate_academic_outline()
        """
        return service.validate_academic_outline(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def validate_manuscript_language(tc: ToolContext[StateT], cmd: ValidateManuscriptLanguage) -> ManuscriptLanguageResult:
        """Scan the manuscript as it is now (Markdown and LaTeX under paper/ of the paper
        workspace) for runtime or control wording that belongs in the records, not the
        paper: quest, worktree, branch names, tool calls, outline ids, "the user asked".
        Read-only.

        Returns: ok, detail, manuscript_language_validation (language_firewall_ok, scope,
        file_count, files, blocker_count, warning_count, violations (term, severity, path, line, hint)).
        Example: validate_manuscript_language(scope="main_text")
        """
        return service.validate_manuscript_language(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def validate_manuscript_coverage(tc: ToolContext[StateT], cmd: ValidateManuscriptCoverage) -> ManuscriptCoverageResult:
        """Whether the manuscript as it is now is a draft checkpoint or a full manuscript
        or submission: section coverage (introduction, method, experiments, conclusion),
        figures and tables, completed analysis slices, wording, the outline, the PDF.
        Read-only.

        Returns: ok, detail, manuscript_coverage (draft_present, section_like_count,
        canonical_sections, missing_core_sections, figure_count, table_count,
        ready_analysis_group_count, manuscript_ready, submission_ready,
        manuscript_blockers, submission_blockers, ...).
        Example: validate_manuscript_coverage(minimum_sections=5)
        """
        return service.validate_manuscript_coverage(tc.quest, cmd)
