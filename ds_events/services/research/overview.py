"""Where the quest stands, for the `artifact` namespace: ``get_quest_state``,
``get_global_status`` and ``get_research_map_status`` (the research line on the Canvas:
current and head nodes, their history, and which node to activate to go back).

Read-only: each answers from the projections (status, research, artifacts,
interactions, bash sessions, turns) caught up with the log, plus the quest's git refs
for the research map; nothing is appended.

Error codes: ``invalid_detail``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.home import Quest
from ds_events.services.quest import read_models
from ds_events.services.research.commands import (
    GetGlobalStatus,
    GetQuestState,
    GetResearchMapStatus,
    GlobalStatusResult,
    ListResearchBranches,
    QuestStateResult,
    ResearchMapResult,
)
from ds_events.services.research.lineage import baseline_gate, branch_kind_of, workspace_branch
from ds_events.services.research.queries import DOCUMENT_FILES, list_research_branches
from ds_events.services.research.refs import latest_run, parse_detail, run_summary, runtime_refs
from projections.artifacts import newest_records, record_path

__all__ = ["get_quest_state", "get_global_status", "get_research_map_status"]


def get_quest_state(quest: Quest, cmd: GetQuestState) -> QuestStateResult:
    detail = parse_detail(cmd.detail, ("summary", "full"))
    return QuestStateResult(ok=True, detail=detail, quest_state=_quest_state(quest, detail))


def get_global_status(quest: Quest, cmd: GetGlobalStatus) -> GlobalStatusResult:
    """A short answer to "where are we?": stage, latest result, what waits for whom."""
    detail = parse_detail(cmd.detail, ("brief", "full"))
    return GlobalStatusResult(ok=True, detail=detail, locale=cmd.locale, global_status=_global_status(quest, detail))


def get_research_map_status(quest: Quest, cmd: GetResearchMapStatus) -> ResearchMapResult:
    """Where the research line stands on the Canvas: current and head nodes, their
    history, the refs, the git head, and which node to activate to go back."""
    detail = parse_detail(cmd.detail, ("summary", "full"))
    canvas = read_models.canvas(quest, "branch")
    refs = runtime_refs(quest)
    nodes = {n["id"]: n for n in canvas["nodes"]}
    parents = {e["target"]: e["source"] for e in canvas["edges"]}
    current_ref = refs.current_workspace_branch or "main"
    head_ref = refs.research_head_branch or current_ref
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
        "active_ids": {"active_idea_id": refs.active_idea_id, "latest_main_run_id": refs.latest_main_run_id,
                       "active_analysis_campaign_id": refs.active_analysis_campaign_id},
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
                            "recommended": recommended},
        "recommended_activation_ref": recommended,
        "quest_state": state,
        "runtime_refs": {k: v for k, v in msgspec.structs.asdict(refs).items() if k != "ok"},
        "global_status": status,
        "canvas_summary": {"node_count": len(canvas["nodes"]), "edge_count": len(canvas["edges"]),
                           "default_ref": current_ref, "views": canvas["views"], "seq": canvas["seq"]},
    }
    if detail == "full":
        payload["canvas"] = canvas
        payload["branch_summary"] = msgspec.to_builtins(list_research_branches(quest, ListResearchBranches()))
    return ResearchMapResult(ok=True, detail=detail, locale=cmd.locale, research_map_status=payload)


# -- private helpers ----------------------------------------------------------------------


def _quest_state(quest: Quest, detail: str) -> dict[str, Any]:
    status, research, artifacts = quest.state("status"), quest.state("research"), quest.state("artifacts")
    interactions, turns = quest.state("interactions"), quest.state("turns")
    refs = runtime_refs(quest)
    attached = artifacts.attached or {}
    state: dict[str, Any] = {
        "quest_id": quest.id,
        "title": status.title,
        "status": status.status,
        "runtime_status": "running" if turns.running else status.status,
        "active_anchor": status.anchor,
        "baseline_gate": baseline_gate(artifacts),
        "active_baseline_id": refs.active_baseline_id,
        "active_baseline_variant_id": attached.get("variant_id"),
        "active_run_id": turns.running,
        "active_idea_id": research.active_idea_id,
        "active_analysis_campaign_id": research.active_campaign_id,
        "next_pending_slice_id": refs.next_pending_slice_id,
        "current_workspace_branch": refs.current_workspace_branch,
        "current_workspace_root": refs.current_workspace_root,
        "research_head_branch": research.research_head_branch,
        "research_head_worktree_root": refs.research_head_worktree_root,
        "workspace_mode": branch_kind_of(refs.current_workspace_branch),
        "waiting_interaction_id": refs.default_reply_interaction_id,
        "pending_user_message_count": len(interactions.pending),
        "latest_main_run_id": refs.latest_main_run_id,
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
        state["paths"] = {"quest_root": str(quest.root), **{k: str(quest.root / v) for k, v in DOCUMENT_FILES.items()}}
        state["active_interactions"] = [
            {"interaction_id": i, "message": interactions.interactions[i].message, "kind": interactions.interactions[i].kind}
            for i in interactions.open_requests if i in interactions.interactions
        ]  # fmt: skip
        state["recent_artifacts"] = [
            {"artifact_id": r.artifact_id, "kind": r.kind, "branch": r.branch, "seq": r.seq, "path": record_path(r.kind, r.artifact_id)}
            for r in newest_records(artifacts, 10)
        ]  # fmt: skip
        state["recent_runs"] = [run_summary(r) for r in sorted(artifacts.runs.values(), key=lambda r: r.seq)[-5:]]
        state["idea_lines"] = [
            {"idea_id": i.idea_id, "title": i.title, "branch": i.branch, "branch_no": i.branch_no,
             "parent_branch": i.parent_branch, "lineage_intent": i.lineage_intent}
            for i in (record.submitted for record in research.ideas.values())
        ]  # fmt: skip
    return state


def _global_status(quest: Quest, detail: str) -> dict[str, Any]:
    status, artifacts, interactions = quest.state("status"), quest.state("artifacts"), quest.state("interactions")
    sessions = quest.state("bash_sessions")
    latest = latest_run(artifacts, None)
    summary = run_summary(latest) if latest else None
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
        out["recent_runs"] = [run_summary(r) for r in sorted(artifacts.runs.values(), key=lambda r: r.seq)[-5:]]
        out["completed_summary"] = status.completed_summary or None
    return out


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
