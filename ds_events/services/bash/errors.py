"""Every error code the bash_exec domain raises: its operations, the one-tool form, and
the checks and the monitor's start in ``ds_events.bash`` (``tests/bash_exec/test_bad_input.py``
holds this catalogue and the raise sites equal).

The status is what the daemon answers: 400 for a refused argument (``Invalid``), 404
for a session that does not exist (``NotFound``). ``start_failed`` is the one refusal
of another kind (the monitor could not start the command); the daemon answers it 400
too, as every other :class:`~ds_events.errors.ServiceError`.
"""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # -- a start (starting, ds_events.bash.checks, ds_events.bash.spawn)
    ErrorCode("empty_command", 400, "command is empty: pass the shell command to run."),
    ErrorCode("invalid_command", 400, "command is longer than 100000 characters or holds a NUL byte."),
    ErrorCode("invalid_timeout", 400, "A timeout (or wait) is not a finite number of seconds, or is negative "
              "(zero too, for timeout_seconds)."),
    ErrorCode("invalid_workdir", 400, "workdir cannot be used as a directory path (not a string, too long, a loop "
              "of symbolic links, not encodable)."),
    ErrorCode("workdir_outside_quest", 400, "workdir uses '..' or lies outside the quest and its git worktrees."),
    ErrorCode("workdir_not_found", 400, "workdir does not exist."),
    ErrorCode("workdir_not_directory", 400, "workdir is not a directory."),
    ErrorCode("workdir_not_allowed", 400, "workdir is inside the .git or .ds area of the quest (or of a worktree)."),
    ErrorCode("invalid_env", 400, "env is not an object of at most 200 NAME: value pairs."),
    ErrorCode("invalid_env_name", 400, "An env name is not letters, digits and '_' (not starting with a digit), "
              "or is one bash_exec sets itself (DS_QUEST_ID, DS_QUEST_ROOT, DS_BASH_SESSION_ID)."),
    ErrorCode("invalid_env_value", 400, "An env value is not a string (or number), or holds a NUL byte."),
    ErrorCode("invalid_idempotency_key", 400, "idempotency_key is not 1-200 printable characters."),
    ErrorCode("idempotency_key_conflict", 409, "idempotency_key names a session of this quest started with another "
              "command: use a new key for a new command (the existing session is in the error's session_id)."),
    ErrorCode("start_failed", 400, "The monitor could not start the command (its monitor.log says why); nothing runs."),
    # -- a session named (sessions.session_of, the one-tool form's latest session)
    ErrorCode("missing_id", 400, "The mode works on one session: pass its id."),
    ErrorCode("unknown_session", 404, "No session of this quest has that id."),
    ErrorCode("no_sessions", 404, "The quest has no session yet to be the latest one: start one with a command."),
    # -- reading output (queries.check_window, ds_events.bash.checks, the one-tool form)
    ErrorCode("invalid_window", 400, "A line count is not 1-2000, a line seq is negative, or start is below 1."),
    ErrorCode("conflicting_window", 400, "The read window mixes forms that exclude each other (tail with "
              "after_seq/before_seq/tail_limit, tail_limit with limit, start with a seq window)."),
    ErrorCode("empty_window", 400, "before_seq is not greater than after_seq + 1: no line fits between them."),
    ErrorCode("invalid_order", 400, "order is not asc or desc."),
    # -- a kill (ending)
    ErrorCode("invalid_reason", 400, "A kill's reason is not one line of at most 200 characters."),
    # -- the one-tool form's modes (tool)
    ErrorCode("invalid_mode", 400, "mode is not one of detach, await, create, read, kill, list, history."),
    ErrorCode("unexpected_id", 400, "A mode that starts a new session was given an id."),
    ErrorCode("unexpected_command", 400, "A mode that works on an existing session was given a command."),
    ErrorCode("unexpected_argument", 400, "An argument the mode does not use was given (never silently ignored)."),
)  # fmt: skip
