"""``ds acp [--quest Q]``: an Agent Client Protocol agent over stdio for editors."""

from __future__ import annotations

import click

from ds_events.home import Home

from .common import TurnOptions, cli, pass_home

__all__ = ["acp"]


@cli.command()
@click.option("--quest", "quest_id", default=None, help="Attach every new session to this quest (created if missing).")
@click.option(
    "--quiet-seconds",
    type=click.FloatRange(min=0.05),
    default=None,
    help="A prompt's turn ends after this long with no new event (default: 2; $DS_ACP_QUIET_SECONDS).",
)
@click.option("--runner", "-r", default=None, help="The agent that runs the turns (default: config runner.name).")
@click.option("--model", "-m", default=None, help="The model the agent uses (default: config runner.model).")
@click.option("--trajectory", type=click.Path(dir_okay=False), default=None, help="The scripted runner's trajectory file.")
@click.option("--no-turns", is_flag=True, help="Run no turns here (`ds serve` hosts them).")
@pass_home
def acp(
    home: Home, quest_id: str | None, quiet_seconds: float | None, runner: str | None, model: str | None,
    trajectory: str | None, no_turns: bool,
) -> None:  # fmt: skip
    """Serve quests to an ACP client (an editor) over stdin/stdout.

    Example (in an editor's agent settings): ds acp --quest tok-abl
    """
    import asyncio
    import os

    from handlers.acp.agent import DEFAULT_QUIET_SECONDS, serve  # the SDK loads only here

    if quiet_seconds is None:
        quiet_seconds = float(os.environ.get("DS_ACP_QUIET_SECONDS", DEFAULT_QUIET_SECONDS))
    turns = None if no_turns else TurnOptions(runner=runner, model=model, trajectory=trajectory)
    asyncio.run(serve(home, quest_id=quest_id, quiet_seconds=quiet_seconds, turns=turns))
