"""``ds events tail``, ``ds verify``, ``ds repair``, ``ds replay``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import click

from ds_events.events import decode_line
from ds_events.home import Home
from ds_events.store import EventStore
from ds_events.stores import REGISTRY_LOG, is_file_store, require_file_store

from .common import CliError, cli, emit_json, json_option, out, pass_home
from .eventtext import EventPrinter

__all__ = ["events", "verify", "repair", "replay", "warn_if_torn"]


@cli.group()
def events() -> None:
    """Read a quest's event log."""


@events.command("tail")
@click.argument("quest_id")
@click.option("--after", type=click.IntRange(min=0), default=None, help="Only events with seq > N.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N events (default: the last 20).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as any process appends them.")
@click.option("--json", "as_json", is_flag=True, help="One event per line exactly as stored (same as --format raw).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "raw", "acp"]),
    default="text",
    show_default=True,
    help="text: one readable line per event (on a terminal a run of bash.progress is one line updated in place; "
    "`ds run` prints the same lines); raw: the stored JSON line; "
    "acp: an Agent Client Protocol session/update notification per line (JSON-RPC 2.0, sessionId = the quest id).",
)
@pass_home
def events_tail(
    home: Home, quest_id: str, after: int | None, limit: int | None, follow: bool, as_json: bool, fmt: str
) -> None:
    """Print a quest's events.

    Example: ds events tail tok-abl --after 10 --limit 5 --format acp
    """
    printer = EventPrinter(sys.stdout, raw=as_json or fmt == "raw", convert=_formatter(fmt, quest_id) if fmt == "acp" else None)
    _log_path(home, quest_id)
    log = home.open_log(quest_id, actor="cli", read_only=True)  # never recovers or writes
    try:
        warn_if_torn(log, quest_id)
        if after is None:
            after = max(0, log.last_seq - (limit or 20))
        for seq, line in log.iter_lines(after_seq=after):
            printer.line(line)
            after = seq
            if limit is not None and not follow:
                limit -= 1
                if limit == 0:
                    break
        if follow:
            import asyncio  # only following needs a loop

            try:
                asyncio.run(_follow(log, after, printer))
            except KeyboardInterrupt:
                pass
    finally:
        printer.close()
        log.close()


async def _follow(log: EventStore, after: int, printer: EventPrinter) -> None:
    from ds_events.events import encode

    async for event in log.follow(after_seq=after):
        printer.line(encode(event))


def warn_if_torn(log: EventStore, quest_id: str) -> None:
    """Say on stderr that a read-only command left a torn tail in place, and what fixes it
    (a file log's; a database has no torn tail)."""
    torn = getattr(log, "torn", None)  # only a file log has these two
    if torn is not None:
        click.echo(
            f"warning: {getattr(log, 'path', 'the log')} ends in a torn tail at byte {torn.offset} ({torn.reason}); "
            f"shown: the events before it. `ds repair {quest_id}` quarantines it",
            err=True,
        )


def _formatter(fmt: str, session_id: str) -> Callable[[bytes], bytes]:
    """A line -> line conversion for ``--format acp`` (imports the mapping only then)."""
    import json

    from projections.acp import Notifier

    notifier = Notifier(session_id)  # one card per tool call, over the lines this tail prints

    def convert(line: bytes) -> bytes:
        note = notifier.notification(decode_line(line))
        return json.dumps(note, ensure_ascii=False, separators=(",", ":")).encode()

    return convert


@cli.command()
@click.argument("quest_id", required=False)
@click.option("--registry", is_flag=True, help="Audit the home's baseline registry log instead of a quest's.")
@json_option
@pass_home
def verify(home: Home, quest_id: str | None, registry: bool, as_json: bool) -> None:
    """Audit a quest's log: every line decodes, seqs run 1..N, the hash chain holds, and
    the anchors outside the log (head anchor, snapshots, git trailers) and its index agree.

    Exits 1 and lists each problem (line, byte offset, reason, the anchor that caught it).
    Example: ds verify tok-abl      (ds verify --registry: the home's baseline registry)
    """
    from ds_events.verify import verify_home_log  # only the auditing commands need it

    quest_id = _quest_or_registry(quest_id, registry)
    unregistered: list[dict[str, object]] = []
    if registry:
        from ds_events.services.artifacts.registry import unregistered_publications

        unregistered = unregistered_publications(home)  # quests' publications the registry lacks
        if unregistered and not home.has_log(REGISTRY_LOG):  # the first publisher stopped halfway
            for u in unregistered:
                out(f"quest {u['quest_id']} published baseline {u['baseline_id']} (seq {u['seq']}); there is no registry yet")
            out("run `ds repair --registry` (or publish_baseline again in that quest)")
            sys.exit(1)
        if not home.has_log(REGISTRY_LOG):
            # A home where nothing was published has no registry, and nothing is wrong
            # with it (`ds repair --registry` says "nothing to repair" there too).
            if as_json:
                emit_json({"ok": True, "lines": 0, "last_seq": 0, "anchors": [], "notes": ["no registry yet"],
                           "problems": [], "unregistered": []})  # fmt: skip
            else:
                out(f"ok: no baseline registry in {home.root} yet (nothing was published with publish_baseline)")
            return
        _registry_log(home)
        report = verify_home_log(home, REGISTRY_LOG)
    else:
        _log_path(home, quest_id)
        report = verify_home_log(home, quest_id, repo=home.quest_root(quest_id))
    stamps = [] if registry or quest_id is None else _claim_stamp_problems(home, quest_id, report.notes)
    path = report.path
    if as_json:
        emit_json(
            {
                "ok": report.ok and not unregistered and not stamps,
                "lines": report.lines,
                "last_seq": report.last_seq,
                "anchors": report.anchors,
                "notes": report.notes,
                "problems": [
                    {"line": p.line, "offset": p.offset, "reason": p.reason, "anchor": p.anchor} for p in report.problems
                ],
                **({"unregistered": unregistered} if registry else {}),
                **({} if registry else {"claim_stamps": stamps}),
            }
        )
    elif unregistered and report.ok:
        for u in unregistered:
            out(f"quest {u['quest_id']} published baseline {u['baseline_id']} (seq {u['seq']}); the registry lacks it")
        out(f"{len(unregistered)} publication(s) the registry lacks (a publisher stopped between its two appends): "
            "run `ds repair --registry` (or publish_baseline again in that quest)")  # fmt: skip
    elif report.ok and stamps:
        for sp in stamps:
            out(f"{path}: claim stamp of seq {sp['seq']}: {sp['reason']} ({sp['what']})")
        out(f"{len(stamps)} problem(s) with the claim stamps: the manuscript's numbers no longer rest on what the log "
            "says; run `ds audit-paper QUEST` and submit the paper again")  # fmt: skip
    elif report.ok:
        checked = f"; agrees with {', '.join(report.anchors)}" if report.anchors else ""
        out(f"ok: {report.lines} events, seq 1..{report.last_seq}, hash chain intact{checked}")
        for note in report.notes:
            out(f"note: {note}")
    else:
        for p in report.problems:
            out(f"{path}: {p}")
        for sp in stamps:
            out(f"{path}: claim stamp of seq {sp['seq']}: {sp['reason']} ({sp['what']})")
        for note in report.notes:
            out(f"note: {note}")
        fix = f"run `ds repair {quest_id}` to quarantine them" if quest_id else f"the registry log is {path}"
        out(f"{len(report.problems)} problem(s) in {report.lines} lines: {fix}")
    if not report.ok or unregistered or stamps:
        sys.exit(1)


def _claim_stamp_problems(home: Home, quest_id: str, notes: list[str]) -> list[dict[str, object]]:
    """The claim stamps' problems (a paper bundle's ``claim_stamp`` against the log as it
    is now), as ``{"seq" (the stamped event), "what", "cited_seq", "later_seq", "reason"}``.
    A log too broken to read is already reported by the audit: noted, not checked."""
    from ds_events.errors import LogError, ServiceError
    from ds_events.events import EventDecodeError
    from ds_events.services.claims import QuestLog, stamp_types, verify_claim_stamps

    if not stamp_types():  # no event carries a stamp yet: nothing to open
        return []
    try:
        log = home.open_log(quest_id, actor="cli", read_only=True, root=home.quest_root(quest_id))
        try:
            found = verify_claim_stamps(QuestLog(log=log, root=home.quest_root(quest_id)))
        finally:
            log.close()
    except (LogError, EventDecodeError, ServiceError, OSError) as exc:
        notes.append(f"claim stamps not checked: {exc}")
        return []
    return [{"seq": seq, "what": p.what, "cited_seq": p.seq, "later_seq": p.later_seq, "reason": p.reason} for seq, p in found]


@cli.command()
@click.argument("quest_id", required=False)
@click.option("--registry", is_flag=True, help="Complete the publications the home's baseline registry lacks instead.")
@click.option("--yes", is_flag=True, help="Do it without asking.")
@pass_home
def repair(home: Home, quest_id: str | None, registry: bool, yes: bool) -> None:
    """Quarantine bad lines and lines nothing vouches for, put seqs back in order and
    re-chain; says what it removed and which events it could not vouch for.
    ``--registry``: append to the home's baseline registry the quests' publications it
    lacks (a publisher stopped between its quest and registry appends).

    Example: ds repair tok-abl --yes      (ds repair --registry)
    """
    from ds_events.verify import repair_log, verify_log

    quest_id = _quest_or_registry(quest_id, registry)
    if registry:
        from ds_events.services.artifacts.registry import complete_registry

        done = complete_registry(home)
        for u in done:
            out(f"registered baseline {u['baseline_id']} as quest {u['quest_id']} published it (seq {u['seq']})")
        out(f"{len(done)} publication(s) completed" if done else "nothing to repair: the registry holds every publication")
        return
    require_file_store(home.store_url(), "`ds repair`")
    path = _log_path(home, quest_id)
    key, repo, witness = home.log_key(), home.quest_root(quest_id), home.log_witness(quest_id)
    report = verify_log(path, key=key, repo=repo, witness=witness)
    if report.ok:
        out("nothing to repair: the log verifies")
        return
    if not yes and not click.confirm(f"{len(report.problems)} problem(s) found. Repair {path}?", default=False):
        raise CliError("not repaired (pass --yes to repair without asking)")
    result = repair_log(path, quest_id=quest_id, actor="cli", key=key, repo=repo, witness=witness)
    for p in result.removed:
        out(f"removed line {p.line} (byte {p.offset}, {p.reason})")
    if result.unvouched:
        seqs = ", ".join(str(u.seq) for u in result.unvouched)
        out(f"could not vouch for {len(result.unvouched)} event(s) (seq {seqs}): they are quarantined, not kept")
    if result.quarantine_path:
        out(f"removed lines are in .ds/{result.quarantine_path} ({result.removed_bytes} bytes)")
    if result.reordered:
        out(f"moved {result.reordered} event(s) back into seq order")
    if result.renumbered:
        out(f"renumbered {result.renumbered} event(s) so seqs run 1..N")
    if result.rechained_from_seq is not None:
        out(f"re-chained hashes from seq {result.rechained_from_seq}")
    for reason in result.anchors_reset:
        out(f"reset the head anchor: {reason}")
    if result.event is not None:
        out(f"recorded log.repaired at seq {result.event.seq}; run `ds replay {quest_id}` to rebuild views")
    elif result.index_rebuilt:
        out("rebuilt the sparse index (the log itself needed no change)")


@cli.command()
@click.argument("quest_id", required=False)
@click.option("--registry", is_flag=True, help="Rebuild the home's baseline registry files instead of a quest's.")
@json_option
@pass_home
def replay(home: Home, quest_id: str | None, registry: bool, as_json: bool) -> None:
    """Rebuild every projection and materialised file of a quest from its log.

    Example: ds replay tok-abl      (ds replay --registry: the home's baseline registry)
    """
    from ds_events.replay import replay_quest  # only replay needs it

    quest_id = _quest_or_registry(quest_id, registry)
    if registry:
        _replay_registry(home, as_json)
        return

    path = _log_path(home, quest_id)
    root = home.quest_root(quest_id)
    if not root.is_dir():
        # The database holds the log and this machine never opened the quest: opening
        # it makes the repository its files are written into.
        home.open_quest(quest_id, actor="replay").close()
    # Byte counts for the bar: the file's size, or nothing to count against (a database).
    total = os.path.getsize(path) if is_file_store(home.store_url()) else 0
    log = home.open_log(quest_id, actor="replay")
    try:
        if as_json or total < 8 * 1024 * 1024:
            result = replay_quest(root, quest_id=quest_id, log=log)
        else:
            with click.progressbar(length=total, label="replaying", file=sys.stderr) as bar:
                result = replay_quest(root, quest_id=quest_id, progress=bar.update, log=log)
    finally:
        log.close()
    if as_json:
        emit_json(
            {
                "events": result.events,
                "last_seq": result.last_seq,
                "files_written": result.files_written,
                "replaced": result.replaced,
                "replaced_dir": result.replaced_dir,
            }
        )
    else:
        out(f"replayed {result.events} events (last seq {result.last_seq}); {len(result.files_written)} file(s) rewritten")
        for rel in result.files_written:
            out(f"  {rel}")
        if result.replaced:
            out(f"{len(result.replaced)} file(s) differed from the log (hand edits?); the old copies are in {result.replaced_dir}")
            out(f"  to keep an edited memory card, copy it back and run `ds memory import {quest_id}`")


def _log_path(home: Home, quest_id: str) -> str:
    """The quest's log file (where it is, or would be, on this machine), once its
    log is known to exist in the home's store."""
    root = home.quest_root(quest_id)  # validates the id
    if not home.has_log(quest_id, root=root):
        raise CliError(f"no quest {quest_id!r} in {home.root}: see `ds quest list`")
    return str(root / ".ds" / "events.jsonl")


def _quest_or_registry(quest_id: str | None, registry: bool) -> str:
    if registry and quest_id is not None:
        raise click.UsageError("give a quest id or --registry, not both")
    if not registry and quest_id is None:
        raise click.UsageError("give a quest id (or --registry for the home's baseline registry)")
    return quest_id or ""


def _registry_log(home: Home) -> Path:
    path = home.log_root(REGISTRY_LOG) / ".ds" / "events.jsonl"
    if not home.has_log(REGISTRY_LOG):
        raise CliError(f"no baseline registry in {home.root}: nothing was published with publish_baseline yet")
    return path


def _replay_registry(home: Home, as_json: bool) -> None:
    from ds_events.services.artifacts.registry import open_registry

    _registry_log(home)
    log, views = open_registry(home)
    try:
        written = views.materialise(full=True)
        last_seq = log.last_seq
    finally:
        log.close()
    if as_json:
        emit_json({"events": last_seq, "last_seq": last_seq, "files_written": written})
    else:
        out(f"registry: {last_seq} events folded, {len(written)} file(s) differed: {', '.join(written) or 'none'}")
