"""Turn-start recovery queries of the `artifact` namespace: ``list_research_branches``,
``resolve_runtime_refs``, ``read_quest_documents``, ``get_conversation_context``,
``get_analysis_campaign``. (Where the quest stands — ``get_quest_state``,
``get_global_status``, ``get_research_map_status`` — is :mod:`.overview`.)

Read-only: each answers from the projections (research, artifacts, interactions)
caught up with the log; nothing is appended. ``read_quest_documents`` reads the
materialised documents after writing any the log has moved past.

Error codes: ``invalid_mode``, ``invalid_limit``, ``unknown_document``,
``no_active_campaign``, ``unknown_campaign``.
"""

from __future__ import annotations

from typing import Any

from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest
from ds_events.paths import read_confined
from ds_events.services.research.commands import (
    DOCUMENT_NAMES,
    AnalysisCampaignResult,
    ConversationContextResult,
    GetAnalysisCampaign,
    GetConversationContext,
    ListResearchBranches,
    QuestDocumentsResult,
    ReadQuestDocuments,
    ResearchBranchesResult,
    ResolveRuntimeRefs,
    RuntimeRefsResult,
)
from ds_events.services.research.lineage import branch_kind_of, workspace_branch
from ds_events.services.research.refs import run_summary, runtime_refs, workspace_root
from projections.artifacts import State as ArtifactsState
from projections.research import State as ResearchState, format_branch_no, idea_paths

__all__ = [
    "list_research_branches",
    "resolve_runtime_refs",
    "read_quest_documents",
    "get_conversation_context",
    "get_analysis_campaign",
    "DOCUMENT_FILES",
]

# The materialised file behind each document name (active_user_requirements is read
# from the conversation instead).
DOCUMENT_FILES = {"brief": "brief.md", "plan": "plan.md", "status": "status.md", "summary": "SUMMARY.md"}
_MAX_CONVERSATION = 200
_USER_REQUIREMENTS = 10  # the newest user messages shown as the active requirements


def list_research_branches(quest: Quest, cmd: ListResearchBranches) -> ResearchBranchesResult:
    """Every branch that carries an idea or a main result, numbered, with its lineage and results."""
    research, artifacts = quest.state("research"), quest.state("artifacts")
    head = research.research_head_branch
    current = workspace_branch(research, artifacts)
    order: dict[str, int] = {}  # branch -> seq it was first seen at
    for idea in research.ideas.values():
        if idea.submitted.branch:
            order.setdefault(idea.submitted.branch, idea.created_seq)
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
    return runtime_refs(quest)


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
            rel = DOCUMENT_FILES[name]
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
    pending = [s.slice_id for s in campaign.slices if s.status == "pending"]
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


# -- private helpers ----------------------------------------------------------------------


def _branch_row(
    quest: Quest, research: ResearchState, artifacts: ArtifactsState, branch: str, number: str, head: str | None, current: str
) -> dict[str, Any]:
    records = [i for i in research.ideas.values() if i.submitted.branch == branch]
    idea = records[-1].submitted if records else None
    runs = sorted((r for r in artifacts.runs.values() if r.branch == branch), key=lambda r: r.seq)
    latest = run_summary(runs[-1]) if runs else None
    page, draft = idea_paths(idea.idea_id) if idea else (None, None)
    started_from = artifacts.branches[branch].start_point if branch in artifacts.branches else None
    return {
        "branch_no": number,
        "branch_name": branch,
        "branch_kind": branch_kind_of(branch),
        "worktree_root": workspace_root(quest, research, artifacts, branch),
        "is_active_head": branch == head,
        "is_active_workspace": branch == current,
        "idea_id": idea.idea_id if idea else (latest["idea_id"] if latest else None),
        "idea_title": idea.title if idea else None,
        "idea_problem": idea.problem or None if idea else None,
        "method_brief": idea.method_brief or None if idea else None,
        **{k: (idea.details.get(k) if idea else None) for k in ("selection_scores", "mechanism_family", "change_layer", "source_lens")},
        "next_target": idea.next_target if idea else None,
        "lineage_intent": idea.lineage_intent if idea else None,
        "parent_branch": idea.parent_branch if idea else started_from,
        "foundation_ref": idea.foundation_ref or None if idea else None,
        "foundation_reason": idea.foundation_reason or None if idea else None,
        "idea_md_path": str(quest.root / page) if page else None,
        "idea_draft_path": str(quest.root / draft) if draft else None,
        "latest_main_experiment": latest,
        "has_main_result": latest is not None,
        "round_state": "post_result" if latest else "pre_result",
        "experiments": [run_summary(r) for r in runs],
        "experiment_count": len(runs),
        "idea_history": [i.submitted.idea_id for i in records],
        "updated_at": max([i.updated_at for i in records] + [r.ts for r in runs], default=None),
    }


def _user_requirements(quest: Quest) -> tuple[str, None, bool]:
    research = quest.state("research")
    said = [m for m in research.conversation if m.role == "user"][-_USER_REQUIREMENTS:]
    text = "\n".join(f"- ({m.ts}) {m.content.strip()}" for m in said)
    return text, None, bool(said)
