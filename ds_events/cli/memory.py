"""``ds memory search|show|list|audit|import|guard``: memory cards from the shell."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from ds_events.home import Home
from ds_events.memory.store import MemoryContext
from ds_events.services.commands import decode_command, to_builtins
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.audit import audit_memory, import_hand_edits
from ds_events.services.memory.commands import (
    AuditMemory,
    ConfigureGuard,
    ImportHandEdits,
    ListRecent,
    ReadCard,
    SearchCards,
)
from projections.memory import KINDS

from .common import cli, emit_json, json_option, open_quest, out, pass_home

__all__ = ["group"]

_scope = click.option("--scope", type=click.Choice(["quest", "global", "both"]), default="quest", show_default=True)
_kind = click.option("--kind", type=click.Choice(KINDS), default=None, help="Only this kind of card.")
_limit = click.option("--limit", type=click.IntRange(1, 100), default=10, show_default=True)


@cli.group(name="memory")
def group() -> None:
    """Search, show, list, audit and import a quest's memory cards."""


@group.command("search")
@click.argument("quest_id")
@click.argument("query")
@_scope
@_kind
@_limit
@click.option("--tag", "tags", multiple=True, help="Only cards with this tag (repeatable).")
@click.option("--diverse", is_flag=True, help="Top results that are also mutually different.")
@json_option
@pass_home
def search(home: Home, quest_id: str, query: str, scope: str, kind: str | None, limit: int, tags: tuple[str, ...],
           diverse: bool, as_json: bool) -> None:  # fmt: skip
    """Ranked search (BM25) over title, body, tags and hints.

    Example: ds memory search tok-abl "why does training diverge" --scope both
    """
    cmd = decode_command(SearchCards, {"query": query, "scope": scope, "limit": limit, "kind": kind, "tags": list(tags),
                                       "diverse": diverse})  # fmt: skip
    with _memory(home, quest_id) as mem:
        results = memory_service.search(mem, cmd).results
    if as_json:
        emit_json(to_builtins(results))
        return
    if not results:
        out("no matching cards")
    # BM25 scores here are tiny and unitless (printed with three decimals they all read
    # 0.000): each hit shows its score relative to the best one, and the raw score.
    top = max(r.score for r in results) if results else 0.0
    for r in results:
        rel = f"{r.score / top:4.0%}" if top > 0 else "   -"
        out(f"{rel}  {r.score:9.3g}  {r.id:<22} [{r.scope}] {r.title}")
        out(f"                 {r.snippet}")


@group.command("show")
@click.argument("quest_id")
@click.argument("card")
@_scope
@json_option
@pass_home
def show(home: Home, quest_id: str, card: str, scope: str, as_json: bool) -> None:
    """Show one card (by id, mem-NNN record id, or path under memory/).

    Example: ds memory show tok-abl knowledge-1a2b3c4d
    """
    is_path = "/" in card or card.endswith(".md")
    cmd = decode_command(ReadCard, {"card_id": None if is_path else card, "path": card if is_path else None,
                                    "scope": "both" if scope == "quest" else scope})  # fmt: skip
    with _memory(home, quest_id) as mem:
        result = memory_service.read(mem, cmd)
    if as_json:
        emit_json(to_builtins(result))
        return
    out(result.markdown.rstrip("\n"))
    if result.hand_edited:
        out(f"\n(edited by hand: run `ds memory import {quest_id}` to take the edit in)")


@group.command("list")
@click.argument("quest_id")
@_scope
@_kind
@_limit
@json_option
@pass_home
def list_cards(home: Home, quest_id: str, scope: str, kind: str | None, limit: int, as_json: bool) -> None:
    """List the most recent active cards.

    Example: ds memory list tok-abl --kind decisions --limit 5
    """
    cmd = decode_command(ListRecent, {"scope": scope, "limit": limit, "kind": kind})
    with _memory(home, quest_id) as mem:
        results = memory_service.list_recent(mem, cmd).results
    if as_json:
        emit_json(to_builtins(results))
        return
    if not results:
        out("no cards yet")
    for r in results:
        out(f"{r.updated_at}  {r.id:<22} [{r.scope}] {r.title}")


@group.command("audit")
@click.argument("quest_id")
@_scope
@json_option
@pass_home
def audit_cmd(home: Home, quest_id: str, scope: str, as_json: bool) -> None:
    """Health report: counts, near-duplicates, polluted titles, broken links, hand edits.

    Example: ds memory audit tok-abl --json
    """
    cmd = decode_command(AuditMemory, {"scope": scope})
    with _memory(home, quest_id) as mem:
        report = to_builtins(audit_memory(mem, cmd))
    if as_json:
        emit_json(report)
        return
    for where, per_kind in report["counts"].items():
        counts = ", ".join(f"{k} {v['active']} active/{v['superseded']} superseded" for k, v in per_kind.items())
        out(f"{where}: {counts or 'no cards'}")
    for c in report["duplicate_clusters"]:
        out(f"near-duplicates ({c['max_similarity']}): " + "; ".join(f"{m['id']} {m['title']}" for m in c["cards"]))
    for p in report["config_polluted"]:
        out(f"config-polluted: {p['id']} {p['title']} ({', '.join(p['settings'])})")
    for b in report["broken_links"]:
        out(f"broken link: {b['id']} {b['problem']} {b['target']}")
    for d in report["drift"]:
        out(f"drift: {d['path']} {d['problem']}")
    if report["drift"]:
        out(f"take hand edits in with: ds memory import {quest_id}")
    out("ok" if report["ok"] else "problems found")


@group.command("import")
@click.argument("quest_id")
@click.argument("paths", nargs=-1)
@click.option("--scope", type=click.Choice(["quest", "global"]), default="quest", show_default=True)
@json_option
@pass_home
def import_cmd(home: Home, quest_id: str, paths: tuple[str, ...], scope: str, as_json: bool) -> None:
    """Take hand edits of card files in as events (all drifted files, or only PATHS).

    Example: ds memory import tok-abl memory/knowledge/knowledge-1a2b3c4d.md
    """
    cmd = decode_command(ImportHandEdits, {"scope": scope, "paths": list(paths) or None})
    with _memory(home, quest_id) as mem:
        result = to_builtins(import_hand_edits(mem, cmd))
    if as_json:
        emit_json(result)
        return
    for r in result["imported"]:
        out(f"imported {r['path']} ({r['event']} at seq {r['seq']})")
    for m in result["moved"]:
        out(f"new card from {m['from']} -> {m['to']}")
    for rel in result["restored"]:
        out(f"restored deleted file {rel}")
    if not (result["imported"] or result["moved"] or result["restored"]):
        out("nothing to import: every card file matches the log")


@group.command("guard")
@click.argument("quest_id")
@click.option("--key", "keys", multiple=True, required=True, help="A config key, e.g. lr (repeatable).")
@json_option
@pass_home
def guard(home: Home, quest_id: str, keys: tuple[str, ...], as_json: bool) -> None:
    """Refuse card titles/summaries that bake in settings of these config keys (lr=0.1).

    Example: ds memory guard tok-abl --key lr --key batch_size
    """
    cmd = decode_command(ConfigureGuard, {"config_keys": list(keys)})
    with _memory(home, quest_id) as mem:
        result = memory_service.configure_guard(mem, cmd)
    if as_json:
        emit_json(to_builtins(result))
    else:
        out(f"guarded config keys: {', '.join(result.config_keys)} (seq {result.seq})")


@contextlib.contextmanager
def _memory(home: Home, quest_id: str) -> Iterator[MemoryContext]:
    with open_quest(home, quest_id) as quest:
        mem = MemoryContext(quest=quest, actor="cli")
        try:
            yield mem
        finally:
            mem.close()
