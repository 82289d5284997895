"""``ds quest archive|unarchive|delete``: put a quest away (reversibly) or remove it.

The ``quest`` group (``ds_events.cli.quest``) adds these commands."""

from __future__ import annotations

import click
import msgspec

from ds_events.home import Home
from ds_events.services import quest as quest_service

from .common import emit_json, json_option, open_quest, out, pass_home

__all__ = ["quest_archive", "quest_unarchive", "quest_delete"]


@click.command("archive")
@click.argument("quest_id")
@click.option("--reason", default="", help="Why (recorded in the event).")
@json_option
@pass_home
def quest_archive(home: Home, quest_id: str, reason: str, as_json: bool) -> None:
    """Archive a quest: hidden from `ds quest list` (see --all), no turns, no messages;
    its log and files are kept. `ds quest unarchive` takes it back.

    Example: ds quest archive tok-abl --reason "superseded by tok-abl-2"
    """
    with open_quest(home, quest_id) as q:
        done = quest_service.archive(q, quest_service.Archive(reason=reason))
    _answer(done, as_json, f"{quest_id}: archived (seq {done.seq}); `ds quest unarchive {quest_id}` takes it back")


@click.command("unarchive")
@click.argument("quest_id")
@click.option("--reason", default="", help="Why (recorded in the event).")
@json_option
@pass_home
def quest_unarchive(home: Home, quest_id: str, reason: str, as_json: bool) -> None:
    """Take an archived quest back: listed, scheduled and steerable again.

    Example: ds quest unarchive tok-abl
    """
    with open_quest(home, quest_id) as q:
        done = quest_service.unarchive(q, quest_service.Archive(reason=reason))
    _answer(done, as_json, f"{quest_id}: unarchived (seq {done.seq})")


@click.command("delete")
@click.argument("quest_id")
@click.option("--yes", is_flag=True, help="Delete without asking (without it: say what would be removed, remove nothing).")
@json_option
@pass_home
def quest_delete(home: Home, quest_id: str, yes: bool, as_json: bool) -> None:
    """Delete a quest for good: its directory (git repository, files, log), its log's
    rows on a database store, the home's witness of its head; its running shell
    sessions are killed first. Refused while a turn runs (turn_running) and without
    --yes (confirm_required, after saying what it would remove).

    Example: ds quest delete tok-abl --yes
    """
    from ds_events.services.runtime import removal  # loads the shell-session machinery

    with open_quest(home, quest_id) as q:
        if not yes and not as_json:
            out(f"would remove: {removal.describe(removal.delete_plan(q))}")
        done = removal.delete_quest(q, confirm=yes)
    if as_json:
        emit_json(msgspec.to_builtins(done))
    else:
        out(f"deleted quest {quest_id}: {removal.describe(done)}")


def _answer(done: quest_service.Archived, as_json: bool, text: str) -> None:
    if as_json:
        emit_json(msgspec.to_builtins(done))
    else:
        out(text)
