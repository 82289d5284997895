"""Fast start-up, pinned without timing: what a fresh interpreter imports.

Runners start ``ds mcp --namespace N`` for every turn and people run read-only ``ds``
commands all the time; most of their start-up was importing libraries they never used
(pygit2, aiohttp, asyncio, the bash helpers). These tests start a fresh interpreter,
do one real thing (run a read-only command, serve an MCP namespace and call a tool)
and check which modules it loaded. ``bench/cli_start.py`` and ``bench/mcp_start.py``
measure the time.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest

from ds_events.cli import COMMANDS, cli
from ds_events.home import Home, Quest
from ds_events.services import quest as quest_service
from tests.helpers import ds_env

REPO = Path(__file__).resolve().parent.parent

# Libraries and modules of ours that a read-only command never needs.
NOT_FOR_READING = [
    "pygit2",
    "aiohttp",
    "asyncio",
    "mcp",
    "ds_events.artifacts.git",
    "ds_events.bash",
    "ds_events.verify",
    "ds_events.replay",
    "ds_events.cli.bash",
    "ds_events.cli.memory",
    "ds_events.cli.interact",
    "ds_events.cli.demo",
]


def loaded_after(code: str, home: Home, watch: list[str]) -> list[str]:
    """Run ``code`` in a fresh interpreter; the modules of ``watch`` it loaded."""
    script = code + textwrap.dedent(
        f"""
        import json as _json, sys as _sys
        print("LOADED " + _json.dumps(sorted(m for m in {watch!r} if m in _sys.modules)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=ds_env(home), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("LOADED "), done.stdout
    return json.loads(last.removeprefix("LOADED "))


def test_importing_the_cli_loads_no_command_module(home: Home):
    code = "import ds_events.cli\n"
    watch = [*NOT_FOR_READING, "ds_events.cli.quest", "ds_events.cli.log", "ds_events.cli.mcp"]
    assert loaded_after(code, home, watch) == []


def test_read_only_commands_load_neither_git_nor_the_network_nor_other_commands(home: Home, quest: Quest):
    quest_service.post_message(quest, quest_service.PostMessage(text="a message to tail"))
    code = textwrap.dedent(
        """
        from ds_events.cli import main
        for argv in (["events", "tail", "q1", "--after", "1"], ["quest", "show", "q1"], ["quest", "list"]):
            try:
                main(argv)
            except SystemExit as exc:
                assert not exc.code, (argv, exc.code)
        """
    )
    assert loaded_after(code, home, NOT_FOR_READING) == []


# What serving a namespace (the background opening of the quest included) and answering
# one tool call must not load; the artifact namespace works with git, so only aiohttp.
SERVE_CALLS = {
    "memory": ("search", {"query": "tokenizer"}),
    "bash_exec": ("bash_exec", {"mode": "list"}),
    "artifact": ("record", {"payload": {"kind": "idea", "title": "Wider tokenizer"}}),
}
NOT_FOR_SERVING = {
    "memory": ["pygit2", "aiohttp", "ds_events.artifacts.git", "ds_events.bash"],
    "bash_exec": ["pygit2", "aiohttp", "ds_events.artifacts.git", "ds_events.memory.index"],
    "artifact": ["aiohttp", "handlers.connectors.arxiv", "handlers.connectors.webhook", "ds_events.bash"],
}


@pytest.mark.parametrize("namespace", sorted(SERVE_CALLS))
def test_an_mcp_namespace_serves_and_answers_without_what_it_does_not_use(home: Home, quest: Quest, namespace: str):
    tool, args = SERVE_CALLS[namespace]
    code = textwrap.dedent(
        f"""
        import anyio, mcp
        from handlers.mcp import QuestBinding, build_server

        async def serve_and_call():
            server = build_server({namespace!r}, QuestBinding.resolve(quest_id="q1"))
            async with mcp.Client(server) as client:
                assert (await client.list_tools()).tools
                result = await client.call_tool({tool!r}, {args!r})
                assert not result.is_error, result.content

        anyio.run(serve_and_call)
        """
    )
    assert loaded_after(code, home, NOT_FOR_SERVING[namespace]) == []


def test_every_command_is_in_the_lazy_map_and_loads_from_the_module_it_names():
    ctx = click.Context(cli)
    for name, where in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.callback is not None and command.callback.__module__ == where.partition(":")[0], name
    for info in pkgutil.iter_modules([str(REPO / "ds_events" / "cli")]):
        importlib.import_module(f"ds_events.cli.{info.name}")
    # a command registered by a module but missing from the map would never run
    assert set(cli.commands) == set(COMMANDS)


def test_a_wrong_entry_in_the_lazy_map_fails_plainly():
    group = type(cli)(name="probe", lazy={"nothing": "ds_events.cli.common"})
    with pytest.raises(RuntimeError, match="does not define the command 'nothing'"):
        group.get_command(click.Context(group), "nothing")
