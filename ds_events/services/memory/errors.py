"""The memory domain's error codes: what each one tells the caller, and its HTTP status.

:data:`CODES` lists the codes of the memory services and their low helpers
(``ds_events/memory``). Codes they share with other areas are catalogued once, elsewhere:
the command vocabulary's (``unknown_argument``, ``invalid_argument``, ``invalid_kind``,
``invalid_limit``, ...) in :data:`ds_events.services.commands.CODES`, the core's
(``missing_title``, ``invalid_title``, ``invalid_path``, ``path_outside_root``) in
:data:`ds_events.errors.CODES`.
:data:`STATUSES` lists the answers of a write that wrote nothing: they are not raised but
returned (``ok: false`` with the status), so the caller can decide what to do next.
"""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES", "STATUSES"]

CODES = catalogue(
    # -- NotFound (404) ---------------------------------------------------------------
    ErrorCode("unknown_card", 404, "No card (or record mem-NNN) with that id in the memory searched, or a card path the log "
              "never wrote: search or list_recent finds ids, `ds memory audit` lists untracked files."),
    # -- Conflict (409): well formed, but the card's state refuses it -----------------
    ErrorCode("already_superseded", 409, "The card named by supersedes was already replaced (superseded_by names by what): "
              "supersede that one instead."),
    ErrorCode("already_promoted", 409, "The quest card already has a global copy (global_card_id names it)."),
    ErrorCode("card_superseded", 409, "The card was superseded: promote the card that replaced it."),
    ErrorCode("hand_edited", 409, "The card's file was edited by hand and the change would overwrite it: take the edit in "
              "first with `ds memory import`."),
    # -- Invalid (400): the request itself ---------------------------------------------
    ErrorCode("invalid_arguments", 400, "Give exactly one of card_id or path."),
    ErrorCode("invalid_scope", 400, "Not a scope this call takes: quest or global (and both, to read)."),
    ErrorCode("kind_mismatch", 400, "A card supersedes only a card of its own kind."),
    ErrorCode("not_a_quest_card", 400, "Only this quest's own cards are promoted to global memory."),
    ErrorCode("read_only", 400, "Another quest's memory (seen under memory.shared_across_quests) is read-only here."),
    ErrorCode("invalid_body", 400, "A card's body is a string."),
    ErrorCode("body_too_long", 400, "A body is at most 200,000 characters: split the card."),
    ErrorCode("invalid_tags", 400, "Tags are a list of at most 32 strings of at most 64 characters, or one comma-separated string."),
    ErrorCode("invalid_metadata", 400, "Metadata is a JSON object of at most 50 kB that does not set the card's own fields "
              "(keys names them)."),
    ErrorCode("invalid_markdown", 400, "A card's markdown has YAML frontmatter, a mapping, behind a line-anchored --- fence."),
    ErrorCode("invalid_record_type", 400, "Not a record type: mistake_fix, pipeline_constraint, working_solution or "
              "methodology_note."),
    ErrorCode("missing_session_id", 400, "A record names the agent session that learned it (session_id)."),
    ErrorCode("empty_query", 400, "A search needs a non-empty query."),
    ErrorCode("invalid_config_keys", 400, "Guarded config keys are non-empty strings without spaces, at most 64 characters."),
    ErrorCode("invalid_stage", 400, "Not a stage the memory plan knows: scout, baseline, idea, experiment, analysis-campaign, "
              "write, finalize or decision."),
    ErrorCode("path_outside_memory", 400, "The path is not a card file (memory/<kind>/<id>.md) of the quest or of global memory."),
    ErrorCode("invalid_card_file", 400, "A card file to take in is not UTF-8, does not parse, or vanished while read: fix or "
              "remove it (files lists each; nothing was imported)."),
    ErrorCode("id_mismatch", 400, "A card file's frontmatter id is not the card its file is."),
    # -- the search index (the daemon answers 400; nothing was written) --------------
    ErrorCode("index_busy", 400, "The search index stayed locked by another process for a minute: try again."),
    ErrorCode("index_unavailable", 400, "The search index failed or kept being replaced under the call; the next call reopens "
              "it and refills it from the log: try again."),
)

STATUSES = catalogue(
    ErrorCode("duplicate_candidates", 200, "A write answered ok=false and wrote nothing: active cards of that kind look like "
              "the same lesson (candidates lists them). Re-call with supersedes=<id> to replace one, or force=true to keep both."),
    ErrorCode("config_polluted", 200, "A write answered ok=false and wrote nothing: the title or summary bakes in key=value "
              "settings of guarded config keys (settings lists them): state the lesson without them."),
)
