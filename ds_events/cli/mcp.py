"""``ds mcp --namespace memory|artifact|bash_exec``: serve one namespace over stdio."""

from __future__ import annotations

from pathlib import Path

import click

from ds_events.home import Home

from .common import cli, pass_home

__all__ = ["mcp"]


@cli.command()
@click.option("--namespace", "-n", required=True, type=click.Choice(["memory", "artifact", "bash_exec"]))
@click.option("--quest", "quest_id", default=None, help="Quest id (default: $DS_QUEST_ID).")
@click.option(
    "--quest-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Quest repository path (default: $DS_QUEST_ROOT).",
)
@pass_home
def mcp(home: Home, namespace: str, quest_id: str | None, quest_root: Path | None) -> None:
    """Serve an MCP namespace over stdio for a runner (Codex, Claude Code).

    Example: DS_QUEST_ID=tok-abl ds mcp --namespace memory
    """
    from handlers.mcp import QuestBinding, build_server, run_stdio

    binding = QuestBinding.resolve(home=home.root, quest_id=quest_id, quest_root=quest_root)
    binding.check()  # fail now, with a clear message, on a bad binding (opens nothing)
    run_stdio(build_server(namespace, binding))
