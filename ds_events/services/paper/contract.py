"""The read side of the paper chain: the paper contract (``get_paper_contract``), its
health (``get_paper_contract_health``: what blocks writing or finalising) and the three
validators (``validate_academic_outline``, ``validate_manuscript_language``,
``validate_manuscript_coverage``). They append nothing.

The contract and its health are folds of the log (:mod:`projections.manuscript`); the
language and coverage validators read the manuscript as it is now in the paper
workspace (the files change between bundles), with the same checks a bundle records.
While no outline is selected, the contract tools answer ``ok: false`` with a message and
the candidates, as DeepScientist's do: that is a state to report, not a bad call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ds_events.home import Quest
from projections.manuscript import PAPER_FILES, State, contract, health, outline_record
from projections.manuscript_checks import CORE_SECTIONS, measure_manuscript, validate_outline

from .commands import (
    AcademicOutlineResult,
    GetPaperContract,
    GetPaperContractHealth,
    ManuscriptCoverageResult,
    ManuscriptLanguageResult,
    PaperContractHealthResult,
    PaperContractResult,
    ValidateAcademicOutline,
    ValidateManuscriptCoverage,
    ValidateManuscriptLanguage,
)
from .workspace import MANUSCRIPT_SUFFIXES, Workspace, paper_workspace

__all__ = [
    "get_paper_contract", "get_paper_contract_health", "validate_academic_outline", "validate_manuscript_language",
    "validate_manuscript_coverage", "manuscript_files",
]  # fmt: skip

_NO_OUTLINE = (
    "No selected outline: select one with submit_paper_outline(mode='select', outline_id=...) "
    "(or record a candidate first) before writing-facing work."
)
_SUMMARY_ITEMS = 12
_FULL_ITEMS = 200
_MAX_FILES = 100
_APPENDIX = ("appendix", "supplement")
_SUMMARY_DROPS = ("unresolved_required_items", "open_slices", "blocking_pending_slices")


def get_paper_contract(quest: Quest, cmd: GetPaperContract) -> PaperContractResult:
    paper = quest.state("manuscript")
    body = contract(paper)
    if body is None:
        return PaperContractResult(ok=False, detail=cmd.detail, message=_NO_OUTLINE, active_paper_line_ref=None,
                                   paper_contract_bundle=None)  # fmt: skip
    if cmd.detail == "summary":
        body["sections"] = [
            {"section_id": s["section_id"], "title": s["title"], "paper_role": s["paper_role"], "status": s["status"],
             "required_item_count": len(s["required_items"]), "optional_item_count": len(s["optional_items"])}
            for s in body["sections"]
        ]  # fmt: skip
    selected = paper.selected
    assert selected is not None  # contract() answered
    bundle = {
        "selected_outline_ref": body["selected_outline_ref"], "paper_line_id": body["paper_line_id"],
        "paper_contract": body, "paper_contract_health": _health(paper, cmd.detail),
        "selected_outline": outline_record(selected) if cmd.detail == "full" else None,
        "active_paper_line_ref": body["paper_line_id"],
    }  # fmt: skip
    return PaperContractResult(ok=True, detail=cmd.detail, message=None, active_paper_line_ref=body["paper_line_id"],
                               paper_contract_bundle=bundle)  # fmt: skip


def get_paper_contract_health(quest: Quest, cmd: GetPaperContractHealth) -> PaperContractHealthResult:
    paper = quest.state("manuscript")
    body = _health(paper, cmd.detail)
    if body is None:
        candidates = [{"outline_id": o.outline.outline_id, "title": o.outline.title, "status": o.status}
                      for o in paper.outlines.values()]  # fmt: skip
        return PaperContractHealthResult(ok=False, detail=cmd.detail, message=_NO_OUTLINE, active_paper_line_ref=None,
                                         paper_contract_health=None, outline_candidates=candidates)  # fmt: skip
    return PaperContractHealthResult(ok=True, detail=cmd.detail, message=None, active_paper_line_ref=body["paper_line_id"],
                                     paper_contract_health=body, outline_candidates=[])  # fmt: skip


def validate_academic_outline(quest: Quest, cmd: ValidateAcademicOutline) -> AcademicOutlineResult:
    paper = quest.state("manuscript")
    validation = validate_outline(paper.selected.outline if paper.selected else None)
    validation["outline_path"] = PAPER_FILES["selected_outline"] if paper.selected else None
    if cmd.detail == "summary":
        validation["language_violations"] = validation["language_violations"][:_SUMMARY_ITEMS]
    return AcademicOutlineResult(ok=bool(validation["ok"]), detail=cmd.detail, academic_outline_validation=validation)


def validate_manuscript_language(quest: Quest, cmd: ValidateManuscriptLanguage) -> ManuscriptLanguageResult:
    paper = quest.state("manuscript")
    ws = paper_workspace(quest, paper)
    files = manuscript_files(ws, paper, scope=cmd.scope)
    facts = measure_manuscript((rel, ws.text(rel)) for rel in files)
    violations = [msgspec.to_builtins(v) for v in facts.language_violations]
    blockers = sum(1 for v in violations if v["severity"] == "blocker")
    limit = _SUMMARY_ITEMS if cmd.detail == "summary" else _FULL_ITEMS
    return ManuscriptLanguageResult(ok=blockers == 0, detail=cmd.detail, manuscript_language_validation={
        "ok": blockers == 0, "language_firewall_ok": blockers == 0, "scope": cmd.scope, "file_count": len(files),
        "files": files, "blocker_count": blockers, "warning_count": len(violations) - blockers,
        "violations": violations[:limit],
    })  # fmt: skip


def validate_manuscript_coverage(quest: Quest, cmd: ValidateManuscriptCoverage) -> ManuscriptCoverageResult:
    paper = quest.state("manuscript")
    ws = paper_workspace(quest, paper)
    files = manuscript_files(ws, paper, scope="main_text")
    facts = measure_manuscript((rel, ws.text(rel)) for rel in files)
    outline = validate_outline(paper.selected.outline if paper.selected else None)
    bundle = paper.latest_bundle
    pdf = any(f.role == "pdf" for f in bundle.files) if bundle else ws.default("paper/paper.pdf") is not None
    displays = facts.figure_count + facts.table_count + (
        sum(1 for f in bundle.files if f.role in ("figure", "table")) if bundle else 0
    )
    runs = set(quest.state("artifacts").runs)
    ready_groups = sum(1 for ref in paper.completed_refs if ref not in runs)  # completed analysis slices
    missing_core = [s for s in CORE_SECTIONS if s not in facts.sections_found]
    blockers: list[str] = []
    warnings: list[str] = []
    if not files:
        blockers.append("no draft or LaTeX source under paper/")
    if facts.section_count < cmd.minimum_sections:
        blockers.append(f"the manuscript has {facts.section_count} section-like units, fewer than {cmd.minimum_sections}")
    if missing_core:
        blockers.append("missing core sections: " + ", ".join(missing_core))
    if displays == 0:
        blockers.append("no figures or tables")
    if any(v.severity == "blocker" for v in facts.language_violations):
        blockers.append("the main text uses implementation or control wording (validate_manuscript_language)")
    if not outline["ok"]:
        blockers.append("the selected outline is not a complete paper plan (validate_academic_outline)")
    if ready_groups < cmd.minimum_analysis_groups:
        warnings.append(f"{ready_groups} completed analysis slices, fewer than {cmd.minimum_analysis_groups}")
    submission_blockers = list(blockers)
    if bundle is None or bundle.package_type != "submission_package":
        submission_blockers.append("the latest bundle is not a submission_package")
    if not pdf:
        submission_blockers.append("no compiled PDF")
    coverage: dict[str, Any] = {
        "package_type": bundle.package_type if bundle else None, "paper_workspace": ws.rel or ".",
        "draft_present": bool(files), "pdf_present": pdf, "manuscript_files": files,
        "section_like_count": facts.section_count, "minimum_section_count": cmd.minimum_sections,
        "canonical_sections": facts.sections_found, "missing_core_sections": missing_core,
        "figure_count": facts.figure_count, "table_count": facts.table_count, "display_count": displays,
        "word_count": facts.word_count, "ready_analysis_group_count": ready_groups,
        "minimum_analysis_group_count": cmd.minimum_analysis_groups,
        "analysis_quantity_ready": ready_groups >= cmd.minimum_analysis_groups,
        "academic_outline_ready": outline["academic_outline_ready"], "analysis_plan_ready": outline["analysis_plan_ready"],
        "language_firewall_ok": not any(v.severity == "blocker" for v in facts.language_violations),
        "draft_checkpoint_ready": bundle is not None, "manuscript_ready": not blockers,
        "submission_ready": not submission_blockers, "manuscript_blockers": blockers, "manuscript_warnings": warnings,
        "submission_blockers": submission_blockers,
    }  # fmt: skip
    if cmd.detail == "full":
        coverage["language_violations"] = [msgspec.to_builtins(v) for v in facts.language_violations][:_FULL_ITEMS]
    return ManuscriptCoverageResult(ok=True, detail=cmd.detail, manuscript_coverage=coverage)


def manuscript_files(ws: Workspace, paper: State, *, scope: str) -> list[str]:
    """The manuscript's files as they are now (relative to the quest root): the latest
    bundle's that still exist, paper/draft.md and the .tex files under paper/ of the
    workspace; with ``scope="all"`` every Markdown and LaTeX file under it. Files the
    runtime materialises are never the manuscript; ``main_text`` leaves appendix and
    supplement files out."""
    generated = {*PAPER_FILES.values()}
    found: list[str] = []
    bundle = paper.latest_bundle
    for rel in bundle.manuscript_paths if bundle else []:
        if (ws.quest_root / rel).is_file():
            found.append(rel)
    root = ws.root / "paper"
    candidates: list[Path] = []
    if root.is_dir() and not root.is_symlink():
        pattern = ("*.md", "*.markdown", "*.tex", "*.ltx") if scope == "all" else ("draft.md", "*.tex")
        for glob in pattern:
            candidates += [p for p in root.rglob(glob) if p.is_file() and not p.is_symlink()]
    for path in sorted(candidates):
        rel = ws.quest_rel(path, "paper")
        inside = rel[len(ws.rel) + 1:] if ws.rel else rel
        if inside in generated or inside.startswith("paper/outlines/") or rel in found:
            continue
        if not path.name.lower().endswith(MANUSCRIPT_SUFFIXES):
            continue
        if scope == "main_text" and any(word in rel.lower() for word in _APPENDIX):
            continue
        found.append(rel)
    return found[:_MAX_FILES]


# -- private helpers ----------------------------------------------------------------------


def _health(paper: State, detail: str) -> dict[str, Any] | None:
    body = health(paper)
    if body is not None and detail == "summary":
        for key in _SUMMARY_DROPS:
            body.pop(key, None)
    return body
