"""``ds acp [--quest Q]``: an Agent Client Protocol agent over stdio for editors."""

from __future__ import annotations

import click

from ds_events.home import Home

from .common import cli, pass_home

__all__ = ["acp"]


@cli.command()
@click.option("--quest", "quest_id", default=None, help="Attach every new session to this quest (created if missing).")
@click.option(
    "--quiet-seconds",
    type=click.FloatRange(min=0.05),
    default=None,
    help="A prompt's turn ends after this long with no new event (default: 2; $DS_ACP_QUIET_SECONDS).",
)
@pass_home
def acp(home: Home, quest_id: str | None, quiet_seconds: float | None) -> None:
    """Serve quests to an ACP client (an editor) over stdin/stdout.

    Example (in an editor's agent settings): ds acp --quest tok-abl
    """
    import asyncio
    import os

    from handlers.acp.agent import DEFAULT_QUIET_SECONDS, serve  # the SDK loads only here

    if quiet_seconds is None:
        quiet_seconds = float(os.environ.get("DS_ACP_QUIET_SECONDS", DEFAULT_QUIET_SECONDS))
    asyncio.run(serve(home, quest_id=quest_id, quiet_seconds=quiet_seconds))
