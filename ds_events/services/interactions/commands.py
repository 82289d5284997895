"""The contract of the interactions domain: its commands, answers, vocabulary and limits.

What the ``interact`` and ``get_interaction`` MCP tools, the reply routes and ``ds reply``
take and return: :class:`Interact`, :class:`Reply` and :class:`GetInteraction`, answered
by :class:`InteractResult` (with its :class:`InboundMessage`, :class:`DeliveryBatch` and
:class:`InteractionSummary` items), the stored ``interaction.replied`` event, and
:class:`InteractionDetail`. The vocabularies (:data:`KINDS`, :data:`REPLY_MODES`,
:data:`ROUTING_POLICIES`) are the stored events' own literal types, so a value a command
accepts is one the log can hold. The checks live beside it (:mod:`.checks` for an
interaction and a reply, :mod:`.forms` for the delivery arguments); the verbs in
:mod:`.mailbox` and :mod:`.connectors`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar, get_args

from msgspec import Meta

from ds_events.events.interaction import Connector, InteractionKind, ReplyMode, RoutingPolicy
from ds_events.home import Quest
from ds_events.services.commands import Command, Result
from projections import interactions as view

__all__ = [
    "Interact",
    "Reply",
    "GetInteraction",
    "InboundMessage",
    "InteractionSummary",
    "InteractResult",
    "InteractionDetail",
    "DeliveryBatch",
    "Deliver",
    "KINDS",
    "REPLY_MODES",
    "DEFAULT_REPLY_MODE",
    "SUPPRESSIBLE",
    "IMPORTANCE",
    "RESPONSE_PHASES",
    "CONNECTORS",
    "ROUTING_POLICIES",
    "WebhookBody",
    "MAX_MESSAGE_CHARS",
    "MAX_OPTIONS",
    "MAX_RECENT",
    "MAX_WAIT_SECONDS",
    "MAX_DEDUPE_KEY",
    "MAX_ATTACHMENTS",
    "MAX_ACTIONS",
    "PREVIEW_CHARS",
    "MAX_PREVIEW",
    "SCHEMA_TYPES",
    "conversation_of",
    "one_of",
]

T = TypeVar("T", bound=str)

KINDS: tuple[InteractionKind, ...] = get_args(InteractionKind)
REPLY_MODES: tuple[ReplyMode, ...] = get_args(ReplyMode)
# As DeepScientist documents it: the user may answer any update in a thread; only a
# decision request blocks; an approval result closes a matter and takes no reply.
DEFAULT_REPLY_MODE: dict[str, ReplyMode] = {
    "progress": "threaded", "milestone": "threaded", "answer": "threaded",
    "decision_request": "blocking", "approval_result": "none",
}  # fmt: skip
SUPPRESSIBLE = ("progress", "milestone")  # the kinds whose repeats are not sent again
# The delivery labels DeepScientist's callers send (its daemon and connector prompts use these).
IMPORTANCE = ("low", "info", "normal", "warning", "high", "critical")
RESPONSE_PHASES = ("ack", "update", "final", "control", "push")
CONNECTORS: tuple[Connector, ...] = get_args(Connector)
ROUTING_POLICIES: tuple[RoutingPolicy, ...] = get_args(RoutingPolicy)

MAX_MESSAGE_CHARS = 20_000
MAX_OPTIONS = 12
MAX_RECENT = 50
MAX_WAIT_SECONDS = 300.0
MAX_DEDUPE_KEY = 200
MAX_ATTACHMENTS = 20
MAX_ACTIONS = 10
PREVIEW_CHARS = 220  # a derived preview's length, as DeepScientist cuts it
MAX_PREVIEW = 500
SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")  # the JSON types a reply schema may name

# Options, reply schemas, attachments, actions and hints are checked by the service
# (each with its own error code), so their JSON schemas only sketch the shape: every
# byte of a tool's input schema counts against the budget past which the Codex CLI drops
# all its descriptions (fixtures/schemas/codex_rule.py), and interact's was 7.5 KB.
_OPTION_SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}, "label": {"type": "string"}}, "required": ["id", "label"]}
_REPLY_SCHEMA_SCHEMA = {"type": "object", "properties": {"decision_type": {"type": "string"}}}
_ATTACHMENT_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "url": {"type": "string"}}}
_ACTION_SCHEMA = {"type": "object", "properties": {"type": {"type": "string"}}}


class Interact(Command):
    """Tell the user something (or ask), and take every user message that arrived."""

    message: Annotated[str, Meta(description="Text or markdown for the user, at most 20000 characters.")]
    kind: Annotated[str, Meta(description=(
        "progress | milestone | decision_request | approval_result | answer."
    ))] = "progress"
    reply_mode: Annotated[str | None, Meta(description=(
        "none | threaded | blocking. When null: blocking for decision_request, none for approval_result, "
        "else threaded."
    ))] = None
    include_recent_inbound_messages: Annotated[bool, Meta(description=(
        "false: leave user messages queued."
    ))] = True
    recent_message_limit: Annotated[int, Meta(description="0-50 recent interaction records to include (default 8).")] = 8
    deliver_to_bound_conversations: Annotated[bool, Meta(description=(
        "false: record it in the quest only."
    ))] = True
    options: Annotated[list[dict[str, Any]] | None, Meta(
        description=(
            "decision_request: 2-12 {id, label, description?, recommended?}; optional if reply_schema has a decision_type."
        ),
        extra_json_schema={"anyOf": [{"type": "array", "items": _OPTION_SCHEMA, "minItems": 2, "maxItems": MAX_OPTIONS}, {"type": "null"}]},
    )] = None
    reply_schema: Annotated[dict[str, Any] | None, Meta(
        description=(
            "A decision_type label (see the examples) and/or a JSON Schema of the reply's data."
        ),
        extra_json_schema={"anyOf": [_REPLY_SCHEMA_SCHEMA, {"type": "null"}]},
    )] = None
    reply_to_interaction_id: Annotated[str | None, Meta(description="The interaction or user message this answers.")] = None
    dedupe_key: Annotated[str | None, Meta(description="A progress/milestone reusing a sent key is suppressed.")] = None
    suppress_if_unchanged: Annotated[bool | None, Meta(description=(
        "false: send a progress/milestone even if it repeats the last."
    ))] = None
    wait_timeout_seconds: Annotated[float, Meta(description=(
        "Blocking requests: 0-300 s to wait for the reply (in `reply`)."
    ))] = 0.0
    summary_preview: Annotated[str | None, Meta(description=(
        "A connector's first line, max 500 characters. When null: the message's start."
    ))] = None
    importance: Annotated[str, Meta(description="low | info | normal | warning | high | critical.")] = "info"
    response_phase: Annotated[str, Meta(description="ack | update | final | control | push.")] = "ack"
    attachments: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 20 {path or url, ...}; other keys: see the tool description."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _ATTACHMENT_SCHEMA, "maxItems": MAX_ATTACHMENTS}, {"type": "null"}]})] = None
    surface_actions: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 10 connector actions {type or command, ...}."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _ACTION_SCHEMA, "maxItems": MAX_ACTIONS}, {"type": "null"}]})] = None
    connector_hints: Annotated[dict[str, Any] | None, Meta(description=(
        "{connector: {hint: value}}, e.g. render_mode."
    ), extra_json_schema={"anyOf": [{"type": "object"}, {"type": "null"}]})] = None
    allow_free_text: Annotated[bool, Meta(description="false: a reply must pick an option (or match reply_schema).")] = True
    supersede_open_requests: Annotated[bool, Meta(description=(
        "false: a new blocking request leaves open ones open."
    ))] = True
    interaction_id: Annotated[str | None, Meta(description=(
        "Your id (1-128 of A-Za-z0-9_.:-, not yet used). When null: ia-<id>."
    ))] = None
    expects_reply: Annotated[bool | None, Meta(description=(
        "With reply_mode null: false threads a decision_request, true awaits a reply."
    ))] = None
    min_interval_seconds: Annotated[float | None, Meta(description=(
        "Progress only: held back while the last one is younger than this."
    ))] = None


class Reply(Command):
    """The user answers an interaction."""

    interaction_id: Annotated[str, Meta(description="The interaction answered, e.g. \"ia-01J...\".")]
    text: Annotated[str, Meta(description="The answer, at most 20000 characters.")]
    option_id: Annotated[str | None, Meta(description="The chosen option's id (decision requests).")] = None
    data: Annotated[dict[str, Any] | None, Meta(description="Structured answer, checked against the request's reply_schema.")] = None


class GetInteraction(Command):
    """Look up one interaction without consuming the mailbox."""

    interaction_id: Annotated[str, Meta(description="An id returned by interact(), e.g. \"ia-01J...\".")]


class InboundMessage(Result):
    """A user message or reply as the agent sees it (DeepScientist's mailbox item)."""

    message_id: str  # its event id
    conversation_id: str  # where it came from: "local:cli", "local:http", a connector's conversation
    sender: str  # always "user"
    text: str
    reply_to_interaction_id: str | None  # the interaction a reply answers
    kind: str  # message | reply
    option_id: str | None
    data: dict[str, Any] | None
    source: str
    seq: int
    created_at: str

    @classmethod
    def of(cls, item: view.InboundItem) -> InboundMessage:
        """The queued item as the agent is shown it."""
        return cls(
            message_id=item.id, conversation_id=conversation_of(item.source), sender="user", text=item.text,
            reply_to_interaction_id=item.interaction_id if item.kind == "reply" else None, kind=item.kind,
            option_id=item.option_id, data=item.data, source=item.source, seq=item.seq, created_at=item.ts,
        )


class DeliveryBatch(Result):
    """The ``mailbox.delivered`` event that handed messages to this call."""

    batch_id: str
    message_ids: list[str]


class InteractionSummary(Result):
    interaction_id: str
    seq: int
    ts: str
    kind: str
    message: str  # at most 500 characters
    reply_mode: str
    status: str
    replies: int
    summary_preview: str = ""
    expects_reply: bool = False

    @classmethod
    def of(cls, record: view.InteractionRecord) -> InteractionSummary:
        """The record in short (its message cut to 500 characters)."""
        return cls(
            interaction_id=record.interaction_id, seq=record.seq, ts=record.ts, kind=record.kind,
            message=record.message if len(record.message) <= 500 else record.message[:497] + "...",
            reply_mode=record.reply_mode, status=record.status, replies=len(record.replies),
            summary_preview=record.delivery_options.summary_preview, expects_reply=record.expects_reply,
        )


class InteractResult(Result):
    status: str  # ok | suppressed_duplicate | suppressed_min_interval
    interaction_id: str | None
    interaction_status: str | None  # sent | waiting | answered; null when suppressed
    suppressed: bool
    duplicate_of: str | None
    kind: str
    reply_mode: str
    expects_reply: bool
    decision_type: str | None
    delivered: bool
    delivery_targets: list[str]  # binding ids the message reached or is queued for
    deliveries: list[view.DeliveryStatus]
    recent_inbound_messages: list[InboundMessage]  # consumed by this call, oldest first
    delivery_batch: DeliveryBatch | None
    recent_interaction_records: list[InteractionSummary]
    open_request_count: int
    agent_instruction: str
    reply: InboundMessage | None
    guidance: str
    suppressed_reason: str | None = None  # unchanged | dedupe_key | min_interval
    retry_after_seconds: float | None = None  # suppressed_min_interval: when the next update may go
    summary_preview: str = ""
    importance: str = "info"
    response_phase: str = "ack"
    normalized_attachments: list[dict[str, Any]] = []  # paths relative to the quest
    surface_actions: list[dict[str, Any]] = []
    connector_hints: dict[str, Any] = {}
    allow_free_text: bool = True
    superseded_interaction_ids: list[str] = []  # open requests this one closed


class InteractionDetail(Result):
    interaction: view.InteractionRecord
    replies: list[InboundMessage]


class WebhookBody(Result):
    """The JSON body a webhook target receives for one attempt at one interaction: the
    interaction, DeepScientist's delivery arguments (flat, for the receiver to render as
    it can), and which binding and attempt this is."""

    quest_id: str
    interaction_id: str
    kind: str
    message: str
    reply_mode: str
    options: list[dict[str, Any]]
    reply_schema: dict[str, Any] | None
    reply_to_interaction_id: str | None
    summary_preview: str
    importance: str
    response_phase: str
    attachments: list[dict[str, Any]]
    surface_actions: list[dict[str, Any]]
    connector_hints: dict[str, Any]
    allow_free_text: bool
    expects_reply: bool
    seq: int
    ts: str
    binding_id: str
    attempt: int


# Sends an interaction to its remote targets (webhooks); the adapter that owns the
# network supplies it (``handlers.connectors.webhook.deliver``).
Deliver = Callable[[Quest, str], Awaitable[object]]


def one_of(value: object, allowed: tuple[T, ...]) -> T | None:
    """``value`` as the member of ``allowed`` it equals (typed as the vocabulary's own
    literal type), or None when it is none of them."""
    return next((a for a in allowed if a == value), None)


def conversation_of(source: str) -> str:
    """A message's conversation as DeepScientist names one ("<connector>:<...>"): a source
    that already names its connector is kept; the quest's own surfaces (cli, http, web,
    demo ...) are the local connector's conversations."""
    return source if ":" in source else f"local:{source or 'default'}"
