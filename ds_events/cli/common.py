"""The ``ds`` command group and what every command shares: the home option, JSON
output and one-line, actionable errors."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ds_events.home import Home, Quest

__all__ = ["cli", "CliError", "json_option", "pass_home", "open_quest", "emit_json", "out"]

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """A failure the user can fix; its message says how."""

    exit_code = 1


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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

    return wrapper  # type: ignore[return-value]


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def open_quest(home: Home, quest_id: str, *, actor: str = "cli", read_only: bool = False) -> Quest:
    return home.open_quest(quest_id, actor=actor, read_only=read_only)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, sort_keys=False))


def out(text: str = "") -> None:
    click.echo(text)
    sys.stdout.flush()
