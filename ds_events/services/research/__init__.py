"""The research domain: ideas and branches, the research queries (state, scoreboard, frontier, map) and the `git` tool.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        SubmitIdea as SubmitIdea,
        ActivateBranch as ActivateBranch,
        ListResearchBranches as ListResearchBranches,
        ResolveRuntimeRefs as ResolveRuntimeRefs,
        GetQuestState as GetQuestState,
        ReadQuestDocuments as ReadQuestDocuments,
        GetConversationContext as GetConversationContext,
        GetAnalysisCampaign as GetAnalysisCampaign,
        GetGlobalStatus as GetGlobalStatus,
        GetResearchMapStatus as GetResearchMapStatus,
        Git as Git,
        CompleteQuest as CompleteQuest,
        SubmitIdeaResult as SubmitIdeaResult,
        ActivateBranchResult as ActivateBranchResult,
        ResearchBranchesResult as ResearchBranchesResult,
        RuntimeRefsResult as RuntimeRefsResult,
        QuestStateResult as QuestStateResult,
        QuestDocumentsResult as QuestDocumentsResult,
        ConversationContextResult as ConversationContextResult,
        AnalysisCampaignResult as AnalysisCampaignResult,
        GlobalStatusResult as GlobalStatusResult,
        ResearchMapResult as ResearchMapResult,
        GitResult as GitResult,
        CompleteQuestResult as CompleteQuestResult,
        GIT_ACTIONS as GIT_ACTIONS,
        DOCUMENT_NAMES as DOCUMENT_NAMES,
    )
    from .ideas import (
        submit_idea as submit_idea,
        activate_branch as activate_branch,
        complete_quest as complete_quest,
        resolve_foundation as resolve_foundation,
        branch_kind_of as branch_kind_of,
        has_branch as has_branch,
        baseline_gate as baseline_gate,
        COMPLETION_DECISION_TYPE as COMPLETION_DECISION_TYPE,
    )
    from .queries import (
        list_research_branches as list_research_branches,
        resolve_runtime_refs as resolve_runtime_refs,
        get_quest_state as get_quest_state,
        read_quest_documents as read_quest_documents,
        get_conversation_context as get_conversation_context,
        get_analysis_campaign as get_analysis_campaign,
        get_global_status as get_global_status,
        get_research_map_status as get_research_map_status,
    )
    from .git_tool import (
        git as git,
        changed_files as changed_files,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("SubmitIdea", "ActivateBranch", "ListResearchBranches", "ResolveRuntimeRefs", "GetQuestState", "ReadQuestDocuments", "GetConversationContext", "GetAnalysisCampaign", "GetGlobalStatus", "GetResearchMapStatus", "Git", "CompleteQuest", "SubmitIdeaResult", "ActivateBranchResult", "ResearchBranchesResult", "RuntimeRefsResult", "QuestStateResult", "QuestDocumentsResult", "ConversationContextResult", "AnalysisCampaignResult", "GlobalStatusResult", "ResearchMapResult", "GitResult", "CompleteQuestResult", "GIT_ACTIONS", "DOCUMENT_NAMES"),
    "ideas": ("submit_idea", "activate_branch", "complete_quest", "resolve_foundation", "branch_kind_of", "has_branch", "baseline_gate", "COMPLETION_DECISION_TYPE"),
    "queries": ("list_research_branches", "resolve_runtime_refs", "get_quest_state", "read_quest_documents", "get_conversation_context", "get_analysis_campaign", "get_global_status", "get_research_map_status"),
    "git_tool": ("git", "changed_files"),
})
