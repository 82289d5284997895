"""``ds store migrate``: move a quest's log between the file store and PostgreSQL."""

from __future__ import annotations

import click

from ds_events.config import check_store_url
from ds_events.home import Home
from ds_events.stores import GLOBAL_LOG, REGISTRY_LOG

from .common import cli, emit_json, json_option, out, pass_home

__all__ = ["store", "migrate"]


@cli.group()
def store() -> None:
    """Where a home's logs live: the file store (default) or PostgreSQL."""


@store.command("migrate")
@click.argument("quest_id", required=False)
@click.option("--to", "target", required=True, metavar="STORE", help="file, or a PostgreSQL URL (postgresql://user@host:port/db).")
@click.option("--from", "source", default=None, metavar="STORE", help="Where the log is now (default: the home's store).")
@click.option("--global", "global_", is_flag=True, help="Migrate the home's global memory log instead of a quest's.")
@click.option("--registry", is_flag=True, help="Migrate the home's baseline registry log instead of a quest's.")
@json_option
@pass_home
def migrate(
    home: Home, quest_id: str | None, target: str, source: str | None, global_: bool, registry: bool, as_json: bool
) -> None:
    """Copy a quest's log to another store, byte for byte (seq, ids and the hash chain
    unchanged). Refuses, writing nothing, if the target holds a different history; a
    re-run onto the same history does nothing. Stop writers first; then point the home
    at the target (``store:`` in config.yaml, or DS_STORE).

    Example: ds store migrate tok-abl --to postgresql://ds@127.0.0.1:5432/ds
    """
    from ds_events.migrate import migrate_log  # only this command needs it

    chosen = [n for n, on in ((quest_id, quest_id is not None), (GLOBAL_LOG, global_), (REGISTRY_LOG, registry)) if on and n is not None]
    if len(chosen) != 1:
        raise click.UsageError("give one quest id, or --global, or --registry")
    name = chosen[0]
    if quest_id is not None:
        home.quest_root(quest_id)  # checks the id's shape
    target = check_store_url(target, "--to")
    source = check_store_url(source, "--from") if source is not None else home.store_url()
    result = migrate_log(home, name, source=source, target=target)
    if as_json:
        emit_json(
            {"log": result.name, "from": result.source, "to": result.target, "events": result.events,
             "copied": result.copied, "last_seq": result.last_seq, "head": result.head}
        )  # fmt: skip
        return
    if result.copied == 0:
        out(f"{result.name}: {result.target} already holds all {result.events} events (seq 1..{result.last_seq}): nothing to do")
    else:
        kept = result.events - result.copied
        already = f" ({kept} were there already)" if kept else ""
        out(f"{result.name}: copied {result.copied} of {result.events} events{already} from {result.source} to {result.target}")
    out(f"head: seq {result.last_seq}, hash {result.head} (the same bytes on both stores)")
