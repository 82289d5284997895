"""The `interactions` view: mailbox, open requests, interaction records, bindings, deliveries.

The mailbox is a fold, not a file: user-role ``conversation.message`` events and
``interaction.replied`` events are queued inbound items; a ``mailbox.delivered`` event
takes its items out of ``pending``. Because the state is rebuilt from the log in every
process, no process ever read-modify-writes a shared mailbox file.

Materialises ``interactions/records/<interaction_id>.json`` (one per interaction),
``interactions/open_requests.md`` (what waits for the user, and how to answer) and
``interactions/bindings.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec
from msgspec.structs import replace

from ds_events.events import ConversationMessage, Event, QuestCreated
from ds_events.events.interaction import (
    ConnectorBound,
    ConnectorUnbound,
    DeliveryAttempted,
    DeliveryOptions,
    InteractionReplied,
    InteractionSent,
    InteractionSuperseded,
    MailboxDelivered,
    RoutingPolicyChanged,
)

from .base import Files, Projection

__all__ = [
    "State",
    "InboundItem",
    "InteractionRecord",
    "Binding",
    "DeliveryStatus",
    "PROJECTION",
    "LOCAL_BINDING_ID",
    "DEFAULT_ROUTING_POLICY",
    "pending_items",
    "route",
    "recent_interactions",
    "recent_inbound",
    "unfinished_deliveries",
]

LOCAL_BINDING_ID = "local"
DEFAULT_ROUTING_POLICY = "fanout_all"


class InboundItem(msgspec.Struct, kw_only=True):
    """A queued message or reply from the user: the event that brought it (a user-role
    ``conversation.message`` or an ``interaction.replied``), kept whole rather than
    copied field by field, and the ``mailbox.delivered`` batch that took it, once one
    did. The properties read the event (``id`` is its event id)."""

    event: ConversationMessage | InteractionReplied
    delivered_batch: str | None = None
    delivered_seq: int = 0

    @property
    def id(self) -> str:
        return self.event.id

    @property
    def seq(self) -> int:
        return self.event.seq

    @property
    def ts(self) -> str:
        return self.event.ts

    @property
    def kind(self) -> Literal["message", "reply"]:
        return "reply" if isinstance(self.event, InteractionReplied) else "message"

    @property
    def text(self) -> str:
        return self.event.text if isinstance(self.event, InteractionReplied) else self.event.content

    @property
    def source(self) -> str:
        return self.event.source

    @property
    def interaction_id(self) -> str | None:
        """The interaction a reply answers (None for a message)."""
        return self.event.interaction_id if isinstance(self.event, InteractionReplied) else None

    @property
    def option_id(self) -> str | None:
        return self.event.option_id if isinstance(self.event, InteractionReplied) else None

    @property
    def data(self) -> dict[str, Any] | None:
        return self.event.data if isinstance(self.event, InteractionReplied) else None


class DeliveryStatus(msgspec.Struct, kw_only=True):
    binding_id: str
    connector: str
    attempts: int = 0
    outcome: str = "pending"  # pending | delivered | retrying | failed
    status_code: int | None = None
    error: str = ""


# What an interaction's record file, ``get_interaction`` and the HTTP routes show, in a
# flat shape they pin (the golden replay, the MCP output schema): so it copies the sent
# event's fields instead of holding the event, as an inbound item does. Its class has no
# docstring on purpose: one would become a description in that output schema.
class InteractionRecord(msgspec.Struct, kw_only=True):
    interaction_id: str
    seq: int
    ts: str
    actor: str
    kind: str
    message: str
    reply_mode: str
    options: list[dict[str, Any]] = []
    reply_schema: dict[str, Any] | None = None
    reply_to_interaction_id: str | None = None
    dedupe_key: str | None = None
    fingerprint: str = ""
    status: str = "sent"  # sent | waiting (blocking, unanswered) | answered | superseded
    replies: list[str] = []  # event ids of the user's replies
    deliveries: dict[str, DeliveryStatus] = {}
    delivery_options: DeliveryOptions = msgspec.field(default_factory=DeliveryOptions)
    expects_reply: bool = False
    superseded_by: str | None = None


# A ``delivery.binding_added`` as ``interactions/bindings.json`` shows it (flat, pinned
# like the records), and whether it is still bound.
class Binding(msgspec.Struct, kw_only=True):
    binding_id: str
    connector: str
    target: str
    label: str = ""
    primary: bool = False
    settings: dict[str, Any] = {}
    seq: int = 0
    active: bool = True


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    inbound: dict[str, InboundItem] = {}
    pending: list[str] = []  # ids of undelivered inbound items, in log order
    interactions: dict[str, InteractionRecord] = {}  # in log order
    open_requests: list[str] = []  # blocking interactions awaiting a reply
    bindings: dict[str, Binding] = {}
    routing_policy: str = DEFAULT_ROUTING_POLICY
    last_fingerprint: dict[str, str] = {}  # kind -> "fingerprint interaction_id" of the latest
    dedupe_keys: dict[str, str] = {}  # dedupe_key -> interaction id that used it first
    batches: int = 0
    # A delivery naming an item that was already delivered: with transactions this stays
    # 0; it is kept so an audit can prove it.
    duplicate_deliveries: int = 0


def initial() -> State:
    local = Binding(binding_id=LOCAL_BINDING_ID, connector="local", target="quest", label="this quest (CLI, web)")
    return State(bindings={LOCAL_BINDING_ID: local})


def apply(state: State, event: Event) -> State:
    # Records already in the state are replaced, never changed in place: a state handed
    # out earlier shares them (the rule in projections.base).
    state.last_seq = event.seq
    match event:
        case ConversationMessage(role="user"):
            _enqueue(state, InboundItem(event=event))
        case InteractionSent():
            _apply_sent(state, event)
        case InteractionReplied(interaction_id=iid):
            _enqueue(state, InboundItem(event=event))
            record = state.interactions.get(iid)
            if record is not None:
                answered = record.reply_mode == "blocking"
                state.interactions[iid] = replace(
                    record, replies=[*record.replies, event.id], status="answered" if answered else record.status
                )
                if answered and iid in state.open_requests:
                    state.open_requests.remove(iid)
        case InteractionSuperseded(interaction_id=iid, superseded_by=by):
            record = state.interactions.get(iid)
            if record is not None and record.status == "waiting":
                state.interactions[iid] = replace(record, status="superseded", superseded_by=by)
            if iid in state.open_requests:
                state.open_requests.remove(iid)
        case MailboxDelivered(batch_id=batch_id, message_ids=ids):
            state.batches += 1
            taken: set[str] = set()
            for mid in ids:
                queued = state.inbound.get(mid)
                if queued is None:
                    continue
                if queued.delivered_batch is not None:
                    state.duplicate_deliveries += 1
                    continue
                state.inbound[mid] = replace(queued, delivered_batch=batch_id, delivered_seq=event.seq)
                taken.add(mid)
            if taken:  # one pass, so a large backlog costs O(pending), not O(pending^2)
                state.pending = [i for i in state.pending if i not in taken]
        case ConnectorBound():
            if event.primary:  # one primary at a time: the newest wins
                for bid, b in list(state.bindings.items()):
                    if b.primary:
                        state.bindings[bid] = replace(b, primary=False)
            state.bindings[event.binding_id] = Binding(
                binding_id=event.binding_id, connector=event.connector, target=event.target, label=event.label,
                primary=event.primary, settings=dict(event.settings), seq=event.seq,
            )
        case ConnectorUnbound(binding_id=bid):
            if bid in state.bindings and bid != LOCAL_BINDING_ID:
                state.bindings[bid] = replace(state.bindings[bid], active=False, primary=False)
        case RoutingPolicyChanged(policy=policy):
            state.routing_policy = policy
        case DeliveryAttempted():
            record = state.interactions.get(event.interaction_id)
            if record is not None:
                status = record.deliveries.get(event.binding_id) or DeliveryStatus(
                    binding_id=event.binding_id, connector=event.connector
                )
                status = replace(
                    status, attempts=max(status.attempts, event.attempt), outcome=event.outcome,
                    status_code=event.status_code, error=event.error,
                )
                deliveries = {**record.deliveries, event.binding_id: status}
                state.interactions[event.interaction_id] = replace(record, deliveries=deliveries)
    return state


# -- queries (pure) -------------------------------------------------------------------


def pending_items(state: State) -> list[InboundItem]:
    """Queued inbound items not yet delivered to the agent, oldest first."""
    return [state.inbound[i] for i in state.pending]


def route(state: State, policy: str | None = None) -> list[Binding]:
    """The active bindings an outbound interaction goes to under ``policy``.

    ``fanout_all``: every active binding. ``primary_only``: the primary binding, or the
    local one when none is primary (so nothing goes nowhere). ``primary_plus_local``:
    the primary binding and the local one.
    """
    policy = policy or state.routing_policy
    active = [b for b in state.bindings.values() if b.active]
    local = state.bindings[LOCAL_BINDING_ID]
    primary = next((b for b in active if b.primary and b.binding_id != LOCAL_BINDING_ID), None)
    if policy == "fanout_all":
        return active
    if policy == "primary_only":
        return [primary or local]
    return [local] + ([primary] if primary is not None else [])


def recent_interactions(state: State, limit: int) -> list[InteractionRecord]:
    if limit <= 0:
        return []
    return list(state.interactions.values())[-limit:]


def recent_inbound(state: State, limit: int, *, delivered_only: bool = True) -> list[InboundItem]:
    if limit <= 0:
        return []
    items = [i for i in state.inbound.values() if i.delivered_batch is not None or not delivered_only]
    return items[-limit:]


def unfinished_deliveries(state: State) -> list[tuple[InteractionRecord, DeliveryStatus]]:
    """Deliveries without a final outcome (a process died mid-retry): to resume."""
    out = []
    for record in state.interactions.values():
        for status in record.deliveries.values():
            if status.outcome in ("pending", "retrying"):
                out.append((record, status))
    return out


# -- rendering ------------------------------------------------------------------------


def render(state: State) -> Files:
    files: Files = {f"interactions/records/{iid}.json": _record_json(r) for iid, r in state.interactions.items()}
    files["interactions/open_requests.md"] = _open_requests_md(state)
    files["interactions/bindings.json"] = _bindings_json(state)
    return files


def render_changed(state: State, events: Iterable[Event]) -> Files:
    files: Files = {}
    for event in events:
        match event:
            case InteractionSent(interaction_id=iid) | InteractionReplied(interaction_id=iid) | DeliveryAttempted(
                interaction_id=iid
            ) | InteractionSuperseded(interaction_id=iid):
                if iid in state.interactions:
                    files[f"interactions/records/{iid}.json"] = _record_json(state.interactions[iid])
                files["interactions/open_requests.md"] = _open_requests_md(state)
            case QuestCreated():
                # A new quest shows its (local-only) bindings and an empty request list
                # from the start, as a full render does.
                files["interactions/bindings.json"] = _bindings_json(state)
                files["interactions/open_requests.md"] = _open_requests_md(state)
            case ConnectorBound() | ConnectorUnbound() | RoutingPolicyChanged():
                files["interactions/bindings.json"] = _bindings_json(state)
    return files


_pretty = msgspec.json.Encoder(order="deterministic")


def _record_json(record: InteractionRecord) -> bytes:
    return msgspec.json.format(_pretty.encode(record), indent=2) + b"\n"


def _bindings_json(state: State) -> bytes:
    doc = {"routing_policy": state.routing_policy, "bindings": list(state.bindings.values())}
    return msgspec.json.format(_pretty.encode(doc), indent=2) + b"\n"


def _open_requests_md(state: State) -> bytes:
    lines = ["# Open requests", ""]
    if not state.open_requests:
        lines.append("_Nothing is waiting for you._")
    for iid in state.open_requests:
        r = state.interactions[iid]
        lines += [f"## `{iid}` ({r.kind}, {r.ts})", "", r.message, ""]
        for opt in r.options:
            lines.append(f"- `{opt.get('id')}`: {opt.get('label', '')}")
        if r.options:
            lines.append("")
        hint = f"ds reply QUEST {iid} \"TEXT\"" + (" --option ID" if r.options else "")
        lines += [f"Answer with `{hint}`.", ""]
    return ("\n".join(lines).rstrip("\n") + "\n").encode()


def _enqueue(state: State, item: InboundItem) -> None:
    if item.id in state.inbound:
        return
    state.inbound[item.id] = item
    state.pending.append(item.id)


def _apply_sent(state: State, event: InteractionSent) -> None:
    record = InteractionRecord(
        interaction_id=event.interaction_id, seq=event.seq, ts=event.ts, actor=event.actor, kind=event.kind,
        message=event.message, reply_mode=event.reply_mode, options=list(event.options),
        reply_schema=event.reply_schema, reply_to_interaction_id=event.reply_to_interaction_id,
        dedupe_key=event.dedupe_key, fingerprint=event.fingerprint,
        status="waiting" if event.reply_mode == "blocking" else "sent",
        delivery_options=event.delivery_options or DeliveryOptions(),
        expects_reply=event.reply_mode == "blocking" if event.expects_reply is None else event.expects_reply,
        deliveries={
            bid: DeliveryStatus(binding_id=bid, connector=state.bindings[bid].connector if bid in state.bindings else "")
            for bid in event.targets
        },
    )
    state.interactions[event.interaction_id] = record
    if event.reply_mode == "blocking":
        state.open_requests.append(event.interaction_id)
    if event.fingerprint:
        state.last_fingerprint[event.kind] = f"{event.fingerprint} {event.interaction_id}"
    if event.dedupe_key and event.dedupe_key not in state.dedupe_keys:
        state.dedupe_keys[event.dedupe_key] = event.interaction_id


PROJECTION = Projection(
    name="interactions", state_type=State, initial=initial, apply=apply, render=render, render_changed=render_changed,
    version=2,  # 2: an inbound item keeps its event (older snapshots: refolded)
)
