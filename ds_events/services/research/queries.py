"""Turn-start recovery queries of the `artifact` namespace: ``list_research_branches``,
``resolve_runtime_refs``, ``get_quest_state``, ``read_quest_documents``,
``get_conversation_context``, ``get_analysis_campaign``, ``get_global_status``,
``get_research_map_status``.

Read-only: each answers from the projections (research, artifacts, status,
interactions, bash sessions, turns) caught up with the log, plus the quest's git refs
for the research map; nothing is appended. ``read_quest_documents`` reads the
materialised documents after writing any the log has moved past.

Error codes: ``invalid_detail``, ``invalid_mode``, ``invalid_limit``,
``unknown_document``, ``no_active_campaign``, ``unknown_campaign``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest
from ds_events.paths import read_confined
from projections.artifacts import newest_records, record_path
from projections.research import format_branch_no, idea_paths

from ds_events.services.quest import read_models as read_models
from ds_events.services.research.ideas import baseline_gate, branch_kind_of, workspace_branch
from ds_events.services.research.commands import (
    DOCUMENT_NAMES,
    AnalysisCampaignResult,
    ConversationContextResult,
    GetAnalysisCampaign,
    GetConversationContext,
    GetGlobalStatus,
    GetQuestState,
    GetResearchMapStatus,
    GlobalStatusResult,
    ListResearchBranches,
    QuestDocumentsResult,
    QuestStateResult,
    ReadQuestDocuments,
    ResearchBranchesResult,
    ResearchMapResult,
    ResolveRuntimeRefs,
    RuntimeRefsResult,
)

__all__ = [
    "list_research_branches",
    "resolve_runtime_refs",
    "get_quest_state",
    "read_quest_documents",
    "get_conversation_context",
    "get_analysis_campaign",
    "get_global_status",
    "get_research_map_status",
]

_DOCUMENT_FILES = {"brief": "brief.md", "plan": "plan.md", "status": "status.md", "summary": "SUMMARY.md"}
_MAX_CONVERSATION = 200
_USER_REQUIREMENTS = 10  # the newest user messages shown as the active requirements


def list_research_branches(quest: Quest, cmd: ListResearchBranches) -> ResearchBranchesResult:
    """Every branch that carries an idea or a main result, numbered, with its lineage and results."""
    research, artifacts = quest.state("research"), quest.state("artifacts")
    head = research.research_head_branch
    current = workspace_branch(research, artifacts)
    order: dict[str, int] = {}  # branch -> seq it was first seen at
    for idea in research.ideas.values():
        if idea.branch:
            order.setdefault(idea.branch, idea.created_seq)
    for run in artifacts.runs.values():
        order[run.branch] = min(order.get(run.branch, run.seq), run.seq)
    for branch in (head, research.current_workspace_branch):
        if branch:
            order.setdefault(branch, research.last_seq)
    numbers = dict(research.branch_numbers)
    fallback = max(numbers.values(), default=0)
    rows = []
    for branch in sorted(order, key=lambda b: (order[b], b)):
        if branch not in numbers:
            fallback += 1
            numbers[branch] = fallback
        rows.append(_branch_row(quest, research, artifacts, branch, format_branch_no(numbers[branch]), head, current))
    rows.sort(key=lambda r: (not r["is_active_head"], r["branch_no"]))
    return ResearchBranchesResult(ok=True, active_head_branch=head, active_workspace_branch=current, count=len(rows), branches=rows)


def resolve_runtime_refs(quest: Quest, cmd: ResolveRuntimeRefs) -> RuntimeRefsResult:
    """The ids and branches the agent would otherwise guess: active idea, head, workspace,
    campaign and its next slice, latest main result, the request awaiting a reply."""
    return RuntimeRefsResult(ok=True, **_refs(quest))


def get_quest_state(quest: Quest, cmd: GetQuestState) -> QuestStateResult:
    detail = _detail(cmd.detail, ("summary", "full"))
    return QuestStateResult(ok=True, detail=detail, quest_state=_quest_state(quest, detail))


def read_quest_documents(quest: Quest, cmd: ReadQuestDocuments) -> QuestDocumentsResult:
    """The quest's brief, plan, status, summary and the user's standing requirements."""
    mode = cmd.mode.strip().lower()
    if mode not in ("excerpt", "full"):
        raise Invalid(f"mode must be excerpt or full, got {cmd.mode!r}", code="invalid_mode")
    if isinstance(cmd.max_lines, bool) or not 1 <= cmd.max_lines <= 500:
        raise Invalid("max_lines must be an integer from 1 to 500", code="invalid_limit", field="max_lines")
    names = [n.strip().lower() for n in (cmd.names or DOCUMENT_NAMES)]
    unknown = [n for n in names if n not in DOCUMENT_NAMES]
    if unknown:
        raise Invalid(f"unknown document {unknown[0]!r}: use {', '.join(DOCUMENT_NAMES)}", code="unknown_document",
                      names=unknown, allowed=list(DOCUMENT_NAMES))  # fmt: skip
    quest.views.catch_up()
    quest.views.materialise()  # the files reflect every event, whichever process appended it
    items = []
    for name in dict.fromkeys(names):
        if name == "active_user_requirements":
            text, path, exists = _user_requirements(quest)
        else:
            rel = _DOCUMENT_FILES[name]
            data = read_confined(quest.root, rel, field="names")
            text, path, exists = (data or b"").decode("utf-8", "replace"), str(quest.root / rel), data is not None
        if mode == "excerpt":
            text = "\n".join([line.rstrip() for line in text.splitlines() if line.strip()][: cmd.max_lines])
        items.append({"name": name, "path": path, "exists": exists, "content": text.strip() or None})
    return QuestDocumentsResult(ok=True, mode=mode, count=len(items), items=items)


def get_conversation_context(quest: Quest, cmd: GetConversationContext) -> ConversationContextResult:
    """The newest messages both ways: the user's messages and replies, the agent's interactions."""
    if isinstance(cmd.limit, bool) or not 1 <= cmd.limit <= _MAX_CONVERSATION:
        raise Invalid(f"limit must be an integer from 1 to {_MAX_CONVERSATION}", code="invalid_limit", field="limit")
    research = quest.state("research")
    items = []
    for m in research.conversation[-cmd.limit :]:
        item = {"id": m.id, "seq": m.seq, "role": m.role, "kind": m.kind, "source": m.source, "content": m.content,
                "created_at": m.ts, "interaction_id": m.interaction_id,
                "reply_to_interaction_id": m.interaction_id if m.kind == "reply" else None, "run_id": m.run_id}  # fmt: skip
        if cmd.include_attachments:
            item["attachments"] = []
        items.append(item)
    latest_user = next((i for i in reversed(items) if i["role"] == "user"), None)
    return ConversationContextResult(ok=True, count=len(items), total=research.conversation_total, items=items,
                                     latest_user_message=latest_user)  # fmt: skip


def get_analysis_campaign(quest: Quest, cmd: GetAnalysisCampaign) -> AnalysisCampaignResult:
    """One campaign with its slices' status and the next slice to do (``"active"``: the open one)."""
    research, artifacts = quest.state("research"), quest.state("artifacts")
    wanted = (cmd.campaign_id or "active").strip()
    if wanted == "active":
        campaign_id = research.active_campaign_id
        if campaign_id is None:
            raise NotFound("no analysis campaign is open: create_analysis_campaign(...) starts one",
                           code="no_active_campaign")  # fmt: skip
    else:
        campaign_id = wanted
    campaign = artifacts.campaigns.get(campaign_id)
    if campaign is None:
        raise NotFound(f"no analysis campaign {campaign_id!r}: see resolve_runtime_refs", code="unknown_campaign",
                       campaign_id=campaign_id, known=sorted(artifacts.campaigns)[-20:])  # fmt: skip
    slices = [
        {"slice_id": s.slice_id, "title": s.title, "goal": s.goal, "status": s.status, "branch": s.branch,
         "worktree": s.worktree, "worktree_root": str(quest.root / s.worktree) if s.worktree else None,
         "metrics_summary": dict(s.metrics_summary), "summary": s.summary, "head_sha": s.head_sha}
        for s in campaign.slices
    ]  # fmt: skip
    pending = [s["slice_id"] for s in slices if s["status"] == "pending"]
    parent_worktree = research.worktrees.get(campaign.parent_branch)
    parent_run = artifacts.runs.get(campaign.parent_run) if campaign.parent_run else None
    return AnalysisCampaignResult(
        ok=True, campaign_id=campaign_id, title=campaign.title, goal=campaign.goal,
        active_idea_id=(parent_run.idea_id if parent_run else None) or research.active_idea_id,
        parent_run_id=campaign.parent_run, parent_branch=campaign.parent_branch, parent_sha=campaign.parent_sha,
        parent_worktree_root=str(quest.root / parent_worktree) if parent_worktree else None, slices=slices,
        next_pending_slice_id=pending[0] if pending else None, pending_slice_count=len(pending),
        completed_slice_count=len(slices) - len(pending), campaign_complete=not pending,
        is_active=research.active_campaign_id == campaign_id, path=f"artifacts/campaigns/{campaign_id}.json",
    )  # fmt: skip


def get_global_status(quest: Quest, cmd: GetGlobalStatus) -> GlobalStatusResult:
    """A short answer to "where are we?": stage, latest result, what waits for whom."""
    detail = _detail(cmd.detail, ("brief", "full"))
    return GlobalStatusResult(ok=True, detail=detail, locale=cmd.locale, global_status=_global_status(quest, detail))


def get_research_map_status(quest: Quest, cmd: GetResearchMapStatus) -> ResearchMapResult:
    """Where the research line stands on the Canvas: current and head nodes, their
    history, the refs, the git head, and which node to activate to go back."""
    detail = _detail(cmd.detail, ("summary", "full"))
    canvas = read_models.canvas(quest, "branch")
    refs = _refs(quest)
    nodes = {n["id"]: n for n in canvas["nodes"]}
    parents = {e["target"]: e["source"] for e in canvas["edges"]}
    current_ref = refs["current_workspace_branch"] or "main"
    head_ref = refs["research_head_branch"] or current_ref
    current, head_node = nodes.get(current_ref), nodes.get(head_ref)
    recommended = _activation_ref(head_node) if head_ref != current_ref else None
    state = _quest_state(quest, "summary")
    status = _global_status(quest, "brief")
    payload: dict[str, Any] = {
        "quest_id": quest.id,
        "title": state["title"],
        "summary_text": (
            f"Working on {current_ref}; research head {head_ref}; stage {state['active_anchor']}."
            + (f" Latest result: {status['latest_run_summary']}" if status["latest_run_summary"] else "")
        ),
        "usage_notes": {
            "summary_mode": "detail='summary' for recovery and status answers; 'full' adds the canvas graph and branch list.",
            "activation_rule": "To go back to an older node, activate_branch(branch=recommended_activation_ref.ref).",
            "dedupe_rule": "If the current node and the head did not change, continue the work instead of reading the map again.",
        },
        "active_ids": {k: refs[k] for k in ("active_idea_id", "latest_main_run_id", "active_analysis_campaign_id")},
        "git": {
            "head_commit": current["head"] if current else None,
            "current_ref": current_ref,
            "active_workspace_ref": current_ref,
            "research_head_ref": head_ref,
            "research_head_commit": head_node["head"] if head_node else None,
            "workspace_mode": branch_kind_of(current_ref),
        },
        "current_node": current,
        "research_head_node": head_node,
        "node_history": _node_history(current_ref, nodes, parents),
        "activation_refs": {"current": _activation_ref(current), "research_head": _activation_ref(head_node),
                            "recommended": recommended},  # fmt: skip
        "recommended_activation_ref": recommended,
        "quest_state": state,
        "runtime_refs": refs,
        "global_status": status,
        "canvas_summary": {"node_count": len(canvas["nodes"]), "edge_count": len(canvas["edges"]),
                           "default_ref": current_ref, "views": canvas["views"], "seq": canvas["seq"]},  # fmt: skip
    }
    if detail == "full":
        payload["canvas"] = canvas
        payload["branch_summary"] = msgspec.to_builtins(list_research_branches(quest, ListResearchBranches()))
    return ResearchMapResult(ok=True, detail=detail, locale=cmd.locale, research_map_status=payload)


# -- private helpers ----------------------------------------------------------------------


def _detail(value: str, allowed: tuple[str, ...]) -> str:
    detail = value.strip().lower()
    if detail not in allowed:
        raise Invalid(f"detail must be {' or '.join(allowed)}, got {value!r}", code="invalid_detail", allowed=list(allowed))
    return detail


def _abs(quest: Quest, rel: str | None) -> str | None:
    return str(quest.root / rel) if rel else None


def _workspace_root(quest: Quest, research: Any, artifacts: Any, branch: str | None) -> str | None:
    if branch is None:
        return None
    if branch == "main":
        return str(quest.root)
    rel = research.worktrees.get(branch)
    if rel is None and branch in artifacts.branches:
        rel = artifacts.branches[branch].worktree
    return _abs(quest, rel)


def _latest_run(artifacts: Any, branch: str | None) -> Any:
    runs = [r for r in artifacts.runs.values() if branch is None or r.branch == branch]
    return max(runs, key=lambda r: r.seq) if runs else None


def _refs(quest: Quest) -> dict[str, Any]:
    research, artifacts, interactions = quest.state("research"), quest.state("artifacts"), quest.state("interactions")
    current = workspace_branch(research, artifacts)
    campaign = artifacts.campaigns.get(research.active_campaign_id) if research.active_campaign_id else None
    analysis_parent = campaign.parent_branch if campaign else None
    canonical = analysis_parent or current or research.research_head_branch
    latest = _latest_run(artifacts, canonical) or _latest_run(artifacts, None)
    pending = [s.slice_id for s in campaign.slices if s.status == "pending"] if campaign else []
    waiting = interactions.open_requests[-1] if interactions.open_requests else None
    attached = (artifacts.attached or {}).get("baseline_id")
    return {
        "quest_id": quest.id,
        "active_idea_id": research.active_idea_id,
        "research_head_branch": research.research_head_branch,
        "research_head_worktree_root": _workspace_root(quest, research, artifacts, research.research_head_branch),
        "current_workspace_branch": current,
        "current_workspace_root": _workspace_root(quest, research, artifacts, current),
        "analysis_parent_branch": analysis_parent,
        "analysis_parent_worktree_root": _workspace_root(quest, research, artifacts, analysis_parent),
        "current_canonical_branch": canonical,
        "active_analysis_campaign_id": research.active_campaign_id,
        "active_campaign_title": campaign.title if campaign else None,
        "next_pending_slice_id": pending[0] if pending else None,
        "latest_main_run_id": latest.run if latest else None,
        "latest_main_run_branch": latest.branch if latest else None,
        "latest_main_result_json": str(quest.root / record_path("run", latest.run)) if latest else None,
        "active_baseline_id": attached or artifacts.confirmed_baseline,
        "selected_outline_ref": None,
        "default_reply_interaction_id": waiting,
        "seq": max(research.last_seq, artifacts.last_seq),
    }


def _quest_state(quest: Quest, detail: str) -> dict[str, Any]:
    status, research, artifacts = quest.state("status"), quest.state("research"), quest.state("artifacts")
    interactions, turns = quest.state("interactions"), quest.state("turns")
    refs = _refs(quest)
    attached = artifacts.attached or {}
    state: dict[str, Any] = {
        "quest_id": quest.id,
        "title": status.title,
        "status": status.status,
        "runtime_status": "running" if turns.running else status.status,
        "active_anchor": status.anchor,
        "baseline_gate": baseline_gate(artifacts),
        "active_baseline_id": refs["active_baseline_id"],
        "active_baseline_variant_id": attached.get("variant_id"),
        "active_run_id": turns.running,
        "active_idea_id": research.active_idea_id,
        "active_analysis_campaign_id": research.active_campaign_id,
        "next_pending_slice_id": refs["next_pending_slice_id"],
        "current_workspace_branch": refs["current_workspace_branch"],
        "current_workspace_root": refs["current_workspace_root"],
        "research_head_branch": research.research_head_branch,
        "research_head_worktree_root": refs["research_head_worktree_root"],
        "workspace_mode": branch_kind_of(refs["current_workspace_branch"]),
        "waiting_interaction_id": refs["default_reply_interaction_id"],
        "pending_user_message_count": len(interactions.pending),
        "latest_main_run_id": refs["latest_main_run_id"],
        "last_flow_type": research.last_flow_type or None,
        "seq": status.last_seq,
    }
    if detail == "full":
        state["counts"] = {
            "ideas": len(research.ideas), "idea_branches": len(research.branch_numbers), "main_runs": len(artifacts.runs),
            "campaigns": len(artifacts.campaigns), "records": len(artifacts.records),
            "checkpoints": artifacts.checkpoint_count, "user_messages": status.user_messages,
            "interactions": len(interactions.interactions), "events": status.last_seq,
        }  # fmt: skip
        state["paths"] = {"quest_root": str(quest.root), **{k: str(quest.root / v) for k, v in _DOCUMENT_FILES.items()}}
        state["active_interactions"] = [
            {"interaction_id": i, "message": interactions.interactions[i].message, "kind": interactions.interactions[i].kind}
            for i in interactions.open_requests if i in interactions.interactions
        ]  # fmt: skip
        state["recent_artifacts"] = [
            {"artifact_id": r.artifact_id, "kind": r.kind, "branch": r.branch, "seq": r.seq, "path": record_path(r.kind, r.artifact_id)}
            for r in newest_records(artifacts, 10)
        ]  # fmt: skip
        state["recent_runs"] = [_run_summary(r) for r in sorted(artifacts.runs.values(), key=lambda r: r.seq)[-5:]]
        state["idea_lines"] = [
            {"idea_id": i.idea_id, "title": i.title, "branch": i.branch, "branch_no": i.branch_no,
             "parent_branch": i.parent_branch, "lineage_intent": i.lineage_intent}
            for i in research.ideas.values()
        ]  # fmt: skip
    return state


def _global_status(quest: Quest, detail: str) -> dict[str, Any]:
    status, artifacts, interactions = quest.state("status"), quest.state("artifacts"), quest.state("interactions")
    sessions = quest.state("bash_sessions")
    latest = _latest_run(artifacts, None)
    summary = _run_summary(latest) if latest else None
    running = sum(1 for s in sessions.sessions.values() if s.status == "running")
    text = f"Stage {status.anchor}, quest {status.status}."
    if summary:
        text += f" Latest main experiment {summary['run_id']}: {summary['summary'] or summary['title']}"
        if summary["primary_value"] is not None:
            delta = summary["delta_vs_baseline"]
            versus = f", {delta:+g} vs the baseline" if isinstance(delta, (int, float)) else ""
            text += f" ({summary['primary_metric']} {summary['primary_value']}{versus})."
    if interactions.open_requests:
        text += f" Waiting for the user's answer to {interactions.open_requests[-1]}."
    out: dict[str, Any] = {
        "quest_id": quest.id,
        "title": status.title,
        "status": status.status,
        "current_stage": status.anchor,
        "status_line": f"{status.status} · {status.anchor} · {len(artifacts.runs)} main run(s)",
        "latest_run_id": summary["run_id"] if summary else None,
        "latest_run_summary": (summary["summary"] or summary["title"]) if summary else None,
        "latest_result": summary,
        "baseline_gate": baseline_gate(artifacts),
        "pending_user_message_count": len(interactions.pending),
        "open_request_count": len(interactions.open_requests),
        "bash_running_count": running,
        "summary_text": text,
    }
    if detail == "full":
        research = quest.state("research")
        out["active_idea_id"] = research.active_idea_id
        out["active_analysis_campaign_id"] = research.active_campaign_id
        out["current_workspace_branch"] = workspace_branch(research, artifacts)
        out["recent_runs"] = [_run_summary(r) for r in sorted(artifacts.runs.values(), key=lambda r: r.seq)[-5:]]
        out["completed_summary"] = status.completed_summary or None
    return out


def _run_summary(run: Any) -> dict[str, Any]:
    primary = run.comparisons.get(run.primary_metric, {}) if run.primary_metric else {}
    return {
        "run_id": run.run, "title": run.title, "summary": run.summary, "branch": run.branch, "idea_id": run.idea_id,
        "baseline_id": run.baseline_id, "primary_metric": run.primary_metric or None,
        "primary_value": run.metrics_summary.get(run.primary_metric) if run.primary_metric else None,
        "delta_vs_baseline": primary.get("delta"), "better_than_baseline": primary.get("better"),
        "head_sha": run.head_sha, "seq": run.seq,
    }  # fmt: skip


def _branch_row(quest: Quest, research: Any, artifacts: Any, branch: str, number: str, head: str | None, current: str) -> dict[str, Any]:
    ideas = [i for i in research.ideas.values() if i.branch == branch]
    idea = ideas[-1] if ideas else None
    runs = sorted((r for r in artifacts.runs.values() if r.branch == branch), key=lambda r: r.seq)
    latest = _run_summary(runs[-1]) if runs else None
    page, draft = idea_paths(idea.idea_id) if idea else (None, None)
    return {
        "branch_no": number,
        "branch_name": branch,
        "branch_kind": branch_kind_of(branch),
        "worktree_root": _workspace_root(quest, research, artifacts, branch),
        "is_active_head": branch == head,
        "is_active_workspace": branch == current,
        "idea_id": idea.idea_id if idea else (latest["idea_id"] if latest else None),
        "idea_title": idea.title if idea else None,
        "idea_problem": idea.problem or None if idea else None,
        "method_brief": idea.method_brief or None if idea else None,
        **{k: (idea.details.get(k) if idea else None) for k in ("selection_scores", "mechanism_family", "change_layer", "source_lens")},
        "next_target": idea.next_target if idea else None,
        "lineage_intent": idea.lineage_intent if idea else None,
        "parent_branch": idea.parent_branch if idea else (artifacts.branches[branch].start_point if branch in artifacts.branches else None),
        "foundation_ref": idea.foundation_ref or None if idea else None,
        "foundation_reason": idea.foundation_reason or None if idea else None,
        "idea_md_path": str(quest.root / page) if page else None,
        "idea_draft_path": str(quest.root / draft) if draft else None,
        "latest_main_experiment": latest,
        "has_main_result": latest is not None,
        "round_state": "post_result" if latest else "pre_result",
        "experiments": [_run_summary(r) for r in runs],
        "experiment_count": len(runs),
        "idea_history": [i.idea_id for i in ideas],
        "updated_at": max([i.updated_at for i in ideas] + [r.ts for r in runs], default=None),
    }


def _user_requirements(quest: Quest) -> tuple[str, None, bool]:
    research = quest.state("research")
    said = [m for m in research.conversation if m.role == "user"][-_USER_REQUIREMENTS:]
    text = "\n".join(f"- ({m.ts}) {m.content.strip()}" for m in said)
    return text, None, bool(said)


def _activation_ref(node: dict[str, Any] | None) -> dict[str, Any] | None:
    if not node:
        return None
    return {"ref": node["id"], "branch_kind": branch_kind_of(node["id"]), "head_commit": node.get("head"),
            "worktree": node.get("worktree_root")}  # fmt: skip


def _node_history(ref: str, nodes: dict[str, Any], parents: dict[str, str]) -> dict[str, Any]:
    chain: list[str] = []
    cursor = parents.get(ref)
    while cursor is not None and cursor not in chain and cursor != ref and len(chain) < 12:
        chain.append(cursor)
        cursor = parents.get(cursor)
    node = nodes.get(ref) or {}
    return {"current_ref": ref, "parent_ref": chain[0] if chain else None, "ancestor_refs": chain,
            "branch_kind": branch_kind_of(ref), "head_commit": node.get("head")}  # fmt: skip
