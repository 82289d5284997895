"""Every error code the interactions domain raises: the mailbox, replies, the delivery
forms and the connectors (``tests/interactions/test_errors.py`` holds this catalogue and
the raise sites equal, and has a case for each code).

The status is what the daemon answers: 400 for a refused argument (``Invalid``), 404
for something named that does not exist (``NotFound``), 409 for a request that clashes
with the quest's state (``Conflict``). The command vocabulary's own codes
(``unknown_argument``, ``missing_argument``, ``invalid_argument``) are catalogued with
it, not here.
"""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # -- an interaction (checks.check_interact, check_wait; mailbox.interact)
    ErrorCode("empty_message", 400, "The message (or a reply's text) is empty or only whitespace."),
    ErrorCode("message_too_long", 400, "The message (or a reply's text) is longer than 20000 characters."),
    ErrorCode("invalid_reply_mode", 400, "reply_mode is unknown, or does not fit the kind (a progress update cannot "
              "block; a decision_request must take replies)."),
    ErrorCode("missing_options", 400, "A decision_request needs 2-12 options (or a reply_schema naming a decision_type)."),
    ErrorCode("options_not_allowed", 400, "options were given on a kind other than decision_request."),
    ErrorCode("invalid_options", 400, "options are not 2-12 {id, label} objects with distinct ids and known keys."),
    ErrorCode("invalid_reply_schema", 400, "reply_schema is neither {\"decision_type\": ...} nor a small JSON Schema object."),
    ErrorCode("invalid_allow_free_text", 400, "allow_free_text=false leaves nothing to answer with: give options or a "
              "reply_schema with properties, on an interaction that takes replies."),
    ErrorCode("invalid_dedupe_key", 400, "dedupe_key is empty or longer than 200 characters."),
    ErrorCode("invalid_wait", 400, "wait_timeout_seconds is not from 0 to 300, or was given on a request that does not block."),
    ErrorCode("unknown_interaction", 404, "No interaction (or user message) of this quest has that id."),
    ErrorCode("interaction_exists", 409, "The interaction_id asked for is already used: choose another or leave it null."),
    # -- the delivery arguments (forms)
    ErrorCode("invalid_summary_preview", 400, "summary_preview is empty or longer than 500 characters."),
    ErrorCode("invalid_importance", 400, "importance is not one of low, info, normal, warning, high, critical."),
    ErrorCode("invalid_response_phase", 400, "response_phase is not one of ack, update, final, control, push."),
    ErrorCode("invalid_attachments", 400, "An attachment is not an object with exactly one of path (inside the quest or a "
              "worktree) and an http(s) url, with string fields, or there are more than 20."),
    ErrorCode("attachment_not_found", 400, "An attachment's path is not a file of the quest (or of one of its worktrees)."),
    ErrorCode("invalid_surface_actions", 400, "A surface action does not name its action in type (or command), is larger "
              "than 8 KiB, or there are more than 10."),
    ErrorCode("invalid_connector_hints", 400, "connector_hints is not {\"<connector>\": {...}} with distinct names, within 8 KiB."),
    ErrorCode("invalid_expects_reply", 400, "expects_reply contradicts the explicit reply_mode."),
    ErrorCode("invalid_min_interval", 400, "min_interval_seconds is not more than 0 and at most a day, or the kind is not progress."),
    ErrorCode("invalid_interaction_id", 400, "interaction_id is not 1-128 letters, digits, '_', '.', ':' or '-'."),
    # -- a reply (checks.check_reply_text, check_reply)
    ErrorCode("reply_not_expected", 409, "The interaction takes no replies (reply_mode none)."),
    ErrorCode("already_answered", 409, "The blocking request was already answered."),
    ErrorCode("request_superseded", 409, "The request was replaced by a newer blocking request: answer that one."),
    ErrorCode("unknown_option", 400, "option_id is not one of the request's options."),
    ErrorCode("free_text_not_allowed", 400, "The request takes no free-text reply: choose an option or send data."),
    ErrorCode("reply_schema_mismatch", 400, "The reply's data does not match the request's reply_schema."),
    # -- bindings and routing (connectors)
    ErrorCode("unknown_connector", 400, "The connector is not webhook (local is always bound)."),
    ErrorCode("invalid_url", 400, "A webhook target is not an http(s) URL with a host."),
    ErrorCode("invalid_binding_id", 400, "binding_id is not 1-64 lowercase letters, digits, '-' or '_' (or is 'local')."),
    ErrorCode("invalid_binding_settings", 400, "A binding setting is unknown or out of its bounds (max_attempts 1-10, "
              "backoff_seconds 0-60, timeout_seconds 0.05-120, token_env an environment variable's name)."),
    ErrorCode("binding_exists", 409, "That target (or binding id) is already bound: unbind it first."),
    ErrorCode("unknown_binding", 404, "No active binding has that id."),
    ErrorCode("cannot_unbind_local", 409, "The local binding (the quest's own CLI and web view) cannot be removed."),
    ErrorCode("invalid_policy", 400, "The routing policy is not one of fanout_all, primary_only, primary_plus_local."),
)  # fmt: skip
