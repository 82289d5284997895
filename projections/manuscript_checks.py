"""Pure checks of the paper chain: is an outline a real paper plan, what does a
manuscript's text hold (sections, figures, tables), and which words in it belong to the
runtime rather than to a paper. No I/O: callers pass the outline or the text.

The rules follow what DeepScientist's validators check (a one-sentence idea or a story
spine, core claims, a method, an evaluation plan, 4-8 planned analyses or a waiver,
evidence grounding, no implementation wording in main text); the wording list and the
thresholds are ours.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from ds_events.events.paper import LanguageViolation, ManuscriptFacts, PaperOutline

__all__ = [
    "STORY_KEYS", "CANONICAL_SECTIONS", "CORE_SECTIONS", "ANALYSIS_MIN", "ANALYSIS_MAX",
    "validate_outline", "scan_language", "measure_manuscript", "outline_text",
]  # fmt: skip

STORY_KEYS = ("problem", "gap", "method", "main_result", "scope_limit")
ANALYSIS_MIN, ANALYSIS_MAX = 4, 8
_EARLY = {"idea_seed", "early", "sketch", "outline_seed"}
_MATURE = {"mature", "ready", "final", "complete", "submission_ready"}
Severity = Literal["blocker", "warning"]
_FULL_TYPES = {"full_empirical", "method", "benchmark", "evaluation", "systems", "dataset"}

# Words that name the runtime, its records or its control flow: they belong in the
# artifact records (or an appendix on reproducibility), not in a paper's main text.
_RAW_WORDING: tuple[tuple[str, str, Severity, str], ...] = (
    ("quest", r"\bquests?\b", "blocker", "The runtime's quest is not part of the science: name the study instead."),
    ("worktree", r"\bworktrees?\b", "blocker", "Branch and worktree provenance stays in the records."),
    ("selected outline", r"\bselected[ _-]outline\b", "blocker", "Refer to the paper's structure, not the outline record."),
    ("outline id", r"\boutline-\d{3}\b", "blocker", "Outline ids are records, not paper content."),
    ("research branch", r"\b(?:idea|run|analysis|paper)/[\w.-]+", "blocker", "Branch names are provenance: keep them out of the text."),
    ("tool call", r"\b(?:mcp|tool[ _]call|artifact\.\w+)\b", "blocker", "Tool calls are how the work was done, not what it found."),
    ("user instruction", r"\bthe user (?:asked|requested|wanted|accepted|rejected)\b", "blocker",
     "State the experimental scope neutrally instead of who asked for it."),
    ("restart", r"\b(?:paper|writing) restart\b", "blocker", "Control history does not belong in a manuscript."),
    ("event seq", r"\bseq(?:uence)? ?(?:no\.? ?)?#?\d+\b", "warning", "Log positions are provenance; cite results, not events."),
    ("local endpoint", r"\blocal ?host\b|\b127\.0\.0\.1\b", "warning", "Serving details usually go to the appendix."),
)  # fmt: skip
_WORDING: tuple[tuple[str, re.Pattern[str], Severity, str], ...] = tuple(
    (term, re.compile(pattern, re.IGNORECASE), severity, hint) for term, pattern, severity, hint in _RAW_WORDING
)
# Canonical sections and the heading words that count for them.
CANONICAL_SECTIONS: dict[str, tuple[str, ...]] = {
    "introduction": ("introduction", "intro"),
    "related_work": ("related work", "background", "prior work"),
    "method": ("method", "approach", "model", "algorithm"),
    "experiments": ("experiment", "evaluation", "results", "setup"),
    "analysis": ("analysis", "ablation", "robustness", "sensitivity"),
    "limitations": ("limitation", "discussion"),
    "conclusion": ("conclusion", "future work"),
}
CORE_SECTIONS = ("introduction", "method", "experiments", "conclusion")
_MD_HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_TEX_HEADING = re.compile(r"\\(?:sub)?section\*?\{([^}]*)\}")
_MD_FIGURE = re.compile(r"!\[[^\]]*\]\([^)]+\)")
_TEX_FIGURE = re.compile(r"\\begin\{figure\*?\}")
_MD_TABLE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)
_TEX_TABLE = re.compile(r"\\begin\{table\*?\}")
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?(?:\[[^\]]*\])?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def validate_outline(outline: PaperOutline | None) -> dict[str, Any]:
    """Whether ``outline`` is a paper plan one can write from: ``ok`` (no blockers),
    ``academic_outline_ready``, ``analysis_plan_ready``, ``blockers``, ``warnings`` and
    the counts behind them."""
    if outline is None:
        return {"ok": False, "academic_outline_ready": False, "analysis_plan_ready": False, "outline_id": None,
                "blockers": ["no selected outline: select one with submit_paper_outline(mode='select', outline_id=...)"],
                "warnings": [], "language_violations": []}  # fmt: skip
    blockers: list[str] = []
    warnings: list[str] = []
    spine = outline.story_spine
    missing_story = [k for k in STORY_KEYS if not getattr(spine, k).strip()]
    maturity = outline.outline_maturity.strip().lower()
    early = maturity in _EARLY
    full = outline.paper_type.strip().lower() in _FULL_TYPES and not early
    mature = full and maturity in _MATURE
    if missing_story:
        warnings.append("story_spine is missing: " + ", ".join(missing_story))
    if len(STORY_KEYS) - len(missing_story) < 3 and not outline.central_thesis.strip():
        blockers.append("needs a one-sentence paper idea (central_thesis) or at least three story_spine fields")
    if not outline.central_insight.strip():
        warnings.append("no central_insight: say what a reader learns, or the paper reads like a technical report")
    claims = outline.core_claims
    if not claims:
        blockers.append("core_claims is empty")
    elif len(claims) > 3:
        warnings.append("more than three core_claims: consider narrowing the paper")
    if mature:
        for claim in claims:
            if not claim.evidence_needed:
                warnings.append(f"claim {claim.claim_id!r} should list evidence_needed")
            if not claim.what_would_falsify_it.strip():
                warnings.append(f"claim {claim.claim_id!r} should say what_would_falsify_it")
    if not (outline.method_intuition.strip() or outline.central_insight.strip()):
        blockers.append("method_abstraction.intuition is empty")
    if not outline.mechanism_steps:
        (warnings if early else blockers).append("method_abstraction.mechanism_steps is empty")
    if not (outline.evaluation_setting.strip() or outline.datasets_or_benchmarks):
        blockers.append("evaluation_plan needs a setting or a list of datasets or benchmarks")
    analyses = outline.planned_analyses
    waiver = outline.analysis_budget_waiver.strip()
    if len(analyses) < ANALYSIS_MIN and not waiver:
        warnings.append(f"analysis_plan has fewer than {ANALYSIS_MIN} analyses"
                        + ("; add analyses or an analysis_budget_waiver" if full else " (fine for an early outline)"))  # fmt: skip
    if len(analyses) > ANALYSIS_MAX:
        warnings.append(f"analysis_plan has more than {ANALYSIS_MAX} analyses: split main text and appendix")
    unlinked = [a.analysis_id for a in analyses if not a.claim_links]
    for a in analyses:
        for field in ("analysis_role", "reviewer_question", "target_display", "main_or_appendix"):
            if not getattr(a, field).strip():
                warnings.append(f"analysis {a.analysis_id!r} is missing {field}")
    if unlinked:
        warnings.append("analyses without claim_links: " + ", ".join(unlinked))
    grounding = outline.evidence_boundaries
    if not (grounding.observed_facts or any(c.evidence_needed for c in claims)):
        blockers.append("needs evidence grounding: evidence_grounding.observed_facts or claims' evidence_needed")
    elif not (grounding.allowed_interpretations or grounding.must_not_claim):
        warnings.append("evidence_grounding should state allowed_interpretations or must_not_claim limits")
    violations = scan_language(outline_text(outline), "outline")
    if any(v.severity == "blocker" for v in violations):
        blockers.append("the outline's paper text uses implementation or control wording")
    analysis_ready = (ANALYSIS_MIN <= len(analyses) <= ANALYSIS_MAX or bool(waiver) or early) and not unlinked
    return {
        "ok": not blockers,
        "academic_outline_ready": not blockers,
        "analysis_plan_ready": analysis_ready,
        "outline_id": outline.outline_id,
        "paper_type": outline.paper_type,
        "outline_maturity": maturity or None,
        "central_thesis": outline.central_thesis or None,
        "central_insight": outline.central_insight or None,
        "story_missing": missing_story,
        "claim_count": len(claims),
        "analysis_count": len(analyses),
        "analysis_budget_waiver": waiver or None,
        "blockers": blockers,
        "warnings": warnings,
        "language_violations": [_violation(v) for v in violations],
    }


def outline_text(outline: PaperOutline) -> str:
    """The paper-facing prose of an outline (what the language check reads), one line each."""
    spine = outline.story_spine
    parts = [outline.title, outline.central_thesis, outline.central_insight, outline.abstract, outline.method_intuition,
             spine.problem, spine.gap, spine.method, spine.main_result, spine.scope_limit, *outline.mechanism_steps,
             *(c.claim for c in outline.core_claims), *(a.title for a in outline.planned_analyses)]  # fmt: skip
    return "\n".join(p for p in parts if p.strip())


def scan_language(text: str, path: str) -> list[LanguageViolation]:
    """Runtime and control wording in ``text`` (the file ``path``), with line numbers."""
    found: list[LanguageViolation] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for term, pattern, severity, hint in _WORDING:
            if pattern.search(line):
                found.append(LanguageViolation(term=term, severity=severity, path=path, line=number, hint=hint))
    return found


def measure_manuscript(texts: Iterable[tuple[str, str]]) -> ManuscriptFacts:
    """Sections, canonical sections, figures, tables, words and wording problems of the
    manuscript files ``(path, text)`` (Markdown and LaTeX)."""
    headings: list[str] = []
    figures = tables = words = 0
    violations: list[LanguageViolation] = []
    for path, text in texts:
        latex = path.endswith((".tex", ".ltx"))
        headings += (_TEX_HEADING if latex else _MD_HEADING).findall(text)
        figures += len((_TEX_FIGURE if latex else _MD_FIGURE).findall(text))
        tables += len((_TEX_TABLE if latex else _MD_TABLE).findall(text))
        words += len(_WORD.findall(_TEX_COMMAND.sub(" ", text) if latex else text))
        violations += scan_language(text, path)
    lowered = [h.lower() for h in headings]
    found = [name for name, keys in CANONICAL_SECTIONS.items() if any(k in h for h in lowered for k in keys)]
    return ManuscriptFacts(section_count=len(headings), sections_found=found, figure_count=figures, table_count=tables,
                           word_count=words, language_violations=violations)  # fmt: skip


def _violation(v: LanguageViolation) -> dict[str, Any]:
    return {"term": v.term, "severity": v.severity, "path": v.path, "line": v.line, "hint": v.hint}
