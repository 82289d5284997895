"""The research domain: ideas (``ideas``), branch activation (``branches``), quest
completion (``completion``), the recovery queries (``queries``, ``overview``) and the
`git` tool (``git_tool``); ``lineage``, ``refs`` and ``batch`` hold what several of them
share.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .branches import activate_branch as activate_branch
    from .commands import (
        DOCUMENT_NAMES as DOCUMENT_NAMES,
        GIT_ACTIONS as GIT_ACTIONS,
        ActivateBranch as ActivateBranch,
        ActivateBranchResult as ActivateBranchResult,
        AnalysisCampaignResult as AnalysisCampaignResult,
        CompleteQuest as CompleteQuest,
        CompleteQuestResult as CompleteQuestResult,
        ConversationContextResult as ConversationContextResult,
        GetAnalysisCampaign as GetAnalysisCampaign,
        GetConversationContext as GetConversationContext,
        GetGlobalStatus as GetGlobalStatus,
        GetQuestState as GetQuestState,
        GetResearchMapStatus as GetResearchMapStatus,
        Git as Git,
        GitResult as GitResult,
        GlobalStatusResult as GlobalStatusResult,
        ListResearchBranches as ListResearchBranches,
        QuestDocumentsResult as QuestDocumentsResult,
        QuestStateResult as QuestStateResult,
        ReadQuestDocuments as ReadQuestDocuments,
        ResearchBranchesResult as ResearchBranchesResult,
        ResearchMapResult as ResearchMapResult,
        ResolveRuntimeRefs as ResolveRuntimeRefs,
        RuntimeRefsResult as RuntimeRefsResult,
        SubmitIdea as SubmitIdea,
        SubmitIdeaResult as SubmitIdeaResult,
    )
    from .completion import COMPLETION_DECISION_TYPE as COMPLETION_DECISION_TYPE, complete_quest as complete_quest
    from .git_tool import changed_files as changed_files, git as git
    from .ideas import resolve_foundation as resolve_foundation, submit_idea as submit_idea
    from .lineage import (
        baseline_gate as baseline_gate,
        branch_kind_of as branch_kind_of,
        has_branch as has_branch,
        workspace_branch as workspace_branch,
    )
    from .overview import (
        get_global_status as get_global_status,
        get_quest_state as get_quest_state,
        get_research_map_status as get_research_map_status,
    )
    from .queries import (
        get_analysis_campaign as get_analysis_campaign,
        get_conversation_context as get_conversation_context,
        list_research_branches as list_research_branches,
        read_quest_documents as read_quest_documents,
        resolve_runtime_refs as resolve_runtime_refs,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "SubmitIdea", "ActivateBranch", "ListResearchBranches", "ResolveRuntimeRefs", "GetQuestState", "ReadQuestDocuments",
        "GetConversationContext", "GetAnalysisCampaign", "GetGlobalStatus", "GetResearchMapStatus", "Git", "CompleteQuest",
        "SubmitIdeaResult", "ActivateBranchResult", "ResearchBranchesResult", "RuntimeRefsResult", "QuestStateResult",
        "QuestDocumentsResult", "ConversationContextResult", "AnalysisCampaignResult", "GlobalStatusResult",
        "ResearchMapResult", "GitResult", "CompleteQuestResult", "GIT_ACTIONS", "DOCUMENT_NAMES",
    ),
    "ideas": ("submit_idea", "resolve_foundation"),
    "branches": ("activate_branch",),
    "completion": ("complete_quest", "COMPLETION_DECISION_TYPE"),
    "lineage": ("branch_kind_of", "has_branch", "baseline_gate", "workspace_branch"),
    "queries": (
        "list_research_branches", "resolve_runtime_refs", "read_quest_documents", "get_conversation_context",
        "get_analysis_campaign",
    ),
    "overview": ("get_quest_state", "get_global_status", "get_research_map_status"),
    "git_tool": ("git", "changed_files"),
})  # fmt: skip
