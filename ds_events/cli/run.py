"""``ds run QUEST``: run the quest's turns in the foreground until it is idle."""

from __future__ import annotations

import asyncio

import click

from ds_events.home import Home
from ds_events.services import quest as quest_service

from .common import cli, emit_json, json_option, open_quest, out, pass_home

__all__ = ["run"]


@cli.command()
@click.argument("quest_id")
@click.option("--runner", "-r", default=None, help="codex | claude | acp | scripted (default: the config's runner.name).")
@click.option("--model", "-m", default=None, help="The model the agent uses (default: runner.model, else the agent's own).")
@click.option("--message", "text", default=None, help="Queue this user message first.")
@click.option("--trajectory", type=click.Path(dir_okay=False), default=None, help="The scripted runner's trajectory file.")
@click.option("--max-turns", type=click.IntRange(min=1), default=None, help="Stop after this many turns.")
@json_option
@pass_home
def run(
    home: Home, quest_id: str, runner: str | None, model: str | None, text: str | None, trajectory: str | None,
    max_turns: int | None, as_json: bool,
) -> None:  # fmt: skip
    """Run turns until the quest is idle: nothing queued, or paused, stopped, completed.

    Example: ds run tok-abl --message "start with a baseline"
    """
    from ds_events.runners import scheduler_for

    quest = open_quest(home, quest_id, actor="scheduler")
    scheduler = scheduler_for(quest, runner=runner, model=model, trajectory=trajectory)
    if text is not None:
        quest_service.post_message(quest, quest_service.PostMessage(text=text), source="cli")
    finished = asyncio.run(scheduler.run_until_idle(max_turns=max_turns))
    state = quest.state("turns")
    rows = [state.turns[f.run_id] for f in finished if f.run_id in state.turns]
    if as_json:
        emit_json([{"run_id": r.run_id, "skill": r.skill, "outcome": r.outcome, "reason": r.reason,
                    "attempt": r.attempt, "duration_ms": r.duration_ms, "messages": r.messages,
                    "tool_calls": r.tool_calls} for r in rows])  # fmt: skip
        return
    for r in rows:
        why = f" ({r.reason})" if r.reason else ""
        out(f"{r.run_id}  {r.skill:<18} {r.outcome}{why}  {r.tool_calls} tool calls, {r.duration_ms / 1000:.1f} s")
    out(f"{len(rows)} turn(s); quest is {quest.state('status').status}, nothing queued" if rows else "nothing to run")
