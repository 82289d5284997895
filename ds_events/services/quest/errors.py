"""The quest domain's error codes: what each means to whoever got it, and its HTTP status
(400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``).

Every code raised in ``ds_events/services/quest/`` is here, but for the shared ones
(``invalid_limit``) and the message codes the interactions domain holds
(``empty_message``, ``message_too_long``). The quest domain is the lowest, so a code it
shares with a domain above it (``invalid_anchor``, ``invalid_action``, ``unknown_runner``)
is catalogued here, in words that fit every raise. One code, one entry:
``tests/test_error_catalogue.py`` holds it so."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # lifecycle: messages, control, stage, completion, runner
    ErrorCode("invalid_role", 400, "A message's role is user, assistant or system."),
    ErrorCode("invalid_action", 400, "Not an action the call takes (a control: pause, stop or resume; a decision: "
                                     "allowed lists them)."),
    ErrorCode("quest_completed", 409, "The quest is completed: it cannot be paused, stopped, resumed or completed again."),
    ErrorCode("invalid_anchor", 400, "Not one of the quest's stages (scout, baseline, idea, experiment, analysis-campaign, "
                                     "write, finalize, decision)."),
    ErrorCode("unknown_runner", 400, "Not a runner this installation can start: codex, claude, acp or scripted "
                                     "(or empty for the home's)."),
    ErrorCode("invalid_model", 400, "A model is a name without spaces, at most 200 characters."),
    # archive and delete
    ErrorCode("quest_archived", 409, "The quest is archived: it takes no message and runs no turn, and is archived "
                                     "already; `ds quest unarchive` (POST /api/quests/{id}/unarchive) takes it back."),
    ErrorCode("quest_not_archived", 409, "The quest is not archived: there is nothing to unarchive."),
    ErrorCode("turn_running", 409, "A turn of the quest is running (run_id): stop the quest first (ds control Q stop), "
                                   "then archive or delete it."),
    # read models: workflow, node traces, Canvas
    ErrorCode("unknown_node", 404, "No such node in the quest, or it left the view's window: list the nodes again."),
    ErrorCode("invalid_view", 400, "A Canvas view is branch, event or stage."),
)  # fmt: skip
