"""``ds bash list|read|kill``: inspect and stop a quest's durable shell sessions."""

from __future__ import annotations

import click
import msgspec

from ds_events.bash.checks import MAX_LINES
from ds_events.home import Home
from ds_events.services import bash as service
from ds_events.services.bash.commands import KillSession, ListSessions, ReadOutput

from .common import cli, emit_json, json_option, open_quest, out, pass_home

__all__ = ["group"]


@cli.group(name="bash")
def group() -> None:
    """Inspect and stop a quest's shell sessions (started through the bash_exec MCP tool).

    Example: ds bash list tok-abl --all
    """


@group.command("list")
@click.argument("quest_id")
@click.option("--all", "include_ended", is_flag=True, help="Every session, newest first (default: running only).")
@click.option("--limit", type=click.IntRange(1, MAX_LINES), default=None, help="At most N sessions with --all.")
@json_option
@pass_home
def bash_list(home: Home, quest_id: str, include_ended: bool, limit: int | None, as_json: bool) -> None:
    """List running sessions (or all with --all) and how many are in each status.

    Example: ds bash list tok-abl --all --json
    """
    with open_quest(home, quest_id) as q:
        listed = service.list_sessions(q, ListSessions(include_ended=include_ended, limit=limit))
    if as_json:
        emit_json(msgspec.to_builtins(listed))
        return
    for s in listed.sessions:
        ended = "" if s.status == "running" else f" exit={s.exit_code if s.exit_code is not None else s.signal or '-'}"
        out(f"{s.id:<12} {s.status:<10} {s.started_at[:19]:<19} pid {s.pid:<7}{ended}  {_one_line(s.command)}")
    out(" ".join(f"{k}={v}" for k, v in listed.counts.items()))


@group.command("read")
@click.argument("quest_id")
@click.argument("session_id")
@click.option("--tail", type=int, default=None, help="The last N lines.")
@click.option("--after", "after_seq", type=int, default=None, help="Lines after seq N.")
@click.option("--before", "before_seq", type=int, default=None, help="The --limit lines before seq N.")
@click.option("--limit", type=int, default=None, help="At most N lines (1-2000, default 200 for a window).")
@click.option("--numbers", is_flag=True, help="Prefix each line with its seq.")
@json_option
@pass_home
def bash_read(home: Home, quest_id: str, session_id: str, tail: int | None, after_seq: int | None,
              before_seq: int | None, limit: int | None, numbers: bool, as_json: bool) -> None:
    """Print a session's output: all of it when small, else head and tail; or a window.

    Example: ds bash read tok-abl bx-1a2b3c4d --tail 50
    """
    with open_quest(home, quest_id) as q:
        sl = service.read_output(
            q, ReadOutput(id=session_id, tail=tail, after_seq=after_seq, before_seq=before_seq, limit=limit)
        )
    session = sl.session
    if as_json:
        emit_json({"session": msgspec.to_builtins(session), "lines": [[n, t] for n, t in sl.lines],
                   "total_lines": sl.total_lines, "omitted": list(sl.omitted) if sl.omitted else None})
        return
    if numbers:
        for n, text in sl.lines:
            if sl.omitted is not None and n == sl.omitted[1] + 1:
                out(f"{'':>7} ... {sl.omitted[1] - sl.omitted[0] + 1} lines omitted ...")
            out(f"{n:>7} {text}")
    elif sl.lines:
        out(sl.output)
    click.echo(f"[{session.id}: {session.status}, {sl.total_lines} lines]", err=True)


@group.command("kill")
@click.argument("quest_id")
@click.argument("session_id")
@click.option("--force", is_flag=True, help="KILL at once instead of TERM then KILL after the grace period.")
@click.option("--wait", is_flag=True, help="Wait for the session to end.")
@click.option("--reason", default=None, help="Why (recorded; default user_stop).")
@pass_home
def bash_kill(home: Home, quest_id: str, session_id: str, force: bool, wait: bool, reason: str | None) -> None:
    """Stop a session's whole process group.

    Example: ds bash kill tok-abl bx-1a2b3c4d --wait
    """
    with open_quest(home, quest_id) as q:
        session = service.kill(q, KillSession(id=session_id, force=force, wait=wait, reason=reason))
    if session.status == "running":
        out(f"{session.id}: kill requested; still stopping")
    else:
        out(f"{session.id}: {session.status} ({session.reason or 'exit ' + str(session.exit_code)})")


def _one_line(text: str, width: int = 70) -> str:
    line = text.replace("\n", " ⏎ ")
    return line if len(line) <= width else line[: width - 1] + "…"
