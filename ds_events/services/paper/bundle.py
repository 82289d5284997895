"""``submit_paper_bundle``: the manuscript (Markdown and/or LaTeX under ``paper/`` of
the paper workspace), its figures, tables, bibliography, PDF and the claims it makes,
recorded as a ``paper.bundle_submitted`` event on the paper branch.

Every file is named by path (confined to the quest: :mod:`.workspace`) and kept in the
event with its size and SHA-256, so a later edit shows; the manuscript's paths are kept
apart (``manuscript_paths``: what a claim audit reads), with the facts measured from
its text (sections, figures, tables, wording). ``paper/paper_bundle_manifest.json`` is
materialised from the event. The quest moves to ``write`` (``finalize`` for a
submission package).

Gates, as DeepScientist's: a bundle needs a selected outline (or ``outline_path``); a
required outline item nobody resolved refuses it (``paper_contract_incomplete``); a
``submission_package`` needs a valid outline and clean wording (``not_submission_ready``).

Error codes: ``invalid_package_type``, ``missing_manuscript``, ``no_selected_outline``,
``paper_contract_incomplete``, ``not_submission_ready``, ``invalid_field``, plus those
of :mod:`.workspace`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.artifacts.validate import check_materialised, check_objects, check_text, check_text_list
from ds_events.errors import Conflict, Invalid
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.paper import BundleClaim, BundleFile, FileRole, PackageType, PaperBundleSubmitted
from ds_events.home import Quest
from projections.manuscript import PAPER_FILES, health
from projections.manuscript_checks import measure_manuscript, validate_outline

from .commands import PaperBundleResult, SubmitPaperBundle
from .plan import require_selected
from .workspace import MANUSCRIPT_SUFFIXES, Workspace, paper_workspace

__all__ = ["submit_paper_bundle", "package_type_of"]

_PACKAGE_ALIASES: dict[str, PackageType] = {
    "draft_checkpoint": "draft_checkpoint", "draft": "draft_checkpoint", "checkpoint": "draft_checkpoint",
    "memo": "draft_checkpoint", "paper_memo": "draft_checkpoint", "review_package": "review_package",
    "review": "review_package", "review_bundle": "review_package", "submission_package": "submission_package",
    "submission": "submission_package", "final": "submission_package", "final_bundle": "submission_package",
}  # fmt: skip
_MAX_FILES = 200


def submit_paper_bundle(quest: Quest, cmd: SubmitPaperBundle) -> PaperBundleResult:
    """Record the paper bundle the arguments name."""
    package_type = package_type_of(cmd.package_type)
    paper = quest.state("manuscript")
    if paper.selected is None and cmd.outline_path is None:
        require_selected(paper, "submit_paper_bundle")
    ws = paper_workspace(quest, paper)
    files, manuscript = _files(ws, cmd)
    claims = _claims(cmd.claims)
    facts = measure_manuscript((rel, ws.text(rel)) for rel in manuscript)
    selected = paper.selected
    title = check_text(cmd.title, "title", required=False, max_chars=300).strip() or (selected.outline.title if selected else "paper")
    summary = check_text(cmd.summary, "summary", required=False).strip()
    check_materialised(quest.root, list(PAPER_FILES.values()))
    if package_type == "submission_package":
        problems = []
        if selected is None or not validate_outline(selected.outline)["ok"]:
            problems.append("the academic outline does not validate")
        if any(v.severity == "blocker" for v in facts.language_violations):
            problems.append("the manuscript's main text uses implementation or control wording")
        if problems:
            raise Conflict("submit_paper_bundle: not submission-ready: " + "; ".join(problems), code="not_submission_ready",
                           problems=problems)  # fmt: skip
    next_anchor = "finalize" if package_type == "submission_package" else "write"
    with quest.transaction() as txn:
        now = quest.state("manuscript")
        state_health = health(now)
        if state_health is not None and state_health["unresolved_required_items"]:
            items = [f"{i['section_id']}:{i['item_id']}" for i in state_health["unresolved_required_items"][:5]]
            raise Conflict("submit_paper_bundle: required outline items are unresolved: " + ", ".join(items),
                           code="paper_contract_incomplete",
                           unresolved_required_items=state_health["unresolved_required_items"])  # fmt: skip
        event = PaperBundleSubmitted(
            bundle_id=f"bundle-{len(now.bundles) + 1:03d}", title=title, package_type=package_type,
            outline_id=now.selected_outline_id, paper_branch=now.paper_branch, files=files, manuscript_paths=manuscript,
            summary=summary, claims=claims, facts=facts,
        )  # fmt: skip
        batch: list[Event] = [event]
        status = quest.state("status")
        if status.anchor != next_anchor:
            batch.append(QuestAnchorChanged(anchor=next_anchor, previous=status.anchor, reason=f"paper {event.bundle_id} submitted"))
        stored = txn.append(batch)[0]
    assert isinstance(stored, PaperBundleSubmitted)
    first = {f.role: f.path for f in reversed(stored.files)}
    return PaperBundleResult(
        ok=True, tool_name="submit_paper_bundle", bundle_id=stored.bundle_id, title=stored.title,
        package_type=stored.package_type, selected_outline_ref=stored.outline_id, paper_branch=stored.paper_branch,
        manuscript_paths=stored.manuscript_paths, files=msgspec.to_builtins(stored.files), claim_count=len(stored.claims),
        manuscript_facts=msgspec.to_builtins(stored.facts),
        paths={"manifest_path": PAPER_FILES["bundle_manifest"], "paper_line_state_path": PAPER_FILES["line_state"],
               "paper_contract_path": PAPER_FILES["contract"], "draft_path": first.get("draft"),
               "latex_root_path": first.get("latex"), "references_path": first.get("references"), "pdf_path": first.get("pdf")},
        next_anchor=next_anchor, seq=stored.seq,
    )  # fmt: skip


def package_type_of(value: str) -> PackageType:
    """``package_type`` (or one of DeepScientist's spellings of it) as one of ours."""
    key = value.strip().lower().replace("-", "_")
    found = _PACKAGE_ALIASES.get(key)
    if found is None:
        raise Invalid(f"package_type {value!r}: use draft_checkpoint, review_package or submission_package",
                      code="invalid_package_type", allowed=["draft_checkpoint", "review_package", "submission_package"])  # fmt: skip
    return found


# -- private helpers ----------------------------------------------------------------------


def _files(ws: Workspace, cmd: SubmitPaperBundle) -> tuple[list[BundleFile], list[str]]:
    """Every file of the bundle (manuscript first), and the manuscript's paths."""
    files: list[BundleFile] = []
    draft = ws.resolve(cmd.draft_path, "draft_path") if cmd.draft_path is not None else ws.default("paper/draft.md")
    if draft is not None:
        ws.under_paper(draft, "draft_path")
        if not draft.is_file() or not draft.name.lower().endswith(MANUSCRIPT_SUFFIXES):
            raise Invalid("draft_path names a Markdown (or LaTeX) file", code="invalid_field", field="draft_path")
        files.append(ws.bundle_file("draft", draft, "draft_path"))
    if cmd.latex_root_path is not None:
        root = ws.resolve(cmd.latex_root_path, "latex_root_path")
        ws.under_paper(root, "latex_root_path")
        files += [ws.bundle_file("latex", p, "latex_root_path") for p in ws.tex_files(root, "latex_root_path")]
    if not files:
        raise Invalid("submit_paper_bundle needs a manuscript: draft_path (Markdown) and/or latex_root_path (LaTeX) under "
                      "paper/, or paper/draft.md in the paper workspace", code="missing_manuscript",
                      paper_workspace=ws.rel or ".")  # fmt: skip
    manuscript = [f.path for f in files]
    single: list[tuple[FileRole, str | None, str]] = [
        ("references", cmd.references_path, "references_path"), ("writing_plan", cmd.writing_plan_path, "writing_plan_path"),
        ("claim_evidence_map", cmd.claim_evidence_map_path, "claim_evidence_map_path"),
        ("compile_report", cmd.compile_report_path, "compile_report_path"), ("pdf", cmd.pdf_path, "pdf_path"),
        ("outline", cmd.outline_path, "outline_path"),
    ]  # fmt: skip
    for role, value, field in single:
        target = ws.resolve(value, field) if value is not None else ws.default("paper/references.bib") if role == "references" else None
        if target is not None:
            files.append(ws.bundle_file(role, target, field))
    many: list[tuple[FileRole, list[str] | None, str]] = [
        ("figure", cmd.figure_paths, "figure_paths"), ("table", cmd.table_paths, "table_paths"),
    ]  # fmt: skip
    for role, values, field in many:
        for value in check_text_list(values, field, max_items=_MAX_FILES, max_chars=1000):
            files.append(ws.bundle_file(role, ws.resolve(value, field), field))
    return files, manuscript


def _claims(raw: list[dict[str, Any]] | None) -> list[BundleClaim]:
    out = []
    for n, item in enumerate(check_objects(raw, "claims"), start=1):
        statement = item.get("statement") or item.get("claim") or item.get("text")
        out.append(BundleClaim(
            claim_id=check_text(item.get("claim_id"), "claims[].claim_id", required=False, max_chars=100).strip() or f"C{n}",
            statement=check_text(statement, "claims[].statement", max_chars=4000).strip(),
            evidence=check_text_list(item.get("evidence"), "claims[].evidence", max_chars=1000),
            section=check_text(item.get("section"), "claims[].section", required=False, max_chars=200).strip(),
        ))  # fmt: skip
    return out
