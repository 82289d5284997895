"""The quest domain's error codes: what each means to whoever got it, and its HTTP status
(400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``). Every code raised in
``ds_events/services/quest/`` is here, and every code here is raised there."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # lifecycle: messages, control, stage, completion, runner
    ErrorCode("empty_message", 400, "A message needs some text: send one that is not blank."),
    ErrorCode("message_too_long", 400, "A message is at most 100,000 characters: shorten it or attach a file."),
    ErrorCode("invalid_role", 400, "A message's role is user, assistant or system."),
    ErrorCode("invalid_action", 400, "A control action is pause, stop or resume."),
    ErrorCode("quest_completed", 409, "The quest is completed: it cannot be paused, stopped, resumed or completed again."),
    ErrorCode("invalid_anchor", 400, "Not one of the quest's stages (scout, baseline, idea, experiment, analysis-campaign, "
                                     "write, finalize, decision)."),
    ErrorCode("unknown_runner", 400, "Not a runner this build knows: codex, claude, acp or scripted (or empty for the home's)."),
    ErrorCode("invalid_model", 400, "A model is a name without spaces, at most 200 characters."),
    # read models: workflow, node traces, Canvas
    ErrorCode("invalid_limit", 400, "A limit outside the range the query takes (the message says the range)."),
    ErrorCode("unknown_node", 404, "No such node in the quest, or it left the view's window: list the nodes again."),
    ErrorCode("invalid_view", 400, "A Canvas view is branch, event or stage."),
)  # fmt: skip
