"""Talking to the user: ``interact()``, the mailbox, replies to requests.

The mailbox is the ``interactions`` projection: user messages (``conversation.message``,
role ``user``) and replies (``interaction.replied``) are queued items; a
``mailbox.delivered`` event hands a batch of them to the agent. Delivery is exactly
once across processes because the consumer decides what is pending and appends the
delivery event inside :meth:`Quest.transaction` (the log's append lock), so two
consumers can never both see an item as pending.

What ``interact()`` answers follows DeepScientist's mailbox contract: the user messages
and replies consumed by this call are ``recent_inbound_messages`` (each with
``message_id``, ``conversation_id``, ``text``, ``reply_to_interaction_id``), and
``agent_instruction`` says what to do with them, or to continue the current work when
none arrived; the latest outbound interactions are ``recent_interaction_records``.
``include_recent_inbound_messages=false`` leaves the queue untouched (the messages wait
for a later call). ``status`` is ``ok`` or ``suppressed_duplicate``; the interaction's
own state (sent | waiting | answered) is ``interaction_status``.

Repeated progress is suppressed: a ``progress`` or ``milestone`` update whose text
(case and whitespace folded) equals the previous update of the same kind, or whose
``dedupe_key`` was already used, writes nothing and returns ``suppressed_duplicate`` with
``duplicate_of``. With ``min_interval_seconds``, a progress update sent sooner than that
after the previous one writes nothing and returns ``suppressed_min_interval`` (with
``retry_after_seconds``); once the interval has passed, even a repeat is sent (a
heartbeat). The mailbox is still consumed.

DeepScientist's other delivery arguments (:mod:`.interactions_forms`) are kept in the
event and the record: ``attachments``, ``surface_actions``, ``connector_hints``,
``importance``, ``response_phase``, ``summary_preview``; ``interaction_id`` names the
interaction (refused when taken); ``expects_reply`` overrides the reply mode's default;
``allow_free_text=false`` makes a reply choose an option (or carry structured data);
``supersede_open_requests`` (default true) closes the open blocking requests a new
blocking request replaces, each with an ``interaction.superseded`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import new_event_id
from ds_events.events.interaction import InteractionReplied, InteractionSent, InteractionSuperseded, MailboxDelivered
from ds_events.home import Quest
from projections import interactions as view

from ds_events.services.interactions import connectors as connectors
from ds_events.services.interactions import forms as forms
from ds_events.services.commands import Command, Result

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
    "interact",
    "interact_async",
    "consume_mailbox",
    "reply",
    "get_interaction",
    "wait_for_reply",
    "decision_type_of",
    "KINDS",
    "REPLY_MODES",
    "ERROR_CODES",
    "MAX_MESSAGE_CHARS",
    "MAX_RECENT",
    "MAX_WAIT_SECONDS",
]

KINDS = ("progress", "milestone", "decision_request", "approval_result", "answer")
REPLY_MODES = ("none", "threaded", "blocking")
MAX_MESSAGE_CHARS = 20_000
MAX_OPTIONS = 12
MAX_RECENT = 50
MAX_WAIT_SECONDS = 300.0
MAX_DEDUPE_KEY = 200
_SUPPRESSIBLE = ("progress", "milestone")
# As DeepScientist documents it: the user may answer any update in a thread; only a
# decision request blocks; an approval result closes a matter and takes no reply.
_DEFAULT_REPLY_MODE = {
    "progress": "threaded", "milestone": "threaded", "answer": "threaded",
    "decision_request": "blocking", "approval_result": "none",
}
_OPTION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_OPTION_KEYS = {"id", "label", "description", "recommended"}
_SCHEMA_TYPES = {"object", "string", "number", "integer", "boolean", "array"}
_DECISION_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# Every code these services (and connectors) raise; tests check each one.
ERROR_CODES = (
    "invalid_kind",
    "empty_message",
    "message_too_long",
    "invalid_reply_mode",
    "missing_options",
    "options_not_allowed",
    "invalid_options",
    "invalid_reply_schema",
    "unknown_interaction",
    "invalid_dedupe_key",
    "invalid_limit",
    "invalid_wait",
    "reply_not_expected",
    "already_answered",
    "unknown_option",
    "reply_schema_mismatch",
    "interaction_exists",
    "request_superseded",
    "free_text_not_allowed",
) + forms.ERROR_CODES + connectors.ERROR_CODES

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
        "type": {"type": "string", "enum": sorted(_SCHEMA_TYPES)},
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
        "connector_delivery": {"type": "object", "additionalProperties": {"type": "object", "description": "Settings for that connector, e.g. {\"media_kind\": \"image\"}."}},
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
        extra_json_schema={"anyOf": [{"type": "array", "items": _OPTION_SCHEMA, "minItems": 2, "maxItems": 12}, {"type": "null"}]},
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
    response_phase: Annotated[str, Meta(description="ack (default) | update | final | control | push: where this message stands in your answer.")] = "ack"
    attachments: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 20 files to send with the message: {\"path\": \"<file in the quest or a worktree>\"} or "
        "{\"url\": \"https://...\"}, optional kind, name, label, content_type, caption, description, "
        "extracted_text_path, size_bytes, connector_delivery ({\"<connector>\": {...}}). A path must exist."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _ATTACHMENT_SCHEMA, "maxItems": 20}, {"type": "null"}]})] = None
    surface_actions: Annotated[list[dict[str, Any]] | None, Meta(description=(
        "Up to 10 device-side actions a connector may offer, each naming its action in type (or command), "
        "e.g. {\"type\": \"send_notification\", \"text\": \"Run finished\"}."
    ), extra_json_schema={"anyOf": [{"type": "array", "items": _SURFACE_ACTION_SCHEMA, "maxItems": 10}, {"type": "null"}]})] = None
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


# Sends an interaction to its remote targets (webhooks); the adapter that owns the
# network supplies it (``handlers.connectors.webhook.deliver``).
Deliver = Callable[[Quest, str], Awaitable[Any]]


def interact(quest: Quest, cmd: Interact, *, consumer: str = "") -> InteractResult:
    """Record an outbound interaction and consume the mailbox, atomically.

    Webhook targets are left ``pending``; :func:`interact_async` with a ``deliver``
    function (or the daemon's delivery loop) sends them.
    """
    mode, expects = _validate(quest, cmd)
    form = forms.check_forms(quest.root, cmd)
    fingerprint = _fingerprint(cmd.kind, cmd.message)
    with quest.transaction() as txn:
        state: view.State = quest.state("interactions")
        if cmd.interaction_id is not None and cmd.interaction_id in state.interactions:
            raise Conflict(f"interaction {cmd.interaction_id!r} already exists: choose another id or leave it null",
                           code="interaction_exists", interaction_id=cmd.interaction_id)  # fmt: skip
        reason, duplicate_of, retry_after = _suppression(state, cmd, fingerprint)
        events: list[Any] = []
        interaction_id: str | None = None
        closed: list[str] = []
        if reason is None:
            interaction_id = cmd.interaction_id or "ia-" + new_event_id()
            targets = view.route(state) if cmd.deliver_to_bound_conversations else []
            events.append(
                InteractionSent(
                    interaction_id=interaction_id, kind=cmd.kind, message=cmd.message, reply_mode=mode,  # type: ignore[arg-type]
                    options=list(cmd.options or []), reply_schema=cmd.reply_schema,
                    reply_to_interaction_id=cmd.reply_to_interaction_id, dedupe_key=cmd.dedupe_key,
                    fingerprint=fingerprint if cmd.kind in _SUPPRESSIBLE else "",
                    targets=[b.binding_id for b in targets], routing_policy=state.routing_policy,
                    delivery_options=form, expects_reply=expects,
                    min_interval_seconds=cmd.min_interval_seconds,
                )
            )
            if mode == "blocking" and cmd.supersede_open_requests:
                # DeepScientist's rule: the newest blocking request replaces the ones the
                # user has not answered yet (one open question at a time).
                closed = list(state.open_requests)
                events += [InteractionSuperseded(interaction_id=old, superseded_by=interaction_id) for old in closed]
            events += connectors.local_delivery_events(interaction_id, targets)
        # Reading the mailbox is what consumes it: a call that does not read leaves the
        # queue for a later one, so no message is taken without being returned.
        batch = _delivery_event(state, consumer, interaction_id) if cmd.include_recent_inbound_messages else None
        if batch is not None:
            events.append(batch)
        if events:
            txn.append(events)
    state = quest.state("interactions")
    delivered = [state.inbound[i] for i in batch.message_ids] if batch is not None else []
    record = state.interactions.get(interaction_id) if interaction_id else None
    result = InteractResult(
        status="ok" if reason is None else "suppressed_min_interval" if reason == "min_interval" else "suppressed_duplicate",
        interaction_id=interaction_id,
        interaction_status=record.status if record is not None else None,
        suppressed=reason is not None,
        duplicate_of=duplicate_of,
        kind=cmd.kind,
        reply_mode=mode,
        expects_reply=expects,
        decision_type=decision_type_of(cmd.reply_schema),
        delivered=False,
        delivery_targets=[],
        deliveries=[],
        recent_inbound_messages=[_inbound(i) for i in delivered],
        delivery_batch=DeliveryBatch(batch_id=batch.batch_id, message_ids=list(batch.message_ids)) if batch else None,
        recent_interaction_records=[_record_summary(r) for r in view.recent_interactions(state, cmd.recent_message_limit)],
        open_request_count=len(state.open_requests),
        agent_instruction=_agent_instruction(delivered, cmd.include_recent_inbound_messages),
        reply=None,
        guidance=_guidance(mode, duplicate_of, retry_after),
        suppressed_reason=reason,
        retry_after_seconds=None if retry_after is None else round(retry_after, 3),
        summary_preview=form.summary_preview,
        importance=form.importance,
        response_phase=form.response_phase,
        normalized_attachments=form.attachments,
        surface_actions=form.surface_actions,
        connector_hints=form.connector_hints,
        allow_free_text=form.allow_free_text,
        superseded_interaction_ids=closed,
    )
    _set_deliveries(result, record)
    return result


def _suppression(state: view.State, cmd: Interact, fingerprint: str) -> tuple[str | None, str | None, float | None]:
    """Why this update is not sent: ``(reason, duplicate_of, retry_after)``, reason None
    when it is sent. ``min_interval_seconds`` replaces the repeat rule: inside the
    interval every progress update waits; after it even a repeat goes out."""
    if cmd.kind != "progress" or cmd.min_interval_seconds is None:
        if cmd.suppress_if_unchanged is False:
            return None, None, None
        duplicate_of, reason = _duplicate_of(state, cmd.kind, fingerprint, cmd.dedupe_key)
        return reason, duplicate_of, None
    last = state.last_fingerprint.get("progress", "")
    previous = state.interactions.get(last.split(" ", 1)[1]) if last else None
    left = forms.too_soon(previous.ts if previous else None, cmd.min_interval_seconds, time.time())
    return (None, None, None) if left is None else ("min_interval", None, left)


async def interact_async(quest: Quest, cmd: Interact, *, consumer: str = "", deliver: Deliver | None = None) -> InteractResult:
    """:func:`interact` off the loop, then ``deliver`` to remote targets, then (blocking
    requests, when ``wait_timeout_seconds`` > 0) wait for the user's reply and consume it."""
    _validate_wait(cmd.wait_timeout_seconds, cmd.kind, cmd.reply_mode, cmd.expects_reply)
    result = await asyncio.to_thread(interact, quest, cmd, consumer=consumer)
    iid = result.interaction_id
    if iid is None:
        return result
    if deliver is not None and result.delivery_targets:
        await deliver(quest, iid)
        _set_deliveries(result, quest.state("interactions").interactions[iid])
    if result.reply_mode == "blocking" and cmd.wait_timeout_seconds > 0:
        answered = await wait_for_reply(quest, iid, cmd.wait_timeout_seconds)
        if answered is not None:
            batch_id, items = await asyncio.to_thread(consume_mailbox, quest, consumer=consumer, interaction_id=iid)
            # Whatever this consumed is returned here, so it is never lost, even when the
            # caller did not ask to read the mailbox.
            taken = [_inbound(i) for i in items]
            result.recent_inbound_messages += taken
            if batch_id is not None:
                earlier = result.delivery_batch.message_ids if result.delivery_batch else []
                result.delivery_batch = DeliveryBatch(batch_id=batch_id, message_ids=[*earlier, *(m.message_id for m in taken)])
            state = quest.state("interactions")
            result.interaction_status = state.interactions[iid].status
            result.open_request_count = len(state.open_requests)
            result.agent_instruction = _agent_instruction([state.inbound[m.message_id] for m in result.recent_inbound_messages], True)
            result.reply = _inbound(state.inbound[answered])
            result.guidance = "The user answered (see `reply`): act on it."
        else:
            result.guidance = (
                f"No reply within {cmd.wait_timeout_seconds:g}s. The request stays open; the answer will arrive "
                "through a later interact() call. Continue with work that does not depend on it, or stop the turn."
            )
    return result


def consume_mailbox(quest: Quest, *, consumer: str = "", interaction_id: str | None = None) -> tuple[str | None, list[view.InboundItem]]:
    """Hand every pending inbound item to the caller exactly once (across processes).

    Returns ``(batch_id, items)``; ``(None, [])`` when nothing is pending.
    """
    with quest.transaction() as txn:
        event = _delivery_event(quest.state("interactions"), consumer, interaction_id)
        if event is None:
            return None, []
        txn.append(event)
    state = quest.state("interactions")
    return event.batch_id, [state.inbound[i] for i in event.message_ids]


def reply(quest: Quest, cmd: Reply, *, source: str = "cli") -> InteractionReplied:
    """The user answers an interaction; a blocking request closes. Queued for the agent."""
    text, data, interaction_id, option_id = cmd.text, cmd.data, cmd.interaction_id, cmd.option_id
    if not text.strip():
        raise Invalid("a reply needs some text", code="empty_message")
    if len(text) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a reply is at most {MAX_MESSAGE_CHARS} characters", code="message_too_long")
    with quest.transaction() as txn:
        record = quest.state("interactions").interactions.get(interaction_id)
        if record is None:
            raise NotFound(f"no interaction {interaction_id!r} in quest {quest.id}", code="unknown_interaction")
        if record.reply_mode == "none":
            raise Conflict(f"interaction {interaction_id} does not take replies (reply_mode none)", code="reply_not_expected")
        if record.status == "answered":
            raise Conflict(f"interaction {interaction_id} was already answered", code="already_answered")
        if record.status == "superseded":
            raise Conflict(f"interaction {interaction_id} was replaced by {record.superseded_by}: answer that one",
                           code="request_superseded", superseded_by=record.superseded_by)  # fmt: skip
        ids = [o["id"] for o in record.options]
        if option_id is not None and option_id not in ids:
            raise Invalid(
                f"unknown option {option_id!r} for {interaction_id}: choose one of {', '.join(ids) or '(none)'}",
                code="unknown_option", options=ids,
            )
        if not record.delivery_options.allow_free_text and option_id is None and data is None:
            raise Invalid(
                f"{interaction_id} takes no free-text reply: choose an option"
                + (f" ({', '.join(ids)})" if ids else "") + (" or send data matching its reply_schema" if record.reply_schema else ""),
                code="free_text_not_allowed", options=ids,
            )  # fmt: skip
        if data is not None and record.reply_schema is not None:
            problems = _schema_problems(record.reply_schema, data)
            if problems:
                raise Invalid(f"reply data does not match the request's reply_schema: {'; '.join(problems)}",
                              code="reply_schema_mismatch", problems=problems)
        stored = txn.append(
            InteractionReplied(interaction_id=interaction_id, text=text, option_id=option_id, data=data, source=source)
        )
    return stored[0]  # type: ignore[return-value]


def get_interaction(quest: Quest, cmd: GetInteraction) -> InteractionDetail:
    """One interaction: its status, per-target delivery outcomes and the replies so far.
    Read-only: replies still reach the agent once, through interact()."""
    state: view.State = quest.state("interactions")
    record = state.interactions.get(cmd.interaction_id)
    if record is None:
        raise NotFound(f"no interaction {cmd.interaction_id!r}", code="unknown_interaction")
    return InteractionDetail(interaction=record, replies=[_inbound(state.inbound[r]) for r in record.replies if r in state.inbound])


async def wait_for_reply(quest: Quest, interaction_id: str, timeout: float) -> str | None:
    """Wait (bounded) until a reply to ``interaction_id`` is in the log, from any process.

    Returns the reply's event id, or None on timeout.
    """

    def answered() -> str | None:
        record = quest.state("interactions").interactions.get(interaction_id)
        return record.replies[0] if record is not None and record.replies else None

    found = answered()
    if found is not None:
        return found

    async def follow() -> str | None:
        # aclosing: returning from the loop closes the follower now (a database store's
        # listening connection with it), not whenever the generator is collected.
        async with contextlib.aclosing(quest.log.follow(quest.views.last_seq)) as events:
            async for event in events:
                if isinstance(event, InteractionReplied) and event.interaction_id == interaction_id:
                    return answered()
        return None  # pragma: no cover - follow never ends on its own

    try:
        return await asyncio.wait_for(follow(), timeout)
    except asyncio.TimeoutError:
        return answered()


# -- validation -------------------------------------------------------------------------


def _validate(quest: Quest, cmd: Interact) -> tuple[str, bool]:
    """Check every argument before anything is written; returns the effective reply mode
    and whether a reply is expected."""
    kind, message, reply_mode, options = cmd.kind, cmd.message, cmd.reply_mode, cmd.options
    reply_schema, recent_message_limit = cmd.reply_schema, cmd.recent_message_limit
    dedupe_key, reply_to_interaction_id = cmd.dedupe_key, cmd.reply_to_interaction_id
    if kind not in KINDS:
        raise Invalid(f"unknown interaction kind {kind!r}: use one of {', '.join(KINDS)}", code="invalid_kind", kinds=list(KINDS))
    if not isinstance(message, str) or not message.strip():
        raise Invalid("interact needs a non-empty message", code="empty_message")
    if len(message) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a message is at most {MAX_MESSAGE_CHARS} characters; put details in a file or artifact",
                      code="message_too_long", length=len(message))
    if reply_mode is not None and reply_mode not in REPLY_MODES:
        raise Invalid(f"unknown reply_mode {reply_mode!r}: use none, threaded or blocking", code="invalid_reply_mode")
    mode, expects = forms.reply_mode_for(kind, reply_mode, cmd.expects_reply, _DEFAULT_REPLY_MODE[kind])
    if kind == "decision_request" and mode == "none":
        raise Invalid("a decision_request must be answerable: use reply_mode blocking or threaded", code="invalid_reply_mode")
    if kind in _SUPPRESSIBLE and mode == "blocking":
        raise Invalid(f"a {kind} update cannot block; ask with kind decision_request", code="invalid_reply_mode")
    if reply_schema is not None:
        _validate_schema(reply_schema)
    forms.check_interaction_id(cmd.interaction_id)
    if not cmd.allow_free_text and (mode == "none" or not (options or (reply_schema or {}).get("properties"))):
        raise Invalid("allow_free_text=false needs something else to answer with: options, or a reply_schema with "
                      "properties, on an interaction that takes replies", code="invalid_allow_free_text")  # fmt: skip
    if kind == "decision_request":
        # A request labelled with a decision_type (DeepScientist's completion approval is
        # sent without options) may be answered in free text; any other needs options.
        if not options and decision_type_of(reply_schema) is None:
            raise Invalid("a decision_request needs options: a list of at least 2 {id, label} objects "
                          "(or a reply_schema {\"decision_type\": ...} for a free-text approval)",
                          code="missing_options")
        if options:
            _validate_options(options)
    elif options:
        raise Invalid("options are only for kind decision_request", code="options_not_allowed")
    if isinstance(recent_message_limit, bool) or not isinstance(recent_message_limit, int) or not (
        0 <= recent_message_limit <= MAX_RECENT
    ):
        raise Invalid(f"recent_message_limit must be an integer from 0 to {MAX_RECENT}", code="invalid_limit")
    if dedupe_key is not None and (not isinstance(dedupe_key, str) or not dedupe_key.strip() or len(dedupe_key) > MAX_DEDUPE_KEY):
        raise Invalid(f"dedupe_key must be a non-empty string of at most {MAX_DEDUPE_KEY} characters", code="invalid_dedupe_key")
    if reply_to_interaction_id is not None:
        state = quest.state("interactions")
        if reply_to_interaction_id not in state.interactions and reply_to_interaction_id not in state.inbound:
            raise NotFound(
                f"no interaction or user message {reply_to_interaction_id!r} to reply to", code="unknown_interaction"
            )
    return mode, expects


def _validate_wait(wait: float, kind: str, reply_mode: str | None, expects_reply: bool | None = None) -> None:
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not (0 <= wait <= MAX_WAIT_SECONDS):
        raise Invalid(f"wait_timeout_seconds must be from 0 to {MAX_WAIT_SECONDS:g}", code="invalid_wait")
    default = _DEFAULT_REPLY_MODE.get(kind, "threaded")
    blocking = reply_mode == "blocking" or (reply_mode is None and expects_reply is not False and default == "blocking")
    if wait > 0 and not blocking:
        raise Invalid("wait_timeout_seconds only applies to blocking requests", code="invalid_wait")


def _validate_options(options: Any) -> None:
    if not isinstance(options, list) or not (2 <= len(options) <= MAX_OPTIONS):
        raise Invalid(f"options must be a list of 2 to {MAX_OPTIONS} objects", code="invalid_options")
    seen: set[str] = set()
    for i, opt in enumerate(options):
        if not isinstance(opt, dict):
            raise Invalid(f"options[{i}] must be an object with id and label", code="invalid_options")
        oid, label = opt.get("id"), opt.get("label")
        if not isinstance(oid, str) or not _OPTION_ID_RE.match(oid):
            raise Invalid(f"options[{i}].id must be 1-64 letters, digits, '_', '.' or '-'", code="invalid_options")
        if oid in seen:
            raise Invalid(f"options[{i}].id {oid!r} is used twice", code="invalid_options")
        seen.add(oid)
        if not isinstance(label, str) or not label.strip():
            raise Invalid(f"options[{i}].label must be a non-empty string", code="invalid_options")
        extra = set(opt) - _OPTION_KEYS
        if extra:
            raise Invalid(f"options[{i}] has unknown keys {sorted(extra)}: use {sorted(_OPTION_KEYS)}", code="invalid_options")


def _validate_schema(schema: Any) -> None:
    """A reply schema is a small JSON Schema, a ``{"decision_type": ...}`` label, or both."""
    bad = Invalid(
        "reply_schema must be {\"decision_type\": \"...\"} and/or a small JSON Schema object: "
        "{\"type\": \"object\", \"properties\": {...}, \"required\": [...]}",
        code="invalid_reply_schema",
    )
    if not isinstance(schema, dict) or not schema:
        raise bad
    if "decision_type" in schema:
        decision = schema["decision_type"]
        if not isinstance(decision, str) or not _DECISION_TYPE_RE.match(decision):
            raise Invalid("reply_schema.decision_type must be 1-64 letters, digits, '_', '.' or '-', "
                          "e.g. \"quest_completion_approval\"", code="invalid_reply_schema")
        if set(schema) == {"decision_type"}:
            return
    if schema.get("type") not in _SCHEMA_TYPES:
        raise bad
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, dict) or not all(isinstance(p, dict) for p in props.values()):
        raise bad
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise bad
    if len(msgspec.json.encode(schema)) > 8192:
        raise bad


def decision_type_of(reply_schema: dict[str, Any] | None) -> str | None:
    """The ``decision_type`` a request's reply schema names, if any."""
    decision = (reply_schema or {}).get("decision_type")
    return decision if isinstance(decision, str) and decision else None


def _schema_problems(schema: dict[str, Any], data: dict[str, Any]) -> list[str]:
    """Check the subset of JSON Schema we accept: required keys, property types, enums."""
    problems = [f"missing {key!r}" for key in schema.get("required", []) if key not in data]
    py_types: dict[str, tuple[type, ...]] = {
        "string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,), "array": (list,), "object": (dict,),
    }
    for key, prop in schema.get("properties", {}).items():
        if key not in data:
            continue
        value, want = data[key], prop.get("type")
        if want in py_types and (not isinstance(value, py_types[want]) or (want != "boolean" and isinstance(value, bool))):
            problems.append(f"{key!r} must be {want}")
        if "enum" in prop and value not in prop["enum"]:
            problems.append(f"{key!r} must be one of {prop['enum']}")
    return problems


# -- helpers ---------------------------------------------------------------------------


def _fingerprint(kind: str, message: str) -> str:
    folded = " ".join(message.lower().split())
    return hashlib.blake2b(f"{kind}\0{folded}".encode(), digest_size=12).hexdigest()


def _duplicate_of(state: view.State, kind: str, fingerprint: str, dedupe_key: str | None) -> tuple[str | None, str | None]:
    """``(the interaction this repeats, why: dedupe_key | unchanged)`` or ``(None, None)``."""
    if kind not in _SUPPRESSIBLE:
        return None, None
    if dedupe_key is not None and dedupe_key in state.dedupe_keys:
        return state.dedupe_keys[dedupe_key], "dedupe_key"
    last = state.last_fingerprint.get(kind, "")
    if last and last.split(" ", 1)[0] == fingerprint:
        return last.split(" ", 1)[1], "unchanged"
    return None, None


def _delivery_event(state: view.State, consumer: str, interaction_id: str | None) -> MailboxDelivered | None:
    """The delivery event for everything pending now (call under the transaction)."""
    items = view.pending_items(state)
    if not items:
        return None
    return MailboxDelivered(
        batch_id="mb-" + new_event_id(),
        message_ids=[i.id for i in items],
        message_seqs=[i.seq for i in items],
        consumer=consumer,
        interaction_id=interaction_id,
    )


def _inbound(item: view.InboundItem) -> InboundMessage:
    return InboundMessage(
        message_id=item.id, conversation_id=_conversation_id(item.source), sender="user", text=item.text,
        reply_to_interaction_id=item.interaction_id if item.kind == "reply" else None, kind=item.kind,
        option_id=item.option_id, data=item.data, source=item.source, seq=item.seq, created_at=item.ts,
    )


def _conversation_id(source: str) -> str:
    """A message's conversation as DeepScientist names one ("<connector>:<...>"): a source
    that already names its connector is kept; the quest's own surfaces (cli, http, web,
    demo ...) are the local connector's conversations."""
    return source if ":" in source else f"local:{source or 'default'}"


def _record_summary(record: view.InteractionRecord) -> InteractionSummary:
    return InteractionSummary(
        interaction_id=record.interaction_id,
        seq=record.seq,
        ts=record.ts,
        kind=record.kind,
        message=record.message if len(record.message) <= 500 else record.message[:497] + "...",
        reply_mode=record.reply_mode,
        status=record.status,
        replies=len(record.replies),
        summary_preview=record.delivery_options.summary_preview,
        expects_reply=record.expects_reply,
    )


def _set_deliveries(result: InteractResult, record: view.InteractionRecord | None) -> None:
    """Fill the delivery fields from the record: a target counts as reached when its
    delivery succeeded or is still under way (pending or retrying); a final failure does not."""
    result.deliveries = [] if record is None else list(record.deliveries.values())
    result.delivery_targets = [d.binding_id for d in result.deliveries if d.outcome != "failed"]
    result.delivered = bool(result.delivery_targets)


def _agent_instruction(delivered: list[view.InboundItem], read: bool) -> str:
    if not read:
        return ("The mailbox was not read (include_recent_inbound_messages=false): queued user messages stay "
                "queued until an interact() call reads them. Continue the current work.")
    if not delivered:
        return "No new user message arrived. Continue the current work as planned."
    lines = [
        f"{len(delivered)} new user message(s), oldest first. They come before the current subtask: "
        "pause work they make stale, answer them with one substantive interact() (kind=\"answer\" when "
        "it is a question), and resume the old plan only if they leave the goal unchanged.",
        "",
    ]
    for n, item in enumerate(delivered, 1):
        about = f" (reply to {item.interaction_id}" + (f", option {item.option_id}" if item.option_id else "") + ")" \
            if item.kind == "reply" else ""
        lines.append(f"{n}. [{_conversation_id(item.source)}]{about} {item.text}")
    return "\n".join(lines)


def _guidance(mode: str, duplicate_of: str | None, retry_after: float | None = None) -> str:
    parts = []
    if duplicate_of:
        parts.append(f"Suppressed: this repeats {duplicate_of}; nothing was sent.")
    elif retry_after is not None:
        parts.append(f"Suppressed: the previous progress update is too recent (min_interval_seconds); nothing was "
                     f"sent. The next one may go in {retry_after:.0f}s.")
    else:
        parts.append("Sent.")
    if mode == "blocking":
        parts.append("This request stays open until the user replies; the reply will arrive in "
                     "recent_inbound_messages of a later interact() call.")
    parts.append("Read agent_instruction for what the user sent.")
    return " ".join(parts)
