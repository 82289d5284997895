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

DeepScientist's other delivery arguments (:mod:`.forms`) are kept in the
event and the record: ``attachments``, ``surface_actions``, ``connector_hints``,
``importance``, ``response_phase``, ``summary_preview``; ``interaction_id`` names the
interaction (refused when taken); ``expects_reply`` overrides the reply mode's default;
``allow_free_text=false`` makes a reply choose an option (or carry structured data);
``supersede_open_requests`` (default true) closes the open blocking requests a new
blocking request replaces, each with an ``interaction.superseded`` event.

The commands and answers are :mod:`.commands`'; the checks :mod:`.checks`' and
:mod:`.forms`'.
"""

from __future__ import annotations

import asyncio
import hashlib
import time

from ds_events.crashpoints import crashpoint
from ds_events.errors import Conflict, NotFound
from ds_events.events import Event, new_event_id
from ds_events.events.interaction import InteractionReplied, InteractionSent, InteractionSuperseded, MailboxDelivered
from ds_events.home import Quest
from projections import interactions as view

from . import connectors, forms
from .checks import check_interact, check_reply, check_reply_text, check_wait, decision_type_of
from .commands import (
    SUPPRESSIBLE,
    Deliver,
    DeliveryBatch,
    GetInteraction,
    InboundMessage,
    Interact,
    InteractionDetail,
    InteractionSummary,
    InteractResult,
    Reply,
)

__all__ = [
    "interact",
    "interact_async",
    "consume_mailbox",
    "reply",
    "get_interaction",
    "wait_for_reply",
]


def interact(quest: Quest, cmd: Interact, *, consumer: str = "") -> InteractResult:
    """Record an outbound interaction and consume the mailbox, atomically.

    Webhook targets are left ``pending``; :func:`interact_async` with a ``deliver``
    function (or the daemon's delivery loop) sends them.
    """
    kind, mode, expects = check_interact(quest.state("interactions"), cmd)
    form = forms.check_forms(quest.root, cmd)
    fingerprint = _fingerprint(cmd.kind, cmd.message)
    with quest.transaction() as txn:
        state = quest.state("interactions")
        if cmd.interaction_id is not None and cmd.interaction_id in state.interactions:
            raise Conflict(f"interaction {cmd.interaction_id!r} already exists: choose another id or leave it null",
                           code="interaction_exists", interaction_id=cmd.interaction_id)  # fmt: skip
        reason, duplicate_of, retry_after = _suppression(state, cmd, fingerprint)
        events: list[Event] = []
        interaction_id: str | None = None
        closed: list[str] = []
        if reason is None:
            interaction_id = cmd.interaction_id or "ia-" + new_event_id()
            targets = view.route(state) if cmd.deliver_to_bound_conversations else []
            events.append(
                InteractionSent(
                    interaction_id=interaction_id, kind=kind, message=cmd.message, reply_mode=mode,
                    options=list(cmd.options or []), reply_schema=cmd.reply_schema,
                    reply_to_interaction_id=cmd.reply_to_interaction_id, dedupe_key=cmd.dedupe_key,
                    fingerprint=fingerprint if cmd.kind in SUPPRESSIBLE else "",
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
            crashpoint("mcp.interact.before_append")
            txn.append(events)
    crashpoint("mcp.interact.after_append", when=bool(events))
    state = quest.state("interactions")
    delivered = [InboundMessage.of(state.inbound[i]) for i in batch.message_ids] if batch is not None else []
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
        recent_inbound_messages=delivered,
        delivery_batch=DeliveryBatch(batch_id=batch.batch_id, message_ids=list(batch.message_ids)) if batch else None,
        recent_interaction_records=[InteractionSummary.of(r) for r in view.recent_interactions(state, cmd.recent_message_limit)],
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
    check_wait(cmd)
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
            taken = [InboundMessage.of(i) for i in items]
            result.recent_inbound_messages += taken
            if batch_id is not None:
                earlier = result.delivery_batch.message_ids if result.delivery_batch else []
                result.delivery_batch = DeliveryBatch(batch_id=batch_id, message_ids=[*earlier, *(m.message_id for m in taken)])
            state = quest.state("interactions")
            result.interaction_status = state.interactions[iid].status
            result.open_request_count = len(state.open_requests)
            result.agent_instruction = _agent_instruction(result.recent_inbound_messages, True)
            result.reply = InboundMessage.of(state.inbound[answered])
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
    check_reply_text(cmd)
    with quest.transaction() as txn:
        record = quest.state("interactions").interactions.get(cmd.interaction_id)
        if record is None:
            raise NotFound(f"no interaction {cmd.interaction_id!r} in quest {quest.id}", code="unknown_interaction")
        check_reply(record, cmd)
        event = InteractionReplied(
            interaction_id=cmd.interaction_id, text=cmd.text, option_id=cmd.option_id, data=cmd.data, source=source
        )
        return txn.append(event)


def get_interaction(quest: Quest, cmd: GetInteraction) -> InteractionDetail:
    """One interaction: its status, per-target delivery outcomes and the replies so far.
    Read-only: replies still reach the agent once, through interact()."""
    state = quest.state("interactions")
    record = state.interactions.get(cmd.interaction_id)
    if record is None:
        raise NotFound(f"no interaction {cmd.interaction_id!r}", code="unknown_interaction")
    replies = [InboundMessage.of(state.inbound[r]) for r in record.replies if r in state.inbound]
    return InteractionDetail(interaction=record, replies=replies)


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
        events = quest.log.follow(quest.views.last_seq)
        try:
            async for event in events:
                if isinstance(event, InteractionReplied) and event.interaction_id == interaction_id:
                    return answered()
        finally:
            # Returning closes the follower now (a database store's listening connection
            # with it), not whenever it is collected.
            await events.aclose()
        return None  # pragma: no cover - follow never ends on its own

    try:
        return await asyncio.wait_for(follow(), timeout)
    except TimeoutError:
        return answered()


# -- helpers ---------------------------------------------------------------------------


def _fingerprint(kind: str, message: str) -> str:
    folded = " ".join(message.lower().split())
    return hashlib.blake2b(f"{kind}\0{folded}".encode(), digest_size=12).hexdigest()


def _duplicate_of(state: view.State, kind: str, fingerprint: str, dedupe_key: str | None) -> tuple[str | None, str | None]:
    """``(the interaction this repeats, why: dedupe_key | unchanged)`` or ``(None, None)``."""
    if kind not in SUPPRESSIBLE:
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


def _set_deliveries(result: InteractResult, record: view.InteractionRecord | None) -> None:
    """Fill the delivery fields from the record: a target counts as reached when its
    delivery succeeded or is still under way (pending or retrying); a final failure does not."""
    result.deliveries = [] if record is None else list(record.deliveries.values())
    result.delivery_targets = [d.binding_id for d in result.deliveries if d.outcome != "failed"]
    result.delivered = bool(result.delivery_targets)


def _agent_instruction(delivered: list[InboundMessage], read: bool) -> str:
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
        about = f" (reply to {item.reply_to_interaction_id}" + (f", option {item.option_id}" if item.option_id else "") + ")" \
            if item.kind == "reply" else ""
        lines.append(f"{n}. [{item.conversation_id}]{about} {item.text}")
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
