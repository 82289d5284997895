"""Events of the `interaction` domain: talking to the user, the mailbox, delivery.

- Outbound: :class:`InteractionSent` (the agent's ``interact()`` call: progress,
  milestone, decision request, approval result, answer) and, per routing target,
  :class:`DeliveryAttempted` (one event per connector attempt result).
- Inbound: user-role ``conversation.message`` events are the queued messages of the
  mailbox; :class:`InteractionReplied` is the user's answer to a request and is queued
  too. :class:`MailboxDelivered` records that a batch of queued items reached the agent.
- A new blocking request closes the earlier ones still open (DeepScientist's
  ``supersede_open_requests``): :class:`InteractionSuperseded`, one per request closed.
- Delivery configuration: :class:`ConnectorBound` / :class:`ConnectorUnbound` (which
  conversations the quest reports to) and :class:`RoutingPolicyChanged`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import Event

__all__ = [
    "InteractionSent",
    "InteractionReplied",
    "InteractionSuperseded",
    "DeliveryOptions",
    "MailboxDelivered",
    "ConnectorBound",
    "ConnectorUnbound",
    "RoutingPolicyChanged",
    "DeliveryAttempted",
    "InteractionKind",
    "ReplyMode",
    "RoutingPolicy",
    "Connector",
    "DeliveryOutcome",
    "EVENTS",
]

InteractionKind = Literal["progress", "milestone", "decision_request", "approval_result", "answer"]
ReplyMode = Literal["none", "threaded", "blocking"]
RoutingPolicy = Literal["fanout_all", "primary_only", "primary_plus_local"]
Connector = Literal["local", "webhook"]
DeliveryOutcome = Literal["delivered", "retrying", "failed"]


class DeliveryOptions(msgspec.Struct, kw_only=True, frozen=True):
    """How a message is presented where it is delivered: DeepScientist's delivery
    arguments of ``interact``, as checked (attachment paths relative to the quest).
    ``allow_free_text=False``: a reply must choose an option (or carry structured data)."""

    summary_preview: str = ""
    importance: str = "info"
    response_phase: str = "ack"
    attachments: list[dict[str, Any]] = []
    surface_actions: list[dict[str, Any]] = []
    connector_hints: dict[str, Any] = {}
    allow_free_text: bool = True


class InteractionSent(Event, tag="interaction.sent", kw_only=True):
    """The agent told the user something or asked for a decision.

    ``targets`` are the binding ids the routing policy chose when it was sent;
    ``fingerprint`` is what repeated-progress suppression compares. ``delivery_options`` (null
    on lines written before it existed: the defaults) is how it is presented;
    ``expects_reply`` null: the reply mode decides (blocking expects one);
    ``min_interval_seconds`` is the rate limit the sender asked for.
    """

    interaction_id: str
    kind: InteractionKind
    message: str
    reply_mode: ReplyMode
    options: list[dict[str, Any]] = []
    reply_schema: dict[str, Any] | None = None
    reply_to_interaction_id: str | None = None
    dedupe_key: str | None = None
    fingerprint: str = ""
    targets: list[str] = []
    routing_policy: str = ""
    delivery_options: DeliveryOptions | None = None
    expects_reply: bool | None = None
    min_interval_seconds: float | None = None


class InteractionReplied(Event, tag="interaction.replied", kw_only=True):
    """The user answered an interaction (closes a blocking request); queued for the agent."""

    interaction_id: str
    text: str
    option_id: str | None = None
    data: dict[str, Any] | None = None
    source: str = ""


class InteractionSuperseded(Event, tag="interaction.superseded", kw_only=True):
    """An open blocking request was closed unanswered because ``superseded_by`` (a newer
    blocking request) replaced it; a late reply to it is refused."""

    interaction_id: str
    superseded_by: str


class MailboxDelivered(Event, tag="mailbox.delivered", kw_only=True):
    """A batch of queued inbound items (event ids) was handed to the agent, once."""

    batch_id: str
    message_ids: list[str]
    message_seqs: list[int] = []
    consumer: str = ""
    interaction_id: str | None = None


class ConnectorBound(Event, tag="delivery.binding_added", kw_only=True):
    """The quest now reports to a conversation reached through ``connector``."""

    binding_id: str
    connector: Connector
    target: str
    label: str = ""
    primary: bool = False
    settings: dict[str, Any] = {}


class ConnectorUnbound(Event, tag="delivery.binding_removed", kw_only=True):
    binding_id: str
    reason: str = ""


class RoutingPolicyChanged(Event, tag="delivery.routing_policy_changed", kw_only=True):
    policy: RoutingPolicy
    previous: str = ""


class DeliveryAttempted(Event, tag="delivery.attempted", kw_only=True):
    """One connector attempt at delivering an interaction, and how it ended.

    ``outcome``: ``delivered``; ``retrying`` (failed, another attempt follows); ``failed``
    (final: no attempts left or an error that retrying cannot fix).
    """

    interaction_id: str
    binding_id: str
    connector: str
    attempt: int
    outcome: DeliveryOutcome
    status_code: int | None = None
    error: str = ""


EVENTS = (
    InteractionSent,
    InteractionReplied,
    MailboxDelivered,
    ConnectorBound,
    ConnectorUnbound,
    RoutingPolicyChanged,
    DeliveryAttempted,
    InteractionSuperseded,
)
