"""The runtime's error codes: skills, turns and prompts, and the runners that drive agents.

:data:`CODES` lists every code the runtime's services and its runners
(``ds_events/runners``, adapters that refuse a runner they cannot build before a turn
starts) raise, with what it tells the caller and its HTTP status. ``unknown_runner``,
which the quest domain raises too (``quest set-runner``), is the quest domain's.
"""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # -- skills and prompts ----------------------------------------------------------
    ErrorCode("unknown_skill", 404, "No skill of that name (allowed lists the eight: scout, baseline, idea, experiment, "
              "analysis-campaign, write, finalize, decision)."),
    ErrorCode("skill_missing", 404, "A known skill whose SKILL.md is not where it was looked for (path)."),
    ErrorCode("invalid_skill", 400, "A SKILL.md that does not parse: UTF-8 text opening with YAML frontmatter behind --- "
              "lines that gives name (the skill's own), description and when_to_use."),
    ErrorCode("invalid_run_id", 400, "A run id is one path component (1-128 letters, digits, '.', '-' or '_', starting with a "
              "letter or digit) whose directory under .ds/runs is not a link out of the quest."),
    # -- turns -----------------------------------------------------------------------
    ErrorCode("unknown_turn", 409, "The quest's log has no turn with that run id."),
    ErrorCode("confirm_required", 400, "Deleting a quest needs a confirmation (ds quest delete --yes; confirm: true in "
                                       "the body or ?confirm=true): plan says what it would remove."),
    # -- runners ---------------------------------------------------------------------
    ErrorCode("runner_not_found", 400, "The runner's agent command is not installed or not executable: install it or set "
              "runner.commands.<runner> in config.yaml."),
    ErrorCode("runner_not_configured", 400, "The acp runner needs the agent's command line in runner.commands.acp."),
    ErrorCode("bad_trajectory", 400, "The scripted runner's trajectory is missing, unreadable, not YAML, or has a step that "
              "is not exactly one action (a call is namespace.tool; expect is ok, error or any)."),
)
