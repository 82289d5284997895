"""``ds reply``, ``ds inbox`` and ``ds binding add|remove|policy``: the user's side of interactions."""

from __future__ import annotations

import json

import click
import msgspec

from ds_events.home import Home
from ds_events.services import interactions as service
from ds_events.services.commands import decode_command
from ds_events.services.interactions import connectors as connectors
from projections import interactions as view

from .common import CliError, cli, emit_json, json_option, open_quest, out, pass_home

__all__ = ["reply", "inbox", "binding"]


@cli.command()
@click.argument("quest_id")
@click.argument("interaction_id")
@click.argument("text")
@click.option("--option", "option_id", default=None, help="The id of the option you choose (decision requests).")
@click.option("--data", default=None, help="Structured answer as a JSON object (checked against the reply_schema).")
@json_option
@pass_home
def reply(home: Home, quest_id: str, interaction_id: str, text: str, option_id: str | None, data: str | None, as_json: bool) -> None:
    """Answer an agent's request; a blocking request closes and the agent gets the reply.

    Example: ds reply tok-abl ia-01J... "Go with the wider model" --option wider
    """
    parsed = None
    if data is not None:
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError as exc:
            raise CliError(f"--data is not valid JSON ({exc}): pass an object such as '{{\"lr\": 0.1}}'") from None
    cmd = decode_command(service.Reply, {"interaction_id": interaction_id, "text": text, "option_id": option_id, "data": parsed})
    with open_quest(home, quest_id) as q:
        event = service.reply(q, cmd, source="cli")
    if as_json:
        emit_json({"seq": event.seq, "id": event.id, "interaction_id": interaction_id})
    else:
        out(f"replied to {interaction_id}: seq {event.seq}")


@cli.command()
@click.argument("quest_id")
@json_option
@pass_home
def inbox(home: Home, quest_id: str, as_json: bool) -> None:
    """Show open requests waiting for you and messages the agent has not read yet.

    Example: ds inbox tok-abl
    """
    with open_quest(home, quest_id) as q:
        state: view.State = q.state("interactions")
        requests = [state.interactions[i] for i in state.open_requests]
        pending = view.pending_items(state)
    if as_json:
        emit_json({"open_requests": msgspec.to_builtins(requests), "unread_by_agent": msgspec.to_builtins(pending)})
        return
    out(f"{len(requests)} open request(s), {len(pending)} message(s) not yet read by the agent")
    for r in requests:
        choices = ", ".join(o["id"] for o in r.options)
        out(f"- {r.interaction_id} [{r.kind}] {r.message}" + (f" (options: {choices})" if choices else ""))


@cli.group()
def binding() -> None:
    """Where a quest's interactions are delivered: bindings and the routing policy."""


@binding.command("add")
@click.argument("quest_id")
@click.argument("url")
@click.option("--primary", is_flag=True, help="Make it the primary conversation.")
@click.option("--label", default="", help="A name for people.")
@click.option("--id", "binding_id", default=None, help="Binding id (default: derived from the URL).")
@click.option("--max-attempts", type=int, default=None, help="Delivery attempts (1-10).")
@click.option("--backoff", type=float, default=None, help="Seconds before the first retry (doubles each time).")
@click.option("--timeout", type=float, default=None, help="Seconds per attempt.")
@click.option("--token-env", default=None, help="Environment variable holding a bearer token.")
@pass_home
def binding_add(home: Home, quest_id: str, url: str, primary: bool, label: str, binding_id: str | None,
                max_attempts: int | None, backoff: float | None, timeout: float | None, token_env: str | None) -> None:
    """Bind a webhook: interactions are POSTed to URL as JSON.

    Example: ds binding add tok-abl https://hooks.example/ds --primary --max-attempts 5
    """
    settings = {k: v for k, v in (("max_attempts", max_attempts), ("backoff_seconds", backoff),
                                  ("timeout_seconds", timeout), ("token_env", token_env)) if v is not None}
    with open_quest(home, quest_id) as q:
        event = connectors.bind(q, "webhook", url, primary=primary, label=label, settings=settings, binding_id=binding_id)
    out(f"bound {event.binding_id} -> {url}" + (" (primary)" if primary else ""))


@binding.command("remove")
@click.argument("quest_id")
@click.argument("binding_id")
@click.option("--reason", default="")
@pass_home
def binding_remove(home: Home, quest_id: str, binding_id: str, reason: str) -> None:
    """Stop delivering to a binding.

    Example: ds binding remove tok-abl webhook-1a2b3c4d
    """
    with open_quest(home, quest_id) as q:
        connectors.unbind(q, binding_id, reason=reason)
    out(f"removed {binding_id}")


@binding.command("policy")
@click.argument("quest_id")
@click.argument("policy", type=click.Choice(connectors.ROUTING_POLICIES))
@pass_home
def binding_policy(home: Home, quest_id: str, policy: str) -> None:
    """Choose the routing policy: fanout_all, primary_only or primary_plus_local.

    Example: ds binding policy tok-abl primary_plus_local
    """
    with open_quest(home, quest_id) as q:
        connectors.set_routing_policy(q, policy)
    out(f"routing policy: {policy}")
