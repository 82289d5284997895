"""The research domain's error codes: what each means to whoever got it, and its HTTP
status (400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``). Every code raised in
``ds_events/services/research/`` is here, and every code here is raised there. Codes
the quest domain defines (``invalid_anchor``, ``invalid_limit``) keep its meaning.

Codes raised by the helpers research calls (``ds_events.artifacts.validate``,
``ds_events.artifacts.git``, the artifacts domain's checkpoint and branch commands)
are theirs and catalogued with them."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue
from ds_events.services.quest.errors import CODES as QUEST_CODES

__all__ = ["CODES"]

CODES = catalogue(
    # submit_idea
    ErrorCode("invalid_mode", 400, "mode is not one the call takes (submit_idea: create | revise; "
                                   "read_quest_documents: excerpt | full)."),
    ErrorCode("invalid_submission_mode", 400, "submission_mode is line or candidate (a revision takes line)."),
    ErrorCode("invalid_lineage_intent", 400, "lineage_intent is continue_line or branch_alternative (or an alias of one)."),
    ErrorCode("lineage_not_revisable", 400, "A revision keeps the idea's lineage: omit lineage_intent, or create a new idea."),
    ErrorCode("invalid_foundation_ref", 400, "foundation_ref's kind is current_head, baseline, idea, run or branch, "
                                             "and idea, run and branch need a ref."),
    ErrorCode("unknown_foundation", 404, "The idea branch, main experiment or branch that foundation_ref names does not exist."),
    ErrorCode("baseline_gate_closed", 409, "Ideas and branch activations wait for a confirmed or waived baseline."),
    ErrorCode("idea_exists", 409, "That idea already has its branch: revise it, or submit under another idea_id."),
    ErrorCode("unknown_idea", 404, "No such idea in the quest (or no active idea to revise)."),
    ErrorCode("invalid_field", 400, "A list argument has more items than it takes (the message names it)."),
    # activate_branch (and the git tool's checkout)
    ErrorCode("campaign_active", 409, "An analysis campaign is open: record its remaining slices before moving the workspace."),
    ErrorCode("unknown_branch", 404, "No such local branch in the quest repository."),
    ErrorCode("idea_has_no_branch", 409, "The idea is a candidate without a branch: submit it with mode=create first."),
    ErrorCode("unknown_run", 404, "No such main experiment in the quest."),
    ErrorCode("missing_fields", 400, "The call needs an argument it was not given (the error lists them in missing)."),
    QUEST_CODES["invalid_anchor"],
    ErrorCode("worktree_missing", 404, "The branch has no worktree and create_worktree_if_missing is false."),
    ErrorCode("worktree_exists", 409, "Something is in the way where the branch's worktree goes, or git could not check it out."),
    # complete_quest
    ErrorCode("approval_required", 409, "Completing the quest needs the user's explicit approval: ask with a blocking "
                                        "decision_request whose reply_schema names quest_completion_approval."),
    ErrorCode("waiting_for_user", 409, "The completion request has no answer yet."),
    ErrorCode("approval_not_explicit", 409, "The user's answer to the completion request is not an explicit yes."),
    # the recovery queries
    ErrorCode("invalid_detail", 400, "detail is not one the query takes (the error lists them in allowed)."),
    QUEST_CODES["invalid_limit"],
    ErrorCode("unknown_document", 400, "Not a quest document: brief, plan, status, summary or active_user_requirements."),
    ErrorCode("no_active_campaign", 404, "No analysis campaign is open."),
    ErrorCode("unknown_campaign", 404, "No such analysis campaign in the quest."),
    # the git tool
    ErrorCode("invalid_git_action", 400, "action is status, commit, branch, checkout, log, show, diff or graph."),
    ErrorCode("unknown_ref", 404, "Not a branch or commit of the quest repository."),
    ErrorCode("invalid_branch_name", 400, "A new branch is named <kind>/<name>, with kind idea, run, analysis or paper."),
    ErrorCode("unknown_start_point", 404, "create_from is not a branch or commit of the quest repository."),
    ErrorCode("checkout_needs_branch", 400, "checkout works on branches (the workspace never detaches): read a commit with "
                                            "show or diff."),
)  # fmt: skip
