"""``ds init``, ``ds quest new|list|show``, ``ds message``, ``ds control``."""

from __future__ import annotations

import click
import msgspec

from ds_events.home import Home
from ds_events.services import quest as quest_service

from .common import cli, emit_json, json_option, open_quest, out, pass_home
from .log import warn_if_torn
from .quest_archive import quest_archive, quest_delete, quest_unarchive

__all__ = ["init", "quest", "message", "control"]


@cli.command()
@pass_home
def init(home: Home) -> None:
    """Create the ds-events home (config.yaml, quests/, memory/).

    Example: ds --home ~/ds init
    """
    created = home.init()
    out(f"{'initialised' if created else 'already initialised'}: {home.root}")


@cli.group()
def quest() -> None:
    """Create, list and inspect quests."""


@quest.command("new")
@click.option("--title", required=True, help="One-line title of the quest.")
@click.option("--id", "quest_id", default=None, help="Quest id (lowercase letters, digits, - and _). Default: from the title.")
@click.option("--brief", default="", help="What the quest is about (goes to brief.md).")
@json_option
@pass_home
def quest_new(home: Home, title: str, quest_id: str | None, brief: str, as_json: bool) -> None:
    """Create a quest: a git repository whose files come from its event log.

    Example: ds quest new --title "Tokenizer ablations" --id tok-abl
    """
    q = home.create_quest(title, quest_id=quest_id, brief=brief)
    with q:
        if as_json:
            emit_json({"quest_id": q.id, "root": str(q.root), "last_seq": q.log.last_seq})
        else:
            out(f"created quest {q.id} at {q.root}")


@quest.command("list")
@click.option("--all", "show_all", is_flag=True, help="Archived quests too (each row says archived).")
@json_option
@pass_home
def quest_list(home: Home, show_all: bool, as_json: bool) -> None:
    """List quests with their status (archived ones only with --all).

    Example: ds quest list --json
    """
    rows = []
    for quest_id in home.quest_ids():
        with open_quest(home, quest_id, read_only=True) as q:
            warn_if_torn(q.log, quest_id)
            s = q.state("status")
            if s.archived and not show_all:
                continue
            health = msgspec.to_builtins(quest_service.quest_health(q))
            rows.append({"quest_id": quest_id, "title": s.title, "status": s.status, "anchor": s.anchor, "last_seq": s.last_seq,
                         "archived": s.archived, "health": health})  # fmt: skip
    if as_json:
        emit_json(rows)
    elif not rows:
        out(f"no quests in {home.root}: create one with `ds quest new --title T`")
    else:
        for r in rows:
            cell = _health_cell(r["health"])
            shelf = " (archived)" if r["archived"] else ""
            out(f"{r['quest_id']:<32} {r['status']:<10} {cell:<16} {r['anchor']:<18} seq {r['last_seq']:<8} {r['title']}{shelf}")
            if r["health"]["state"] in _LOUD:  # a failed or stalled quest says why, on its own line
                out(f"  ! {r['health']['summary']}")


@quest.command("show")
@click.argument("quest_id")
@json_option
@pass_home
def quest_show(home: Home, quest_id: str, as_json: bool) -> None:
    """Show a quest's status projection.

    Example: ds quest show tok-abl
    """
    with open_quest(home, quest_id, read_only=True) as q:
        warn_if_torn(q.log, quest_id)
        s = q.state("status")
        health = quest_service.quest_health(q)
        if as_json:
            emit_json(msgspec.to_builtins(s) | {"root": str(q.root), "health": msgspec.to_builtins(health)})
            return
        out(f"quest:   {s.quest_id}\ntitle:   {s.title}\nstatus:  {s.status}\nhealth:  {health.summary}\nanchor:  {s.anchor}")
        if health.failure is not None:
            f = health.failure
            call = f" call {f.call_id}" if f.call_id else ""
            out(f"failure: {f.failure_class} {f.cause}{f' in {f.tool}' if f.tool else ''}{call}{f': {f.error}' if f.error else ''}")
        if s.runner or s.model:
            out(f"runner:  {s.runner or '(config)'}{f', model {s.model}' if s.model else ''}")
        t = q.state("turns")
        if t.total:
            outcomes = ", ".join(f"{n} {k}" for k, n in sorted(t.outcomes.items()))
            running = f"; running {t.running}" if t.running else ""
            out(f"turns:   {t.total} ({outcomes}){running}")
        out(f"events:  {s.last_seq} (last at {s.updated_at})\nroot:    {q.root}")
        for kind, n in sorted(s.counts.items()):
            out(f"  {kind:<28} {n}")


# Health states that need someone's attention: the list marks them and says why.
_LOUD = ("failed", "stalled")


def _health_cell(health: dict[str, object]) -> str:
    state = str(health["state"])
    return state.upper() if state in _LOUD else state


@quest.command("set-runner")
@click.argument("quest_id")
@click.option("--runner", "-r", default="", help="codex | claude | acp | scripted (empty: the config's runner.name).")
@click.option("--model", "-m", default="", help="The model the agent uses (empty: runner.model, else the agent's own).")
@json_option
@pass_home
def quest_set_runner(home: Home, quest_id: str, runner: str, model: str, as_json: bool) -> None:
    """Choose the agent (and model) that runs this quest's turns, from the next turn on.

    Example: ds quest set-runner tok-abl --runner claude --model claude-sonnet-4-5
    """
    with open_quest(home, quest_id) as q:
        event = quest_service.set_runner(q, quest_service.SetRunner(runner=runner, model=model))
        if as_json:
            emit_json({"seq": event.seq, "runner": runner, "model": model})
        else:
            out(f"{quest_id}: runner {runner or '(config)'}{f', model {model}' if model else ''} from the next turn")


@cli.command()
@click.argument("quest_id")
@click.argument("text")
@click.option("--role", type=click.Choice(["user", "assistant", "system"]), default="user", show_default=True)
@json_option
@pass_home
def message(home: Home, quest_id: str, text: str, role: str, as_json: bool) -> None:
    """Append a message to a quest's conversation and say what became of it.

    Example: ds message tok-abl "Try a smaller vocabulary first"
    """
    with open_quest(home, quest_id) as q:
        event = quest_service.post_message(q, quest_service.PostMessage(text=text, role=role), source="cli")
        status = q.state("status").status
    if as_json:
        emit_json({"seq": event.seq, "id": event.id, "quest_id": quest_id, "status": status})
        return
    # The message waits in the quest's mailbox until a turn takes it: say so, and what
    # must happen first when the quest is not active.
    out(f"queued message {event.id} (seq {event.seq}) for quest {quest_id}")
    if role != "user":
        out(f"recorded as the {role}'s; no turn is started for it")
    elif status == "paused" or status == "stopped":
        out(f"the quest is {status}: no turn picks it up until `ds control {quest_id} resume`")
    elif status == "completed":
        out("the quest is completed: no turn will pick it up")
    else:
        out(f"the next turn reads it (`ds run {quest_id}`, or a running `ds serve`)")


@cli.command()
@click.argument("quest_id")
@click.argument("action", type=click.Choice(quest_service.CONTROL_ACTIONS))
@click.option("--reason", default="", help="Why (recorded in the event).")
@pass_home
def control(home: Home, quest_id: str, action: str, reason: str) -> None:
    """Pause, stop or resume a quest.

    Example: ds control tok-abl pause --reason "reviewing results"
    """
    with open_quest(home, quest_id) as q:
        already = _ALREADY.get(action)
        # A resume of an active quest whose failed turn is held for the user runs that turn
        # again (projections.turns), so it is not "nothing to do".
        held = action == "resume" and q.state("turns").held is not None
        if already is not None and q.state("status").status == already and not held:  # nothing would change: say so, record nothing
            hint = f" — `ds run {quest_id}` runs its turns" if action == "resume" else ""
            out(f"nothing to do: the quest is {already} already{hint}")
            return
        # Imported here: it loads the shell-session and turn machinery, which the
        # read-only quest commands of this module must not pay for at start-up.
        from ds_events.services.runtime import steering

        event = steering.control(q, quest_service.Control(action=action, reason=reason))
        out(f"{action}: seq {event.seq}, status now {q.state('status').status}")


# A control that would leave the status as it is (resume on an active quest).
_ALREADY = {"pause": "paused", "stop": "stopped", "resume": "active"}

for _command in (quest_archive, quest_unarchive, quest_delete):
    quest.add_command(_command)
