"""The ``ds`` command group and what every command shares: the home option, JSON
output and one-line, actionable errors.

The group is lazy: a command's module (and what it imports: git, aiohttp, the bash
helpers, ...) is imported only when that command runs or its help is shown, so a
read-only command pays for its own imports, not for every command's.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar, cast

import click

from ds_events.home import Home, Quest

__all__ = ["cli", "LazyGroup", "CliError", "TurnOptions", "json_option", "pass_home", "open_quest", "emit_json", "out"]

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """A failure the user can fix; its message says how."""

    exit_code = 1


class TurnOptions(TypedDict):
    """How ``ds serve`` and ``ds acp`` host turns: the Fleet's runner options (None: the
    config's)."""

    runner: str | None
    model: str | None
    trajectory: str | None


class LazyGroup(click.Group):
    """A click group whose commands live in modules imported on first use.

    ``lazy`` maps a command name to the module that defines it: ``"pkg.mod"`` when the
    module registers the command on this group itself (``@cli.command()``), or
    ``"pkg.mod:attr"`` to add the module's ``attr``. Listing (``ds --help``) names every
    command without importing any; resolving one imports its module only.
    """

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.load(cmd_name)
        return self.commands.get(cmd_name)

    def load(self, name: str) -> click.Command:
        """Import the module of command ``name`` and return the command."""
        module_name, _, attr = self.lazy[name].partition(":")
        module = importlib.import_module(module_name)
        if attr and name not in self.commands:
            self.add_command(getattr(module, attr), name)
        if name not in self.commands:  # a wrong entry in the map: our bug, said plainly
            raise RuntimeError(f"{module_name} does not define the command {name!r}")
        return self.commands[name]


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="DS_HOME",
    help="The ds-events home (default: $DS_HOME or ~/.ds-events).",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None) -> None:
    """ds-events: an event-sourced runtime for long-running research agents.

    Example: ds quest new --title "Tokenizer ablations"
    """
    ctx.obj = Home(home)


def pass_home(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(click.get_current_context().find_object(Home), *args, **kwargs)

    return cast(F, wrapper)  # functools.wraps keeps the signature; the type checker cannot see it


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def open_quest(home: Home, quest_id: str, *, actor: str = "cli", read_only: bool = False) -> Quest:
    return home.open_quest(quest_id, actor=actor, read_only=read_only)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, sort_keys=False))


def out(text: str = "") -> None:
    click.echo(text)
    sys.stdout.flush()
