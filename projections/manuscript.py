"""The `manuscript` view: the paper chain of a quest — its outlines (candidates, the
selected one, revisions), the paper branch, the writing plan, the bundles submitted —
and the paper contract and its health (what blocks writing or finalising), as a fold
over the ``paper.*`` events and the analysis and main-experiment events the contract
counts.

(``projections.papers`` is the arXiv library; this is the quest's own paper.)

Materialises, under ``paper/`` of the quest root:

- ``outlines/candidates/<outline_id>.json`` for every outline, ``outlines/revisions/<id>.json``
  for a revised one, ``selected_outline.json`` and ``outline_selection.md``;
- ``writing_plan.json`` and ``writing_plan.md`` once a plan is compiled;
- ``paper_bundle_manifest.json`` for the latest bundle;
- ``paper_contract.json`` and ``paper_line_state.json`` (the contract's health).

Timestamps in the files are the events' own, so replay writes the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec
from msgspec.structs import replace

from ds_events.events import Event
from ds_events.events.artifact import AnalysisCampaignCreated, AnalysisSliceRecorded, MainExperimentRecorded
from ds_events.events.paper import (
    EVENTS as PAPER_EVENTS,
    OutlineSubmitted,
    PaperBundleSubmitted,
    PaperOutline,
    WritingPlanCompiled,
)

from .base import Files, Projection
from .manuscript_checks import CORE_SECTIONS, validate_outline

__all__ = [
    "State", "Outline", "PROJECTION", "OUTLINE_STATUS", "PAPER_FILES",
    "outline_record", "outline_paths", "contract", "health", "plan_record", "bundle_manifest",
]  # fmt: skip

OUTLINE_STATUS = {"candidate": "candidate", "select": "selected", "revise": "revised"}
PAPER_FILES = {
    "selected_outline": "paper/selected_outline.json",
    "outline_selection": "paper/outline_selection.md",
    "writing_plan": "paper/writing_plan.json",
    "writing_plan_md": "paper/writing_plan.md",
    "bundle_manifest": "paper/paper_bundle_manifest.json",
    "contract": "paper/paper_contract.json",
    "line_state": "paper/paper_line_state.json",
}
_COUNTED = (AnalysisCampaignCreated, AnalysisSliceRecorded, MainExperimentRecorded, *PAPER_EVENTS)


class Outline(msgspec.Struct, kw_only=True):
    """An outline as it stands: the latest submission of it (the event), its status,
    how often it was revised, when it was first submitted."""

    submitted: OutlineSubmitted
    status: str  # candidate | selected | revised
    revisions: int = 0
    created_seq: int = 0
    created_at: str = ""

    @property
    def outline(self) -> PaperOutline:
        return self.submitted.outline


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    outlines: dict[str, Outline] = {}  # in submission order
    selected_outline_id: str | None = None
    selection: OutlineSubmitted | None = None  # the event that selected it (branch, reason)
    paper_branch: str | None = None
    worktree: str | None = None
    plan: WritingPlanCompiled | None = None
    bundles: list[PaperBundleSubmitted] = []
    open_slices: dict[str, list[str]] = {}  # campaign -> slices not yet recorded
    completed_refs: list[str] = []  # completed slice ids and main run ids (what required items resolve to)
    slice_items: dict[str, dict[str, str]] = {}  # campaign tied to the outline -> {slice_id: outline item}

    @property
    def selected(self) -> Outline | None:
        return self.outlines.get(self.selected_outline_id) if self.selected_outline_id else None

    @property
    def latest_bundle(self) -> PaperBundleSubmitted | None:
        return self.bundles[-1] if self.bundles else None


def initial() -> State:
    return State()


def outline_paths(outline_id: str) -> tuple[str, str]:
    """Where an outline is materialised: its candidate file and its revision file."""
    return f"paper/outlines/candidates/{outline_id}.json", f"paper/outlines/revisions/{outline_id}.json"


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    match event:
        case OutlineSubmitted(mode=mode, outline=outline):
            old = state.outlines.get(outline.outline_id)
            status = OUTLINE_STATUS[mode]
            if old is None:
                state.outlines[outline.outline_id] = Outline(submitted=event, status=status, created_seq=event.seq,
                                                             created_at=event.ts)  # fmt: skip
            else:
                state.outlines[outline.outline_id] = replace(
                    old, submitted=event, status=status, revisions=old.revisions + (mode == "revise")
                )
            if mode != "candidate":
                if state.selected_outline_id not in (None, outline.outline_id):
                    prev = state.outlines[state.selected_outline_id]
                    state.outlines[state.selected_outline_id] = replace(prev, status="candidate")
                state.selected_outline_id = outline.outline_id
                state.selection = event
                if event.paper_branch:
                    state.paper_branch, state.worktree = event.paper_branch, event.worktree
        case WritingPlanCompiled():
            state.plan = event
        case PaperBundleSubmitted():
            state.bundles.append(event)
        case AnalysisCampaignCreated():
            state.open_slices[event.campaign_id] = [str(s.get("slice_id", "")) for s in event.slices]
            if event.selected_outline_ref is not None:
                state.slice_items[event.campaign_id] = dict(event.slice_items)
        case AnalysisSliceRecorded(campaign_id=campaign, slice_id=slice_id):
            pending = state.open_slices.get(campaign)
            if pending is not None and slice_id in pending:
                rest = [s for s in pending if s != slice_id]
                if rest:
                    state.open_slices[campaign] = rest
                else:
                    del state.open_slices[campaign]
            if event.status == "completed":
                state.completed_refs.append(slice_id)
                item = state.slice_items.get(campaign, {}).get(slice_id)
                if item is not None:  # the outline item this slice resolves
                    state.completed_refs.append(item)
        case MainExperimentRecorded(run=run):
            state.completed_refs.append(run)
    return state


# -- the contract and its health (pure: the query tools and the files share them) --------


def outline_record(record: Outline) -> dict[str, Any]:
    """An outline in DeepScientist's record shape (``detailed_outline``, ``paper_view``,
    ``sections``), with its status and the events' times."""
    o = record.outline
    detailed = {"title": o.title, "abstract": o.abstract or None, "research_questions": o.research_questions,
                "methodology": o.methodology or None, "experimental_designs": o.experimental_designs,
                "contributions": o.contributions, **o.extra}  # fmt: skip
    paper_view = {
        "paper_type": o.paper_type,
        "outline_maturity": o.outline_maturity or None,
        "working_title": o.title,
        "story_spine": msgspec.to_builtins(o.story_spine),
        "narrative_strategy": {"central_thesis": o.central_thesis or None, "central_insight": o.central_insight or None},
        "core_claims": msgspec.to_builtins(o.core_claims),
        "evidence_grounding": msgspec.to_builtins(o.evidence_boundaries),
        "method_abstraction": {"intuition": o.method_intuition or None, "mechanism_steps": o.mechanism_steps},
        "evaluation_plan": {"setting": o.evaluation_setting or None, "datasets_or_benchmarks": o.datasets_or_benchmarks},
        "analysis_plan": msgspec.to_builtins(o.planned_analyses),
        "analysis_budget_waiver": o.analysis_budget_waiver or None,
    }
    return {
        "schema_version": 2, "outline_id": o.outline_id, "status": record.status, "title": o.title,
        "note": o.note or None, "story": o.story or None, "ten_questions": o.ten_questions,
        "detailed_outline": detailed, "paper_view": paper_view, "sections": msgspec.to_builtins(o.sections),
        "review_result": o.review_result or None, "revisions": record.revisions,
        "created_at": record.created_at, "updated_at": record.submitted.ts, "seq": record.submitted.seq,
    }  # fmt: skip


def plan_record(plan: WritingPlanCompiled) -> dict[str, Any]:
    return {"schema_version": 1, "outline_id": plan.outline_id, "validation_ok": plan.validation_ok,
            "validation_blockers": plan.validation_blockers, "writing_jobs": msgspec.to_builtins(plan.jobs),
            "compiled_at": plan.ts, "seq": plan.seq}  # fmt: skip


def bundle_manifest(bundle: PaperBundleSubmitted) -> dict[str, Any]:
    by_role: dict[str, list[str]] = {}
    for f in bundle.files:
        by_role.setdefault(f.role, []).append(f.path)
    first = {role: paths[0] for role, paths in by_role.items()}
    return {
        "schema_version": 1, "bundle_id": bundle.bundle_id, "title": bundle.title, "summary": bundle.summary or None,
        "package_type": bundle.package_type, "selected_outline_ref": bundle.outline_id, "paper_branch": bundle.paper_branch,
        "draft_path": first.get("draft"), "latex_root_path": first.get("latex"), "references_path": first.get("references"),
        "writing_plan_path": first.get("writing_plan"), "claim_evidence_map_path": first.get("claim_evidence_map"),
        "compile_report_path": first.get("compile_report"), "pdf_path": first.get("pdf"), "outline_path": first.get("outline"),
        "figure_paths": by_role.get("figure", []), "table_paths": by_role.get("table", []),
        "manuscript_paths": bundle.manuscript_paths, "files": msgspec.to_builtins(bundle.files),
        "claims": msgspec.to_builtins(bundle.claims), "manuscript_facts": msgspec.to_builtins(bundle.facts),
        "claim_stamp": bundle.claim_stamp, "created_at": bundle.ts, "seq": bundle.seq,
    }  # fmt: skip


def contract(state: State) -> dict[str, Any] | None:
    """The active paper contract: the selected outline's sections with their required
    items (resolved or not), its claims and planned analyses, the plan and the latest
    bundle. None while no outline is selected."""
    selected = state.selected
    if selected is None:
        return None
    o = selected.outline
    done = set(state.completed_refs)
    sections = [
        {**msgspec.to_builtins(s), "resolved_items": [i for i in s.required_items if i in done],
         "unresolved_items": [i for i in s.required_items if i not in done],
         "status": "ready" if all(i in done for i in s.required_items) else "needs_evidence"}
        for s in o.sections
    ]  # fmt: skip
    bundle = state.latest_bundle
    return {
        "selected_outline_ref": o.outline_id,
        "paper_line_id": _line_id(state),
        "paper_branch": state.paper_branch,
        "worktree": state.worktree,
        "source_branch": state.selection.source_branch if state.selection else None,
        "source_run_id": state.selection.source_run_id if state.selection else None,
        "title": o.title,
        "story_spine": msgspec.to_builtins(o.story_spine),
        "core_claims": msgspec.to_builtins(o.core_claims),
        "evidence_boundaries": msgspec.to_builtins(o.evidence_boundaries),
        "planned_analyses": msgspec.to_builtins(o.planned_analyses),
        "sections": sections,
        "writing_plan": {"compiled": state.plan is not None and state.plan.outline_id == o.outline_id,
                         "job_count": len(state.plan.jobs) if state.plan else 0},
        "bundle": None if bundle is None else {"bundle_id": bundle.bundle_id, "package_type": bundle.package_type,
                                               "manuscript_paths": bundle.manuscript_paths,
                                               "claim_count": len(bundle.claims)},
        "paths": {k: v for k, v in PAPER_FILES.items()},
    }


def health(state: State) -> dict[str, Any] | None:
    """What blocks writing or finalising the paper (None while no outline is selected):
    DeepScientist's readiness flags, counts, blocking reasons and the recommended next
    stage and action."""
    paper = contract(state)
    selected = state.selected
    if paper is None or selected is None:
        return None
    validation = validate_outline(selected.outline)
    required = [i for s in paper["sections"] for i in s["required_items"]]
    unresolved = [{"section_id": s["section_id"], "item_id": i} for s in paper["sections"] for i in s["unresolved_items"]]
    open_slices = [{"campaign_id": c, "slice_id": s} for c, slices in state.open_slices.items() for s in slices]
    # Open slices of campaigns tied to the outline block writing; others are supplementary.
    blocking = [s for s in open_slices if s["campaign_id"] in state.slice_items]
    bundle = state.latest_bundle
    plan_ready = paper["writing_plan"]["compiled"]
    facts = bundle.facts if bundle is not None else None
    language_ok = facts is not None and not any(v.severity == "blocker" for v in facts.language_violations)
    missing_core = [s for s in CORE_SECTIONS if facts is None or s not in facts.sections_found]
    manuscript_blockers: list[str] = []
    if bundle is None:
        manuscript_blockers.append("no paper bundle submitted")
    else:
        if not bundle.manuscript_paths:
            manuscript_blockers.append("the bundle has no Markdown or LaTeX manuscript")
        if missing_core:
            manuscript_blockers.append("missing core sections: " + ", ".join(missing_core))
        if facts is not None and facts.figure_count + facts.table_count == 0 and not any(
            f.role in ("figure", "table") for f in bundle.files
        ):
            manuscript_blockers.append("no figures or tables")
        if not language_ok:
            manuscript_blockers.append("the manuscript's main text uses implementation or control wording")
    if not validation["ok"]:
        manuscript_blockers.append("the selected outline is not a complete paper plan (validate_academic_outline)")
    contract_ok = not unresolved
    writing_ready = validation["ok"] and contract_ok and not blocking
    manuscript_ready = writing_ready and not manuscript_blockers
    submission_blockers = list(manuscript_blockers)
    if bundle is None or bundle.package_type != "submission_package":
        submission_blockers.append("the latest bundle is not a submission_package")
    if bundle is None or not any(f.role == "pdf" for f in bundle.files):
        submission_blockers.append("no compiled PDF in the bundle")
    submission_ready = manuscript_ready and not submission_blockers
    reasons = []
    if unresolved:
        reasons.append("required outline items are still unresolved")
    if blocking:
        reasons.append("slices of the outline's analysis campaigns are still pending")
    if not validation["ok"]:
        reasons.append("the selected outline has blockers: " + "; ".join(validation["blockers"]))
    stage, action = _recommend(validation, unresolved, blocking, plan_ready, bundle, manuscript_ready, submission_ready)
    closure = ("delivery_ready" if submission_ready else "review_before_submission" if manuscript_ready
               else "draft_checkpoint_continue_writing" if bundle is not None else "bundle_not_ready")  # fmt: skip
    return {
        "paper_line_id": paper["paper_line_id"],
        "paper_branch": state.paper_branch,
        "selected_outline_ref": paper["selected_outline_ref"],
        "contract_ok": contract_ok,
        "writing_ready": writing_ready,
        "evidence_ready": contract_ok,
        "analysis_ready": writing_ready and not blocking,
        "academic_outline_ready": validation["academic_outline_ready"],
        "analysis_plan_ready": validation["analysis_plan_ready"],
        "writing_plan_ready": plan_ready,
        "language_firewall_ok": language_ok,
        "draft_checkpoint_ready": bundle is not None,
        "manuscript_ready": manuscript_ready,
        "submission_ready": submission_ready,
        "finalize_ready": submission_ready,
        "package_type": bundle.package_type if bundle else None,
        "closure_state": closure,
        "required_count": len(required),
        "ready_required_count": len(required) - len(unresolved),
        "section_count": len(paper["sections"]),
        "ready_section_count": sum(1 for s in paper["sections"] if s["status"] == "ready"),
        "unresolved_required_count": len(unresolved),
        "unmapped_completed_count": 0,
        "open_supplementary_count": len(open_slices),
        "blocking_open_supplementary_count": len(blocking),
        "draft_status": "present" if bundle is not None and bundle.manuscript_paths else "missing",
        "bundle_status": "present" if bundle is not None else "missing",
        "blocking_reasons": reasons,
        "manuscript_blocking_reasons": manuscript_blockers,
        "submission_blocking_reasons": submission_blockers,
        "recommended_next_stage": stage,
        "recommended_action": action,
        "unresolved_required_items": unresolved,
        "open_slices": open_slices,
        "blocking_pending_slices": blocking,
    }


def _recommend(
    validation: dict[str, Any], unresolved: list[dict[str, str]], blocking: list[dict[str, str]], plan_ready: bool,
    bundle: PaperBundleSubmitted | None, manuscript_ready: bool, submission_ready: bool,
) -> tuple[str, str]:  # fmt: skip
    if not validation["ok"]:
        return "write", "repair_academic_outline_with_paper_outline"
    if unresolved or blocking:
        return "analysis-campaign", "complete_required_supplementary"
    if not plan_ready:
        return "write", "compile_outline_to_writing_plan"
    if bundle is None:
        return "write", "draft_paper"
    if not manuscript_ready:
        return "write", "expand_manuscript_and_figures"
    if not submission_ready:
        return "finalize", "prepare_submission_package"
    return "finalize", "finalize_paper_line"


def _line_id(state: State) -> str | None:
    if state.selected_outline_id is None:
        return None
    return f"{state.paper_branch or 'paper'}::{state.selected_outline_id}"


# -- render -----------------------------------------------------------------------------


def render(state: State) -> Files:
    files: Files = {}
    for record in state.outlines.values():
        candidate, revision = outline_paths(record.outline.outline_id)
        body = _json(outline_record(record))
        files[candidate] = body
        if record.revisions:
            files[revision] = body
    selected = state.selected
    if selected is not None and state.selection is not None:
        files[PAPER_FILES["selected_outline"]] = _json(outline_record(selected))
        files[PAPER_FILES["outline_selection"]] = _selection_md(selected, state.selection).encode()
        files[PAPER_FILES["contract"]] = _json(contract(state))
        files[PAPER_FILES["line_state"]] = _json(health(state))
    if state.plan is not None:
        files[PAPER_FILES["writing_plan"]] = _json(plan_record(state.plan))
        files[PAPER_FILES["writing_plan_md"]] = _plan_md(state.plan).encode()
    bundle = state.latest_bundle
    if bundle is not None:
        files[PAPER_FILES["bundle_manifest"]] = _json(bundle_manifest(bundle))
    return files


def render_changed(state: State, events: Iterable[Event]) -> Files:
    return render(state) if any(isinstance(e, _COUNTED) for e in events) else {}


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _selection_md(record: Outline, selection: OutlineSubmitted) -> str:
    o = record.outline
    lines = [
        f"# Outline {record.status}: {o.title}",
        "",
        f"- outline: `{o.outline_id}`",
        f"- paper branch: `{selection.paper_branch or '-'}` (from `{selection.source_branch or '-'}`)",
        f"- reason: {selection.reason or 'not recorded'}",
        f"- revisions: {record.revisions}",
        "",
        "## Story spine",
        "",
        *[f"- {key}: {getattr(o.story_spine, key) or 'not recorded'}" for key in o.story_spine.__struct_fields__],
        "",
        "## Core claims",
        "",
        *([f"- `{c.claim_id}`: {c.claim}" for c in o.core_claims] or ["- none recorded"]),
        "",
        "## Evidence boundaries",
        "",
        *[f"- observed: {f}" for f in o.evidence_boundaries.observed_facts],
        *[f"- may be read as: {f}" for f in o.evidence_boundaries.allowed_interpretations],
        *[f"- must not claim: {f}" for f in o.evidence_boundaries.must_not_claim],
        "",
        "## Planned analyses",
        "",
        *([f"- `{a.analysis_id}` {a.title} (claims: {', '.join(a.claim_links) or '-'})" for a in o.planned_analyses]
          or ["- none planned"]),
        "",
    ]  # fmt: skip
    return "\n".join(lines)


def _plan_md(plan: WritingPlanCompiled) -> str:
    lines = ["# Writing plan", "", f"- outline: `{plan.outline_id}`", f"- outline valid: {plan.validation_ok}", ""]
    for blocker in plan.validation_blockers:
        lines.append(f"- blocker: {blocker}")
    lines += ["", "## Jobs", ""]
    for job in plan.jobs:
        lines += [f"### {job.job_id}: {job.section}", "", f"- from: {job.source}", f"- write when: {job.write_when}",
                  f"- role: {job.paper_role}"]  # fmt: skip
        if job.claim_links:
            lines.append(f"- claims: {', '.join(job.claim_links)}")
        lines += [f"- [ ] {item}" for item in job.must_do]
        lines.append("")
    return "\n".join(lines)


PROJECTION: Projection[State] = Projection(
    name="manuscript",
    state_type=State,
    initial=initial,
    apply=apply,
    render=render,
    render_changed=render_changed,
)
