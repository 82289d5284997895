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

# Options and reply schemas are checked by the service (with their own error codes);
# their JSON schema tells the caller the shape up front.
_OPTION_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "Short id the user answers with, e.g. \"a\"."},
        "label": {"type": "string", "description": "What the option is, in a few words."},
        "description": {"type": "string", "description": "Optional longer explanation."},
        "recommended": {"type": "boolean", "description": "Optional: mark the option you recommend."},
    },
    "required": ["id", "label"],
    "additionalProperties": False,
}
_REPLY_SCHEMA_SCHEMA = {
    "type": "object",
    "properties": {
        "decision_type": {"type": "string", "description": "What the decision is about, e.g. \"quest_completion_approval\"."},
        "type": {"type": "string", "enum": list(SCHEMA_TYPES)},
        "properties": {"type": "object", "additionalProperties": {"type": "object"}},
        "required": {"type": "array", "items": {"type": "string"}},
    },
}


_ATTACHMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A file of the quest or of one of its worktrees (relative or absolute)."},
        "url": {"type": "string", "description": "Or an http(s) URL."},
        "kind": {"type": "string"}, "name": {"type": "string"}, "label": {"type": "string"},
        "content_type": {"type": "string", "description": "e.g. image/png, application/pdf."},
        "caption": {"type": "string"}, "description": {"type": "string"},
        "extracted_text_path": {"type": "string", "description": "A text rendering of the file, in the quest."},
        "size_bytes": {"type": "integer"},
        "connector_delivery": {
            "type": "object",
            "additionalProperties": {"type": "object", "description": "Settings for that connector, e.g. {\"media_kind\": \"image\"}."},
        },
    },
    "additionalProperties": False,
}  # fmt: skip
_SURFACE_ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "description": "The action, e.g. send_notification, take_photo."},
        "command": {"type": "string", "description": "Or the action named as command."},
    },
    "description": "The action and its parameters (text, title, ...), as the connector takes them.",
}
_HINTS_SCHEMA = {"type": "object", "additionalProperties": {"type": "object", "description": "That connector's hints."}}


class Interact(Command):
    """Tell the user something (or ask), and take every user message that arrived."""

    message: Annotated[str, Meta(description="What you tell or ask the user (plain text or markdown, at most 20000 characters).")]
    kind: Annotated[str, Meta(description=(
        "progress (routine status) | milestone (a result worth noting) | decision_request (the user must "
        "choose) | approval_result (outcome of something the user approved) | answer (you answer a question)."
    ))] = "progress"
    reply_mode: Annotated[str | None, Meta(description=(
        "none | threaded | blocking. When null: blocking for decision_request, none for approval_result, "
        "threaded otherwise (the user may answer in a thread). A blocking "
        "request stays open until the user replies; progress and milestone cannot block; a decision_request "
        "cannot be none."
    ))] = None
    include_recent_inbound_messages: Annotated[bool, Meta(description=(
        "Read the mailbox (default true): take every user message and reply queued since the last read and "
        "return them in recent_inbound_messages, each exactly once. false leaves them queued for a later call."
    ))] = True
    recent_message_limit: Annotated[int, Meta(description="0-50: how many recent interaction records to include (default 8).")] = 8
    deliver_to_bound_conversations: Annotated[bool, Meta(description=(
        "Send the message to the quest's bound conversations (default true). false records it in the quest only."
    ))] = True
    options: Annotated[list[dict[str, Any]] | None, Meta(
        description="decision_request only: 2-12 options; required there unless reply_schema names a decision_type.",
        extra_json_schema={"anyOf": [{"type": "array", "items": _OPTION_SCHEMA, "minItems": 2, "maxItems": MAX_OPTIONS}, {"type": "null"}]},
    )] = None
    reply_schema: Annotated[dict[str, Any] | None, Meta(
        description=(
            'Optional. {"decision_type": "quest_completion_approval"} names what a decision is about; a small '
            'JSON Schema {"type": "object", "properties": {...}, "required": [...]} is what structured reply data '
            "must match. Both may be given together."
        ),
        extra_json_schema={"anyOf": [_REPLY_SCHEMA_SCHEMA, {"type": "null"}]},
    )] = None
    reply_to_interaction_id: Annotated[str | None, Meta(description="The interaction id or user message id this answers.")] = None
    dedupe_key: Annotated[str | None, Meta(description="A progress or milestone update reusing a key already sent is suppressed.")] = None
    suppress_if_unchanged: Annotated[bool | None, Meta(description=(
        "null or true (default): a progress or milestone update that repeats the previous one (or reuses a "
        "dedupe_key) is suppressed. false: send it even so."
    ))] = None
    wait_timeout_seconds: Annotated[float, Meta(description=(
        "Blocking requests only, 0-300: wait this long for the reply and return it in `reply` (status "
        "answered). 0 returns at once."
    ))] = 0.0
    summary_preview: Annotated[str | None, Meta(description=(
        "One short line a connector shows first (at most 500 characters). When null: the message's first 220 characters."
    ))] = None
    importance: Annotated[str, Meta(description="low | info (default) | normal | warning | high | critical.")] = "info"
    response_phase: Annotated[str, Meta(
        description="ack (default) | update | final | control | push: where this message stands in your answer."
    )] = "ack"
    attachments: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 20 files to send with the message: {\"path\": \"<file in the quest or a worktree>\"} or "
        "{\"url\": \"https://...\"}, optional kind, name, label, content_type, caption, description, "
        "extracted_text_path, size_bytes, connector_delivery ({\"<connector>\": {...}}). A path must exist."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _ATTACHMENT_SCHEMA, "maxItems": MAX_ATTACHMENTS}, {"type": "null"}]})] = None
    surface_actions: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 10 device-side actions a connector may offer, each naming its action in type (or command), "
        "e.g. {\"type\": \"send_notification\", \"text\": \"Run finished\"}."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _SURFACE_ACTION_SCHEMA, "maxItems": MAX_ACTIONS}, {"type": "null"}]})] = None
    connector_hints: Annotated[dict[str, Any] | None, Meta(description=(
        "Per-connector rendering hints, e.g. {\"qq\": {\"render_mode\": \"markdown\"}}."
    ), extra_json_schema={"anyOf": [_HINTS_SCHEMA, {"type": "null"}]})] = None
    allow_free_text: Annotated[bool, Meta(description=(
        "true (default): a reply may be free text. false: a reply must choose one of the options (or carry "
        "data matching reply_schema)."
    ))] = True
    supersede_open_requests: Annotated[bool, Meta(description=(
        "A new blocking request closes the blocking requests still open (default true; each gets an "
        "interaction.superseded event and a late reply to it is refused). false keeps them open."
    ))] = True
    interaction_id: Annotated[str | None, Meta(description=(
        "Name the interaction yourself (1-128 letters, digits, '_', '.', ':', '-'); refused when already used. "
        "When null: ia-<id>."
    ))] = None
    expects_reply: Annotated[bool | None, Meta(description=(
        "Overrides the reply mode's default when reply_mode is null: false makes a decision_request threaded "
        "(nothing waits for the answer); true makes it blocking, and marks other kinds as awaiting an answer "
        "in a thread. With an explicit reply_mode it must agree with it."
    ))] = None
    min_interval_seconds: Annotated[float | None, Meta(description=(
        "Progress only: suppress this update if the previous progress update is less than this many seconds "
        "old (status suppressed_min_interval); after that even a repeat is sent."
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
