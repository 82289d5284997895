"""The commands of the research tools of the `artifact` namespace and their answers:
ideas and lineage, turn-start recovery, the ``git`` tool, quest completion.

Names, arguments and key result fields follow DeepScientist's research loop, so agents
and skills written against it call these as they are. Every command also takes
``comment`` (DeepScientist's note on why a call is made; on the base Command): it is
kept in the call's ``tool.call_finished`` record and changes nothing else. Services, in
this package: ``ideas`` (submit_idea), ``branches`` (activate_branch), ``completion``
(complete_quest), ``queries`` and ``overview`` (read-only), ``git_tool`` (``git``).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, Meta, UnsetType

from ds_events.services.commands import Command, Result

__all__ = [
    "SubmitIdea", "ActivateBranch", "ListResearchBranches", "ResolveRuntimeRefs", "GetQuestState",
    "ReadQuestDocuments", "GetConversationContext", "GetAnalysisCampaign", "GetGlobalStatus",
    "GetResearchMapStatus", "Git", "CompleteQuest",
    "SubmitIdeaResult", "ActivateBranchResult", "ResearchBranchesResult", "RuntimeRefsResult", "QuestStateResult",
    "QuestDocumentsResult", "ConversationContextResult", "AnalysisCampaignResult", "GlobalStatusResult",
    "ResearchMapResult", "GitResult", "CompleteQuestResult",
    "GIT_ACTIONS", "DOCUMENT_NAMES",
]  # fmt: skip

GIT_ACTIONS = ("status", "commit", "branch", "checkout", "log", "show", "diff", "graph")
DOCUMENT_NAMES = ("brief", "plan", "status", "summary", "active_user_requirements")

_FOUNDATION = {
    "anyOf": [
        {"type": "string"},  # a branch name, as the parameter says
        {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["current_head", "baseline", "idea", "run", "branch"]},
                "ref": {"type": "string", "description": "The idea id, run id, baseline id or branch it names."},
            },
        },
        {"type": "null"},
    ]
}


_Call = Command  # every command takes ``comment`` (ds_events.services.commands.Command)


class SubmitIdea(_Call):
    mode: Annotated[str, Meta(description="create (a new idea) | revise (rewrite the active idea in place).")] = "create"
    submission_mode: Annotated[str, Meta(description=(
        "line (a new idea branch idea/<quest>-<idea_id> with its worktree, the new research head) | "
        "candidate (record the idea only; promote it later with mode=create and the same idea_id)."
    ))] = "line"
    idea_id: Annotated[str | None, Meta(description="The idea's id (letters, digits, '.', '_', '-'). When null: idea-NNNN.")] = None
    lineage_intent: Annotated[str | None, Meta(description=(
        "continue_line (grow from the current branch) | branch_alternative (a sibling: grow from the current "
        "branch's parent). Aliases: continue, child, branch, alternative, sibling. When null with no "
        "foundation_ref: continue_line."
    ))] = None
    title: Annotated[str, Meta(description="One line naming the idea (required to create).")] = ""
    problem: Annotated[str, Meta(description="What is wrong or missing now.")] = ""
    hypothesis: Annotated[str, Meta(description="What you expect and why.")] = ""
    mechanism: Annotated[str, Meta(description="How the change produces the effect.")] = ""
    method_brief: Annotated[str, Meta(description="The method in a few sentences.")] = ""
    selection_scores: Annotated[dict[str, Any] | None, Meta(description="Scores that ranked this idea, e.g. {\"impact\": 4}.")] = None
    mechanism_family: Annotated[str, Meta(description="A label for the kind of mechanism.")] = ""
    change_layer: Annotated[str, Meta(description="Where the change lives (data, model, loss, ...).")] = ""
    source_lens: Annotated[str, Meta(description="Where the idea came from.")] = ""
    expected_gain: Annotated[str, Meta(description="The gain you expect, in words or numbers.")] = ""
    evidence_paths: Annotated[list[str] | None, Meta(description="Files inside the quest that support it.")] = None
    risks: Annotated[list[str] | None, Meta(description="What could make it fail.")] = None
    decision_reason: Annotated[str, Meta(description="Why this idea was chosen now.")] = ""
    foundation_ref: Annotated[dict[str, Any] | str | None, Meta(
        description=(
            "What the idea branch starts from: {\"kind\": \"run\", \"ref\": \"<run_id>\"}, {\"kind\": \"idea\", \"ref\": "
            "\"<idea_id>\"}, {\"kind\": \"branch\", \"ref\": \"<branch>\"}, {\"kind\": \"baseline\"}, {\"kind\": "
            "\"current_head\"}, or a branch name. When null: inferred from lineage_intent."
        ),
        extra_json_schema=_FOUNDATION,
    )] = None
    foundation_reason: Annotated[str, Meta(description="Why that foundation.")] = ""
    next_target: Annotated[str, Meta(description="The stage to move to next (an anchor such as experiment).")] = "experiment"
    draft_markdown: Annotated[str, Meta(description="Your draft of the idea (markdown), kept as ideas/<idea_id>/draft.md.")] = ""
    source_candidate_id: Annotated[str | None, Meta(description="The candidate idea this one promotes, if any.")] = None


class ActivateBranch(_Call):
    branch: Annotated[str | None, Meta(description="The branch to work on again.")] = None
    idea_id: Annotated[str | None, Meta(description="Or: the idea whose branch to work on.")] = None
    run_id: Annotated[str | None, Meta(description="Or: the main experiment whose branch to work on.")] = None
    anchor: Annotated[str | None, Meta(description=(
        "The stage to move to: auto (decision after a main result, experiment with an idea, else idea) or an anchor."
    ))] = "auto"
    promote_to_head: Annotated[bool, Meta(description="Make this branch the research head too.")] = False
    create_worktree_if_missing: Annotated[bool, Meta(description="Make a worktree for it when it has none.")] = True


class ListResearchBranches(_Call):
    pass


class ResolveRuntimeRefs(_Call):
    pass


class GetQuestState(_Call):
    detail: Annotated[str, Meta(description="summary | full (adds counts, paths, open requests, recent artifacts and runs).")] = "summary"


class ReadQuestDocuments(_Call):
    names: Annotated[list[str] | None, Meta(description=(
        "Which documents: brief, plan, status, summary, active_user_requirements. When null: all of them."
    ))] = None
    mode: Annotated[str, Meta(description="excerpt (the first max_lines non-blank lines) | full.")] = "excerpt"
    max_lines: Annotated[int, Meta(description="1-500: lines per document in excerpt mode.")] = 12


class GetConversationContext(_Call):
    limit: Annotated[int, Meta(description="1-200: the newest messages to return.")] = 12
    include_attachments: Annotated[bool, Meta(description="Add each message's attachments (always empty here).")] = False


class GetAnalysisCampaign(_Call):
    campaign_id: Annotated[str | None, Meta(description="A campaign id, or \"active\" (or null) for the active campaign.")] = "active"


class GetGlobalStatus(_Call):
    detail: Annotated[str, Meta(description="brief | full.")] = "brief"
    locale: Annotated[str, Meta(description="Accepted for compatibility; the summary is written in English.")] = "en"


class GetResearchMapStatus(_Call):
    detail: Annotated[str, Meta(description="summary | full (adds the canvas graph and the branch list).")] = "summary"
    locale: Annotated[str, Meta(description="Accepted for compatibility; the summary is written in English.")] = "en"


class Git(_Call, kw_only=True):
    action: Annotated[str, Meta(description=(
        "status | commit | branch | checkout | log | show | diff | graph (the quest's branch graph, as "
        "render_git_graph: recorded, and drawn to artifacts/graphs/)."
    ))]
    message: Annotated[str | None, Meta(description="commit: the commit message.")] = None
    ref: Annotated[str | None, Meta(description="log: the branch or commit to list; show: the commit; checkout: the branch.")] = None
    base: Annotated[str | None, Meta(description="diff: the older side (with head); log: stop at this commit.")] = None
    head: Annotated[str | None, Meta(description="diff: the newer side (with base).")] = None
    sha: Annotated[str | None, Meta(description="show / diff: a commit (diff against its first parent).")] = None
    path: Annotated[str | None, Meta(description="diff: only this file (relative to the repository).")] = None
    branch: Annotated[str | None, Meta(description="branch: the new branch (<kind>/<name>); checkout: the branch to work on.")] = None
    create_from: Annotated[str | None, Meta(description="branch: where the new branch starts. When null: the workspace's branch.")] = None
    limit: Annotated[int, Meta(description="log: 1-500 commits.")] = 30
    allow_empty: Annotated[bool, Meta(description="commit: commit even when nothing changed.")] = False
    checkout_new_branch: Annotated[bool, Meta(description="branch: also give it a worktree and work there.")] = False


class CompleteQuest(_Call):
    summary: Annotated[str, Meta(description="What the quest found, in a few sentences.")] = ""


# -- results ------------------------------------------------------------------------------


class SubmitIdeaResult(Result, kw_only=True):
    """A candidate (an idea without a branch) has no ``branch``, ``branch_no``,
    ``worktree`` or ``worktree_root`` keys at all, and a ``candidate_root`` (its folder
    under ideas/): DeepScientist's callers tell a candidate so."""

    ok: bool
    mode: str
    submission_mode: str
    idea_id: str
    title: str
    branch: str | UnsetType | None = UNSET
    branch_no: str | UnsetType | None = UNSET
    worktree: str | UnsetType | None = UNSET
    worktree_root: str | UnsetType | None = UNSET
    candidate_root: str | UnsetType = UNSET
    lineage_intent: str | None
    parent_branch: str | None
    foundation_ref: dict[str, Any]
    foundation_reason: str | None
    idea_md_path: str
    idea_draft_path: str
    next_anchor: str
    promotable: bool
    source_candidate_id: str | None
    seq: int
    # The brief, echoed (DeepScientist's callers read it back from the answer).
    method_brief: str = ""
    selection_scores: dict[str, Any] | None = None
    mechanism_family: str = ""
    change_layer: str = ""
    source_lens: str = ""


class ActivateBranchResult(Result, kw_only=True):
    ok: bool
    branch: str
    branch_kind: str
    worktree: str | None
    worktree_root: str
    worktree_created: bool
    idea_id: str | None
    latest_main_run_id: str | None
    source_parent_branch: str | None
    idea_md_path: str | None
    idea_draft_path: str | None
    workspace_mode: str
    next_anchor: str
    promote_to_head: bool
    seq: int


class ResearchBranchesResult(Result, kw_only=True):
    ok: bool
    active_head_branch: str | None
    active_workspace_branch: str | None
    count: int
    branches: list[dict[str, Any]]


class RuntimeRefsResult(Result, kw_only=True):
    ok: bool
    quest_id: str
    active_idea_id: str | None
    research_head_branch: str | None
    research_head_worktree_root: str | None
    current_workspace_branch: str | None
    current_workspace_root: str | None
    analysis_parent_branch: str | None
    analysis_parent_worktree_root: str | None
    current_canonical_branch: str | None
    active_analysis_campaign_id: str | None
    active_campaign_title: str | None
    next_pending_slice_id: str | None
    latest_main_run_id: str | None
    latest_main_run_branch: str | None
    latest_main_result_json: str | None
    active_baseline_id: str | None
    selected_outline_ref: str | None
    default_reply_interaction_id: str | None
    seq: int


class QuestStateResult(Result, kw_only=True):
    ok: bool
    detail: str
    quest_state: dict[str, Any]


class QuestDocumentsResult(Result, kw_only=True):
    ok: bool
    mode: str
    count: int
    items: list[dict[str, Any]]


class ConversationContextResult(Result, kw_only=True):
    ok: bool
    count: int
    total: int
    items: list[dict[str, Any]]
    latest_user_message: dict[str, Any] | None


class AnalysisCampaignResult(Result, kw_only=True):
    ok: bool
    campaign_id: str
    title: str
    goal: str
    active_idea_id: str | None
    parent_run_id: str | None
    parent_branch: str
    parent_sha: str
    parent_worktree_root: str | None
    slices: list[dict[str, Any]]
    next_pending_slice_id: str | None
    pending_slice_count: int
    completed_slice_count: int
    campaign_complete: bool
    is_active: bool
    path: str


class GlobalStatusResult(Result, kw_only=True):
    ok: bool
    detail: str
    locale: str
    global_status: dict[str, Any]


class ResearchMapResult(Result, kw_only=True):
    ok: bool
    detail: str
    locale: str
    research_map_status: dict[str, Any]


class GitResult(Result, kw_only=True):
    ok: bool
    action: str
    quest_id: str
    repo: str  # the repository acted on: the workspace's worktree or the quest root
    current_ref: str | None
    head: str | None
    result: dict[str, Any]
    seq: int | None  # the event that recorded a change; null for a read


class CompleteQuestResult(Result, kw_only=True):
    ok: bool
    status: str  # completed | already_completed
    quest_id: str
    interaction_id: str | None
    approval_message_id: str | None
    message: str
    seq: int | None
