"""Events of the `paper` domain: the paper chain from outline to bundle.

- :class:`OutlineSubmitted`: a paper outline was recorded as a candidate, selected as
  the paper's plan (the first selection opens the ``paper/…`` branch, recorded by the
  ``artifact.branch_prepared`` event of the same batch) or revised in place. It carries
  the outline as the service normalised it (:class:`PaperOutline`).
- :class:`WritingPlanCompiled`: the selected outline was turned into writing jobs.
- :class:`PaperBundleSubmitted`: a manuscript (Markdown and/or LaTeX under ``paper/``)
  with its figures, tables, bibliography and claims was submitted; each file is named by
  path with its digest, and the facts measured from the manuscript at that moment
  (:class:`ManuscriptFacts`) are kept, so the paper's contract health is a fold.

The outline's parts are typed Structs (their schema is pinned in event_tags.json);
whatever else a caller sent in ``detailed_outline`` is kept as given in ``extra``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import Event

__all__ = [
    "StorySpine", "OutlineClaim", "EvidenceBoundaries", "PlannedAnalysis", "OutlineSection", "PaperOutline",
    "WritingJob", "BundleFile", "BundleClaim", "ManuscriptFacts", "LanguageViolation",
    "OutlineSubmitted", "WritingPlanCompiled", "PaperBundleSubmitted",
    "OutlineMode", "PackageType", "FileRole", "EVENTS",
]  # fmt: skip

OutlineMode = Literal["candidate", "select", "revise"]
PackageType = Literal["draft_checkpoint", "review_package", "submission_package"]
FileRole = Literal[
    "draft", "latex", "references", "figure", "table", "writing_plan", "claim_evidence_map", "compile_report", "pdf",
    "outline",
]


class StorySpine(msgspec.Struct, frozen=True, kw_only=True):
    """The paper's story in five lines."""

    problem: str = ""
    gap: str = ""
    method: str = ""
    main_result: str = ""
    scope_limit: str = ""


class OutlineClaim(msgspec.Struct, frozen=True, kw_only=True):
    """A core claim of the paper and what would support or refute it."""

    claim_id: str
    claim: str
    evidence_needed: list[str] = []
    what_would_falsify_it: str = ""


class EvidenceBoundaries(msgspec.Struct, frozen=True, kw_only=True):
    """What the evidence shows, what may be read into it, and what the paper must not claim."""

    observed_facts: list[str] = []
    allowed_interpretations: list[str] = []
    must_not_claim: list[str] = []


class PlannedAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """An analysis the paper plans (an ablation, a robustness check ...), tied to claims."""

    analysis_id: str
    title: str = ""
    analysis_role: str = ""
    reviewer_question: str = ""
    target_display: str = ""  # the figure or table it fills
    main_or_appendix: str = ""
    claim_links: list[str] = []


class OutlineSection(msgspec.Struct, frozen=True, kw_only=True):
    """A section of the paper, the claims it carries and the evidence items it needs."""

    section_id: str
    title: str = ""
    paper_role: str = "main_text"
    claims: list[str] = []
    required_items: list[str] = []
    optional_items: list[str] = []


class PaperOutline(msgspec.Struct, frozen=True, kw_only=True):
    """An outline as the service normalised it from DeepScientist's ``detailed_outline``
    (its ``paper_view`` parts read at the top level or under ``paper_view``)."""

    outline_id: str
    title: str
    note: str = ""
    story: str = ""
    ten_questions: list[str] = []
    abstract: str = ""
    research_questions: list[str] = []
    methodology: str = ""
    experimental_designs: list[str] = []
    contributions: list[str] = []
    paper_type: str = "full_empirical"
    outline_maturity: str = ""
    central_thesis: str = ""
    central_insight: str = ""
    story_spine: StorySpine = StorySpine()
    core_claims: list[OutlineClaim] = []
    evidence_boundaries: EvidenceBoundaries = EvidenceBoundaries()
    method_intuition: str = ""
    mechanism_steps: list[str] = []
    evaluation_setting: str = ""
    datasets_or_benchmarks: list[str] = []
    planned_analyses: list[PlannedAnalysis] = []
    analysis_budget_waiver: str = ""
    sections: list[OutlineSection] = []
    review_result: str = ""
    extra: dict[str, Any] = {}  # the rest of detailed_outline, as given (evidence_view ...)


class WritingJob(msgspec.Struct, frozen=True, kw_only=True):
    """One writing job of the plan: a section to write, from which part of the outline, when."""

    job_id: str
    section: str
    source: str
    write_when: str
    must_do: list[str] = []
    claim_links: list[str] = []
    evidence_lookup: list[str] = []
    paper_role: str = "main_text"


class BundleFile(msgspec.Struct, frozen=True, kw_only=True):
    """A file of a bundle: its role, its path relative to the quest root, its size and
    SHA-256 when submitted (so a later edit shows)."""

    role: FileRole
    path: str
    sha256: str
    bytes: int


class BundleClaim(msgspec.Struct, frozen=True, kw_only=True):
    """A claim the manuscript makes and the evidence it cites (run, slice, artifact ids or paths)."""

    claim_id: str
    statement: str
    evidence: list[str] = []
    section: str = ""


class LanguageViolation(msgspec.Struct, frozen=True, kw_only=True):
    """Implementation or control wording found in paper text."""

    term: str
    severity: Literal["blocker", "warning"]
    path: str
    line: int
    hint: str


class ManuscriptFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What was measured from the manuscript's files when the bundle was submitted."""

    section_count: int = 0
    sections_found: list[str] = []  # canonical sections present: introduction, method, ...
    figure_count: int = 0
    table_count: int = 0
    word_count: int = 0
    language_violations: list[LanguageViolation] = []


class OutlineSubmitted(Event, tag="paper.outline_submitted", kw_only=True):
    """An outline was submitted as a ``candidate``, ``select``-ed as the paper's plan or
    ``revise``-d (the selected outline, rewritten). A selection names the paper branch
    and its worktree (relative to the quest root)."""

    mode: OutlineMode
    outline: PaperOutline
    reason: str = ""  # selected_reason (or the note) for select and revise
    paper_branch: str | None = None
    worktree: str | None = None
    source_branch: str | None = None  # the research branch the paper branch grew from
    source_run_id: str | None = None
    source_idea_id: str | None = None


class WritingPlanCompiled(Event, tag="paper.writing_plan_compiled", kw_only=True):
    """The selected outline compiled into writing jobs."""

    outline_id: str
    jobs: list[WritingJob]
    validation_ok: bool
    validation_blockers: list[str] = []


class PaperBundleSubmitted(Event, tag="paper.bundle_submitted", kw_only=True):
    """A paper bundle: the manuscript's files (Markdown and/or LaTeX under ``paper/``),
    figures, tables, bibliography and the claims it makes, on the paper branch."""

    bundle_id: str  # bundle-001, bundle-002 ...
    title: str
    package_type: PackageType
    outline_id: str | None
    paper_branch: str | None
    files: list[BundleFile]
    manuscript_paths: list[str]  # the draft and LaTeX files among ``files`` (what a claim audit reads)
    summary: str = ""
    claims: list[BundleClaim] = []
    facts: ManuscriptFacts = ManuscriptFacts()
    # The claim audit's stamp (the hashes of the events the manuscript's numbers cite);
    # None until the audit is wired in.
    claim_stamp: dict[str, Any] | None = None


EVENTS = (OutlineSubmitted, WritingPlanCompiled, PaperBundleSubmitted)
