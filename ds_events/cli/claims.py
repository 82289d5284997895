"""``ds audit-paper``: the claim audit of a quest's manuscript from the shell."""

from __future__ import annotations

import sys

import click
import msgspec

from ds_events.home import Home
from ds_events.services.claims import Claim, ClaimAudit, audit_quest

from .common import emit_json, json_option, open_quest, out, pass_home

__all__ = ["audit_paper"]


@click.command("audit-paper")
@click.argument("quest_id")
@click.option("--manuscript", "manuscript", default=None, metavar="PATH",
              help="The manuscript, inside the quest (default: paper/manuscript.md, else paper/main.md, "
                   "paper/manuscript.tex, paper/main.tex).")  # fmt: skip
@json_option
@pass_home
def audit_paper(home: Home, quest_id: str, manuscript: str | None, as_json: bool) -> None:
    """Trace every number of the quest's manuscript to the events it comes from: each
    number, where it is (line:column), what it resolves to (run, baseline or slice, its
    commit, the metric and its contract's rounding) or why not. Exits 1 when any number
    is unresolved or only matches a superseded record.

    Example: ds audit-paper tok-abl --manuscript paper/draft.md
    """
    with open_quest(home, quest_id, read_only=True) as quest:
        audit = audit_quest(quest, manuscript)
    if as_json:
        emit_json({"ok": audit.ok, **msgspec.to_builtins(audit)})
    else:
        _print(audit)
    if not audit.ok:
        sys.exit(1)


def _print(audit: ClaimAudit) -> None:
    counts = {s: sum(1 for c in audit.claims if c.status == s) for s in ("resolved", "superseded", "unresolved")}
    out(f"{audit.manuscript_path}: {len(audit.claims)} numbers: {counts['resolved']} resolved, {counts['superseded']} "
        f"superseded, {counts['unresolved']} unresolved ({len(audit.skipped)} skipped); log read to seq {audit.last_seq}")  # fmt: skip
    for claim in audit.claims:
        m = claim.mention
        where = f"{m.line}:{m.column}"
        out(f"{where:>8}  {m.text:<10} {claim.status.upper() if claim.status != 'resolved' else claim.status:<11} {_what(claim)}")
    if audit.skipped:
        shown = ", ".join(f"{s.text} at {s.line}:{s.column} ({s.reason})" for s in audit.skipped[:20])
        more = f" and {len(audit.skipped) - 20} more" if len(audit.skipped) > 20 else ""
        out(f"skipped: {shown}{more}")


def _what(claim: Claim) -> str:
    if not claim.sources or (claim.status == "unresolved" and claim.reason):
        return claim.reason
    s = claim.sources[0]
    commit = f" @ {s.commit[:12]}" if s.commit else ""
    seqs = ", ".join(str(e.seq) for e in s.events)
    metric = f" {s.metric}" if s.metric else ""
    others = f" (+{len(claim.sources) - 1} more)" if len(claim.sources) > 1 else ""
    text = f"{s.subject}{metric}{commit}: {s.shown} [seq {seqs}]{others}"
    return f"{text}: {claim.reason}" if claim.status == "superseded" else text
