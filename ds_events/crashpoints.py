"""Crash points: named places where a test can have the process kill itself (kill -9).

``crashpoint("turn.claim.before_append")`` does nothing unless the environment variable
``DS_CRASH_AT`` names that point, exactly, or as ``name:N`` for the Nth time this
process reaches it. Then the process sends itself SIGKILL: no ``finally``, no atexit, no
buffered write flushed — what a power cut or an OOM kill does to it. The crash-matrix
test (``tests/runtime/test_crash_matrix.py``) runs a real quest through every point in
:data:`POINTS` and checks what a restarted host makes of it.

The variable is read once per process (the first call), so an unset hook costs one
comparison. Every process inherits it: the host (``ds run``, ``ds serve``), the agent,
the MCP servers the agent starts and the bash monitors they start. Each point names the
process that reaches it (``host.`` / ``mcp.``), so the one that dies is never in doubt.
``DS_CRASH_MARK`` (a file path), when set, gets one line ``<name> <pid>`` appended just
before the kill: how a test tells that the point was reached in a process whose death it
cannot see (an MCP server, whose host lives on).

:func:`crashpoint`'s ``when`` keeps a conditional point on one line of the caller
(``crashpoint("host.retry.after_append", when=retrying)``).
"""

from __future__ import annotations

import os
import signal

__all__ = ["crashpoint", "POINTS", "ENV", "MARK_ENV"]

ENV = "DS_CRASH_AT"
MARK_ENV = "DS_CRASH_MARK"

# Every point, with where it is. ``host.`` points are reached by the process hosting the
# turn (``ds run``, ``ds serve``); ``mcp.`` points by the MCP server the agent started.
POINTS: dict[str, str] = {
    # claim_turn: the prompt, then turn_started + the mailbox delivery in one batch
    "host.claim.before_prompt_write": "the turn's prompt is built, its file not written yet",
    "host.claim.after_prompt_write": "the prompt file is written, nothing appended yet",
    "host.claim.before_append": "under the lock, turn_started and the delivery about to be appended",
    "host.claim.after_append": "turn_started and mailbox.delivered are in the log, no runner yet",
    # the runner: the agent's process, its prompt
    "host.runner.before_spawn": "the turn is claimed, the agent process not started",
    "host.runner.before_process_event": "the agent runs (own process group), RunnerProcessStarted not appended",
    "host.runner.after_process_event": "RunnerProcessStarted is in the log, the prompt not written to the agent",
    "host.runner.after_prompt_fed": "the agent has its prompt on stdin (closed)",
    # the recorder: one pair per kind of event parsed from the agent's stream
    "host.recorder.agent_message.before_append": "the agent said something, not appended yet",
    "host.recorder.agent_message.after_append": "an agent message is in the log",
    "host.recorder.reasoning.after_append": "the agent's reasoning is in the log",
    "host.recorder.tool_call.before_append": "the agent announced a tool call, not appended yet",
    "host.recorder.tool_call.after_append": "mid tool call: its start is in the log, the MCP server runs it",
    "host.recorder.tool_result.before_append": "the agent reported a tool result, not appended yet",
    "host.recorder.tool_result.after_append": "a tool result is in the log",
    # the scheduler around the end of a turn
    "host.scheduler.before_finish": "the agent has exited, the turn's end not recorded yet",
    "host.finish.before_append": "under the lock, turn_finished (and a retry) about to be appended",
    "host.finish.retry_built": "a retry is due: TurnRetryScheduled built, the batch not appended",
    "host.finish.after_append": "turn_finished is in the log",
    "host.finish.retry_after_append": "turn_finished and TurnRetryScheduled are in the log",
    "host.scheduler.after_finish": "the end is recorded, the scheduler not yet on to the next turn",
    # recovery of a turn whose host died
    "host.recover.before_kill": "a dead host's turn found, its agent group not signalled yet",
    "host.recover.before_append": "under the lock, the interrupted record about to be appended",
    "host.recover.after_append": "the dead host's turn is recorded interrupted",
    # pause / stop of a running turn
    "host.stop.before_interrupt": "a pause or stop is seen, the runner not interrupted yet",
    "host.stop.before_signal": "the agent's group about to be signalled",
    "host.stop.after_signal": "the agent's group is signalled (TERM, KILL after the grace)",
    # the bash_exec MCP server starting a session (the host sees the tool call fail)
    "mcp.bash.before_spawn": "a bash session is checked, its monitor not spawned",
    "mcp.bash.before_started_event": "the monitor runs the command (held), bash.session_started not appended",
    "mcp.bash.after_started_event": "bash.session_started is in the log, the monitor not told go",
    "mcp.bash.after_go": "the monitor is told go: the command runs",
    # the artifact MCP server's checkpoint commit
    "mcp.checkpoint.before_commit": "under the lock, the checkpoint's commit not made yet",
    "mcp.checkpoint.after_commit": "the commit is made (branch moved), git.checkpointed not appended",
    "mcp.checkpoint.after_append": "the commit and git.checkpointed are both recorded",
    # the artifact MCP server delivering the mailbox through artifact.interact
    "mcp.interact.before_append": "under the lock, the interaction and the mailbox delivery about to be appended",
    "mcp.interact.after_append": "the interaction and the delivery are in the log, not returned to the agent",
}

_target: tuple[str, int] | None = None
_loaded = False
_counts: dict[str, int] = {}


def crashpoint(name: str, *, when: bool = True) -> None:
    """Kill this process with SIGKILL if ``DS_CRASH_AT`` names ``name`` (and this is
    the Nth time it is reached, for ``name:N``); otherwise return at once."""
    global _target, _loaded
    if not _loaded:
        _target, _loaded = _parse(os.environ.get(ENV, "")), True
    if _target is None or not when or _target[0] != name:
        return
    _counts[name] = count = _counts.get(name, 0) + 1
    if count != _target[1]:
        return
    mark = os.environ.get(MARK_ENV)
    if mark:
        fd = os.open(mark, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{name} {os.getpid()}\n".encode())
        os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def _parse(value: str) -> tuple[str, int] | None:
    name, _, nth = value.strip().partition(":")
    if not name:
        return None
    return name, int(nth) if nth.isdigit() and int(nth) > 0 else 1
