"""The research tools of the `artifact` namespace, with DeepScientist's names and
arguments: ideas and lineage (``submit_idea``, ``activate_branch``,
``list_research_branches``, ``resolve_runtime_refs``), turn-start recovery
(``get_quest_state``, ``read_quest_documents``, ``get_conversation_context``,
``get_analysis_campaign``, ``get_global_status``, ``get_research_map_status``), ``git``
and ``complete_quest``.

Thin adapters over :mod:`ds_events.services.research.ideas`, :mod:`ds_events.services.research.queries`
and :mod:`ds_events.services.research.git_tool`; ``handlers.mcp.artifact`` calls :func:`register`.
"""

from __future__ import annotations

from ds_events.services import research as queries, research as service
from ds_events.services.research import git_tool as git_tool
from ds_events.services.research.commands import (
    ActivateBranch,
    ActivateBranchResult,
    AnalysisCampaignResult,
    CompleteQuest,
    CompleteQuestResult,
    ConversationContextResult,
    GetAnalysisCampaign,
    GetConversationContext,
    GetGlobalStatus,
    GetQuestState,
    GetResearchMapStatus,
    Git,
    GitResult,
    GlobalStatusResult,
    ListResearchBranches,
    QuestDocumentsResult,
    QuestStateResult,
    ReadQuestDocuments,
    ResearchBranchesResult,
    ResearchMapResult,
    ResolveRuntimeRefs,
    RuntimeRefsResult,
    SubmitIdea,
    SubmitIdeaResult,
)

from .context import StateT, ToolContext
from .namespace import Namespace
from .tools import READ_ONLY, writes

__all__ = ["register"]


def register(ns: Namespace[StateT]) -> None:
    """Add the research tools to ``ns``."""
    _lineage(ns)
    _recovery(ns)
    _git_and_completion(ns)


def _lineage(ns: Namespace[StateT]) -> None:
    @ns.tool(writes(destructive=True, idempotent=False))  # mode="revise" rewrites the active idea in place
    def submit_idea(tc: ToolContext[StateT], cmd: SubmitIdea) -> SubmitIdeaResult:
        """Submit a research idea. mode="create" with submission_mode="line" (the normal
        route) opens a new branch idea/<quest>-<idea_id> with its own worktree, numbered
        001, 002 ...; it becomes the research head and your workspace, and the quest moves
        to next_target. Say where it grows from with lineage_intent (continue_line: from
        the current branch; branch_alternative: a sibling of it) or foundation_ref (a run,
        an idea, a branch, the baseline). submission_mode="candidate" records the idea
        without a branch; mode="revise" rewrites the active idea in place. Needs a
        confirmed (or waived) baseline.
        A refused call changes nothing.

        Returns: idea_id, branch, branch_no, worktree_root, lineage_intent, parent_branch,
        foundation_ref, foundation_reason, idea_md_path, idea_draft_path (ideas/<idea_id>/),
        next_anchor, seq.

        Examples:
          submit_idea(title="Residual adapter", problem="the baseline saturates",
                      hypothesis="an adapter adds capacity cheaply", lineage_intent="continue_line",
                      draft_markdown="# Adapter\\n\\nInsert it after block 3.")
          submit_idea(title="Wider adapter", foundation_ref={"kind": "run", "ref": "main-001"},
                      foundation_reason="build on the best measured run")
        """
        return service.submit_idea(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def activate_branch(tc: ToolContext[StateT], cmd: ActivateBranch) -> ActivateBranchResult:
        """Go back to an existing research branch (by branch, idea_id or run_id) as your
        workspace, without creating a new node: its worktree is made if it has none. The
        quest moves to anchor (auto: decision after a main result, experiment with an
        idea, else idea). promote_to_head=true also makes it the research head. Refused
        while an analysis campaign is open.
        A refused call changes nothing.

        Returns: branch, worktree_root, idea_id, latest_main_run_id, next_anchor,
        worktree_created, workspace_mode, seq.
        Example: activate_branch(branch="idea/q1-idea-0001")
        """
        return service.activate_branch(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def list_research_branches(tc: ToolContext[StateT], cmd: ListResearchBranches) -> ResearchBranchesResult:
        """List the research branches (idea branches and branches with main results),
        numbered, with their idea, lineage, foundation and main-experiment results. Use it
        before choosing the foundation of the next idea. Read-only.

        Returns: active_head_branch, active_workspace_branch, count, branches (branch_no,
        branch_name, idea_id, idea_title, parent_branch, foundation_ref, latest_main_experiment,
        has_main_result, is_active_head, is_active_workspace, ...).
        Example: list_research_branches()
        """
        return queries.list_research_branches(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def resolve_runtime_refs(tc: ToolContext[StateT], cmd: ResolveRuntimeRefs) -> RuntimeRefsResult:
        """The current ids and branches, so you never guess them: active idea, research head,
        workspace, active campaign and its next slice, latest main run and its result
        file, the request waiting for the user. Read-only.

        Returns: active_idea_id, research_head_branch, current_workspace_branch,
        current_workspace_root, active_analysis_campaign_id, next_pending_slice_id,
        latest_main_run_id, latest_main_result_json, default_reply_interaction_id, ...
        Example: resolve_runtime_refs()
        """
        return queries.resolve_runtime_refs(tc.quest, cmd)


def _recovery(ns: Namespace[StateT]) -> None:
    @ns.tool(READ_ONLY)
    def get_quest_state(tc: ToolContext[StateT], cmd: GetQuestState) -> QuestStateResult:
        """The quest's runtime state at a glance, to pick up work at the start of a turn.
        detail="full" adds counts, paths, open requests, recent artifacts, runs and ideas.
        Read-only.

        Returns: detail, quest_state (status, active_anchor, baseline_gate, active_idea_id,
        active_analysis_campaign_id, current_workspace_branch, research_head_branch,
        pending_user_message_count, waiting_interaction_id, ...).
        Example: get_quest_state(detail="summary")
        """
        return queries.get_quest_state(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def read_quest_documents(tc: ToolContext[StateT], cmd: ReadQuestDocuments) -> QuestDocumentsResult:
        """Read the quest's durable documents: brief, plan, status, summary, and
        active_user_requirements (the user's latest messages). mode="excerpt" gives the
        first max_lines non-blank lines, mode="full" everything. Read-only.

        Returns: mode, count, items (name, path, exists, content).
        Example: read_quest_documents(names=["brief", "status"], mode="excerpt")
        """
        return queries.read_quest_documents(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_conversation_context(tc: ToolContext[StateT], cmd: GetConversationContext) -> ConversationContextResult:
        """The newest messages of the quest's conversation, both ways (the user's messages
        and replies, your interactions), oldest first. Read-only: it does not consume the
        mailbox (new messages still arrive once through interact()).

        Returns: count, total, items (id, role, kind, content, created_at,
        reply_to_interaction_id), latest_user_message.
        Example: get_conversation_context(limit=5)
        """
        return queries.get_conversation_context(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_analysis_campaign(tc: ToolContext[StateT], cmd: GetAnalysisCampaign) -> AnalysisCampaignResult:
        """One analysis campaign with each slice's status and the next slice to do.
        campaign_id="active" (the default) is the open campaign. Read-only.

        Returns: campaign_id, title, goal, parent_run_id, parent_branch, slices,
        next_pending_slice_id, pending_slice_count, completed_slice_count, campaign_complete.
        Example: get_analysis_campaign(campaign_id="active")
        """
        return queries.get_analysis_campaign(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_global_status(tc: ToolContext[StateT], cmd: GetGlobalStatus) -> GlobalStatusResult:
        """A short status for "how is it going?": stage, latest main result, what waits for
        the user, running shells, and a one-paragraph summary_text. Read-only.

        Returns: detail, locale, global_status (current_stage, latest_run_id,
        latest_run_summary, pending_user_message_count, bash_running_count, summary_text, ...).
        Example: get_global_status(detail="brief")
        """
        return queries.get_global_status(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_research_map_status(tc: ToolContext[StateT], cmd: GetResearchMapStatus) -> ResearchMapResult:
        """Where the research line stands on the Canvas: the current and head nodes, the
        current node's history (its ancestors), runtime refs, the git head, the canvas
        summary, and which node to activate to go back. Read-only.

        Returns: detail, research_map_status (canvas_summary, runtime_refs, node_history,
        git {head_commit, current_ref, research_head_ref}, activation_refs,
        recommended_activation_ref, quest_state, global_status, usage_notes).
        Example: get_research_map_status(detail="summary")
        """
        return queries.get_research_map_status(tc.quest, cmd)


def _git_and_completion(ns: Namespace[StateT]) -> None:
    @ns.tool(writes(destructive=False, idempotent=False))  # its reads (status, log, show, diff) cannot be told apart by the listing
    def git(tc: ToolContext[StateT], cmd: Git) -> GitResult:
        """Git on your workspace (the worktree of the branch you work on, or the quest
        root), inside the quest repository only. Reads: status; log (ref, base, limit);
        show (sha); diff (sha, or base and head; path narrows it). Changes: commit
        (message, allow_empty: a checkpoint of the workspace); branch (branch=<kind>/<name>,
        create_from, checkout_new_branch: also a worktree you then work in); checkout
        (branch: work on that branch's worktree, made if missing — never detaches).
        A refused call changes nothing.

        Returns: action, repo, current_ref, head, result (the action's details), seq (the
        event that recorded a change, else null).

        Examples: git(action="status")
                  git(action="commit", message="adapter: first version")
                  git(action="diff", base="main", head="idea/q1-idea-0001")
        """
        return git_tool.git(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))  # a completed quest answers already_completed
    def complete_quest(tc: ToolContext[StateT], cmd: CompleteQuest) -> CompleteQuestResult:
        """Mark the quest completed — only after the user approved it explicitly: first
        ask with interact(kind="decision_request", reply_mode="blocking",
        reply_schema={"decision_type": "quest_completion_approval"}, message=...), and
        call this once they answered yes. Otherwise it refuses and says what is missing
        (approval_required, waiting_for_user, approval_not_explicit).
        A refused call changes nothing.

        Returns: status (completed | already_completed), interaction_id,
        approval_message_id, message, seq.
        Example: complete_quest(summary="Adapter beats the baseline by 1.2 points; paper drafted.")
        """
        return service.complete_quest(tc.quest, cmd)
