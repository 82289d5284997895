"""The research domain's error codes: what each means to whoever got it, and its HTTP
status (400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``).

Every code raised in ``ds_events/services/research/`` is here unless a domain below
research raises it too and holds it (``invalid_anchor`` the quest's; the branch and
worktree codes the artifacts domain's, whose helpers research calls). One code, one
entry: ``tests/test_error_catalogue.py`` holds it so."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # submit_idea
    ErrorCode("invalid_submission_mode", 400, "submission_mode is line or candidate (a revision takes line)."),
    ErrorCode("invalid_lineage_intent", 400, "lineage_intent is continue_line or branch_alternative (or an alias of one)."),
    ErrorCode("lineage_not_revisable", 400, "A revision keeps the idea's lineage: omit lineage_intent, or create a new idea."),
    ErrorCode("invalid_foundation_ref", 400, "foundation_ref's kind is current_head, baseline, idea, run or branch, "
                                             "and idea, run and branch need a ref."),
    ErrorCode("unknown_foundation", 404, "The idea branch, main experiment or branch that foundation_ref names does not exist."),
    ErrorCode("baseline_gate_closed", 409, "Ideas and branch activations wait for a confirmed or waived baseline."),
    ErrorCode("idea_exists", 409, "That idea already has its branch: revise it, or submit under another idea_id."),
    ErrorCode("unknown_idea", 404, "No such idea in the quest (or no active idea to revise)."),
    # activate_branch (and the git tool's checkout)
    ErrorCode("campaign_active", 409, "An analysis campaign is open: record its remaining slices before moving the workspace."),
    ErrorCode("idea_has_no_branch", 409, "The idea is a candidate without a branch: submit it with mode=create first."),
    # complete_quest
    ErrorCode("approval_required", 409, "Completing the quest needs the user's explicit approval: ask with a blocking "
                                        "decision_request whose reply_schema names quest_completion_approval."),
    ErrorCode("waiting_for_user", 409, "The completion request has no answer yet."),
    ErrorCode("approval_not_explicit", 409, "The user's answer to the completion request is not an explicit yes."),
    # the recovery queries
    ErrorCode("invalid_detail", 400, "detail is not one the query takes (the error lists them in allowed)."),
    ErrorCode("unknown_document", 400, "Not a quest document: brief, plan, status, summary or active_user_requirements."),
    ErrorCode("no_active_campaign", 404, "No analysis campaign is open."),
    # the git tool
    ErrorCode("invalid_git_action", 400, "action is status, commit, branch, checkout, log, show, diff or graph."),
    ErrorCode("unknown_ref", 404, "Not a branch or commit of the quest repository."),
    ErrorCode("checkout_needs_branch", 400, "checkout works on branches (the workspace never detaches): read a commit with "
                                            "show or diff."),
)  # fmt: skip
