"""``ds run QUEST``: run the quest's turns in the foreground until it is idle, and show
them as they happen.

The live view follows the quest's log from the seq ``ds run`` started at, in a task
beside the scheduler (this process hosts the turn; the agent's MCP servers and shell
monitors append from their own processes), so it shows exactly what the log holds, in
the text form of ``ds events tail`` (:mod:`ds_events.cli.eventtext`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Coroutine
from typing import Any

import click

from ds_events.events import encode
from ds_events.events.runner import TurnFinished
from ds_events.home import Home, Quest
from ds_events.services import quest as quest_service
from ds_events.store import EventStore

from .common import cli, open_quest, pass_home
from .eventtext import EventPrinter

__all__ = ["run", "idle_sentence"]


@cli.command()
@click.argument("quest_id")
@click.option("--runner", "-r", default=None, help="codex | claude | acp | scripted (default: the config's runner.name).")
@click.option("--model", "-m", default=None, help="The model the agent uses (default: runner.model, else the agent's own).")
@click.option("--message", "text", default=None, help="Queue this user message first.")
@click.option("--trajectory", type=click.Path(dir_okay=False), default=None, help="The scripted runner's trajectory file.")
@click.option("--max-turns", type=click.IntRange(min=1), default=None, help="Stop after this many turns.")
@click.option("--quiet", "-q", is_flag=True, help="Only one line per turn (and why the run ended), not every event.")
@click.option("--json", "as_json", is_flag=True,
              help="NDJSON: every event appended during the run, one per line exactly as stored (as `ds events tail "
                   "--format raw`), then one summary object: {\"type\": \"run.summary\", \"turns\": [{run_id, skill, "
                   "outcome, reason, attempt, duration_ms, messages, tool_calls}], \"status\", \"idle\": {\"reason\", "
                   "\"message\"} or null}. The summary is the only line without a seq.")  # fmt: skip
@pass_home
def run(
    home: Home, quest_id: str, runner: str | None, model: str | None, text: str | None, trajectory: str | None,
    max_turns: int | None, quiet: bool, as_json: bool,
) -> None:  # fmt: skip
    """Run turns until the quest is idle: nothing queued, or paused, stopped, completed,
    archived. Prints each event as the log records it (the text form of `ds events
    tail`), then one line per turn. On a terminal a shell job's progress is one line
    updated in place; in a pipe or file each progress update is a line of its own.
    When nothing runs, says why and what would start it.

    Example: ds run tok-abl --message "start with a baseline"
    """
    from ds_events.runners import scheduler_for

    if quiet and as_json:
        raise click.UsageError("--quiet and --json do not go together: choose one")
    quest = open_quest(home, quest_id, actor="scheduler")
    scheduler = scheduler_for(quest, runner=runner, model=model, trajectory=trajectory)
    printer = EventPrinter(sys.stdout, raw=as_json)
    start = quest.log.last_seq  # the live view shows what this run adds, the message first
    if text is not None:
        quest_service.post_message(quest, quest_service.PostMessage(text=text), source="cli")
    finished = asyncio.run(_run_watched(scheduler.run_until_idle(max_turns=max_turns), quest.log, start,
                                        None if quiet else printer))  # fmt: skip
    state = quest.state("turns")
    rows = [state.turns[f.run_id] for f in finished if f.run_id in state.turns]
    reason, sentence = _why_idle(quest, max_turns=max_turns)
    if as_json:
        summary = {
            "type": "run.summary",
            "turns": [{"run_id": r.run_id, "skill": r.skill, "outcome": r.outcome, "reason": r.reason,
                       "attempt": r.attempt, "duration_ms": r.duration_ms, "messages": r.messages,
                       "tool_calls": r.tool_calls} for r in rows],
            "status": quest.state("status").status,
            "idle": {"reason": reason, "message": sentence} if reason else None,
        }
        printer.text(json.dumps(summary, ensure_ascii=False))
        return
    for r in rows:
        why = f" ({r.reason})" if r.reason else ""
        printer.text(f"{r.run_id}  {r.skill:<18} {r.outcome}{why}  {r.tool_calls} tool calls, {r.duration_ms / 1000:.1f} s")
    if rows:
        printer.text(f"{len(rows)} turn(s); {sentence}")
    else:
        printer.text(f"nothing to run: {sentence}")


def idle_sentence(quest_id: str, reason: str) -> str:
    """Why a quest runs no turn (``reason``: the scheduler's idle reason) and what would
    start one, as one sentence."""
    if reason == "paused":
        return f"the quest is paused — ds control {quest_id} resume"
    if reason == "stopped":
        return f"the quest is stopped — ds control {quest_id} resume"
    if reason == "completed":
        return "the quest is completed — its record is final; start another with ds quest new"
    if reason == "archived":
        return f"the quest is archived — ds quest unarchive {quest_id}"
    if reason == "new":
        return "the quest has no quest.created event yet — see ds verify " + quest_id
    return f'no message is queued — ds run {quest_id} --message "..." (or ds message {quest_id} "...")'


# -- private helpers ----------------------------------------------------------------------

_STATUS_REASONS = ("paused", "stopped", "completed", "archived", "new")


async def _run_watched(
    work: Coroutine[Any, Any, list[TurnFinished]], log: EventStore, start: int, printer: EventPrinter | None
) -> list[TurnFinished]:
    """Await ``work`` (the scheduler) while a task beside it prints the log from ``start``;
    then stop the MCP listener its turns were served by, if any."""
    from ds_events.runners.base import close_mcp_host

    try:
        return await _print_while(work, log, start, printer)
    finally:
        await close_mcp_host()


async def _print_while(
    work: Coroutine[Any, Any, list[TurnFinished]], log: EventStore, start: int, printer: EventPrinter | None
) -> list[TurnFinished]:
    if printer is None:
        return await work
    printed = [start]
    watcher = asyncio.create_task(_watch(log, printed, printer))
    try:
        return await work
    finally:
        # Cancelled until it is done: on Python 3.11 a cancel that lands as the
        # follower's poll times out is swallowed by asyncio.wait_for, once.
        while not watcher.done():
            watcher.cancel()
            await asyncio.wait({watcher}, timeout=0.5)
        with contextlib.suppress(asyncio.CancelledError):
            watcher.result()
        # What the follower had not reached yet (a monitor's last lines, the turn's
        # end): read from the log itself, so nothing is left out.
        for _seq, line in log.iter_lines(after_seq=printed[0]):
            printer.line(line)
        printer.close()


async def _watch(log: EventStore, printed: list[int], printer: EventPrinter) -> None:
    async for event in log.follow(after_seq=printed[0]):
        printer.line(encode(event))
        printed[0] = event.seq


def _why_idle(quest: Quest, *, max_turns: int | None) -> tuple[str, str]:
    """(reason code, sentence) of why the run ended."""
    from ds_events.services.runtime.turns import next_action

    action = next_action(quest.state("status").status, quest.state("turns"), quest.state("interactions"),
                         archived=quest.state("status").archived)  # fmt: skip
    if action.kind == "idle":
        if quest.state("turns").held is not None and action.reason not in _STATUS_REASONS:
            # A failed turn waits for the user: the health summary says what failed and
            # what runs it again (not "no message is queued").
            return "failed", quest_service.quest_health(quest).summary
        code = action.reason if action.reason in _STATUS_REASONS else "nothing_queued"
        return code, idle_sentence(quest.id, code)
    if max_turns is not None:
        return "max_turns", f"stopped after --max-turns {max_turns}; the quest needs more ({action.reason}): ds run {quest.id}"
    return action.kind, action.reason
