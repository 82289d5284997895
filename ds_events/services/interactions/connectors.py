"""Delivery of outbound interactions: bindings, the routing policy, the connectors.

Bindings (which conversations a quest reports to) are events; the ``local`` binding is
always there (the quest's own CLI/web view) and cannot be removed. The routing policy
(``fanout_all`` | ``primary_only`` | ``primary_plus_local``) picks the targets of each
interaction when it is sent (:func:`projections.interactions.route`).

Connectors: ``local`` delivers by being in the log (its attempt is recorded with the
interaction, in the same append); ``webhook`` targets are POSTed by an adapter that owns
the network (``handlers.connectors.webhook``): this module says what is left to send
(:func:`webhook_jobs`, resuming after the last recorded attempt) and records each
attempt's result (:func:`record_attempt`) as a ``delivery.attempted`` event whose id is
derived from (interaction, binding, attempt), so a retried record is a no-op.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events.interaction import (
    ConnectorBound,
    ConnectorUnbound,
    DeliveryAttempted,
    DeliveryOutcome,
    RoutingPolicyChanged,
)
from ds_events.home import Quest
from projections import interactions as view

from .commands import CONNECTORS, ROUTING_POLICIES, WebhookBody, one_of

__all__ = [
    "bind",
    "unbind",
    "set_routing_policy",
    "WebhookJob",
    "webhook_jobs",
    "unfinished_interactions",
    "attempt_outcome",
    "record_attempt",
    "local_delivery_events",
    "webhook_payload",
    # the vocabulary bind and set_routing_policy take (the contract's, in commands)
    "CONNECTORS",
    "ROUTING_POLICIES",
]

_BINDING_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# setting -> (types, low, high)
_SETTINGS: dict[str, tuple[tuple[type, ...], float, float]] = {
    "max_attempts": ((int,), 1, 10),
    "backoff_seconds": ((int, float), 0, 60),
    "timeout_seconds": ((int, float), 0.05, 120),
}


def bind(
    quest: Quest,
    connector: str,
    target: str,
    *,
    primary: bool = False,
    label: str = "",
    settings: dict[str, Any] | None = None,
    binding_id: str | None = None,
) -> ConnectorBound:
    """Report this quest's interactions to ``target`` through ``connector``.

    ``webhook`` targets are http(s) URLs; ``settings`` may hold ``max_attempts``,
    ``backoff_seconds``, ``timeout_seconds`` and ``token_env`` (the name of an
    environment variable holding a bearer token: the secret itself never enters the log).
    """
    known = one_of(connector, CONNECTORS)
    if known is None:
        raise Invalid(f"unknown connector {connector!r}: use webhook (local is always bound)", code="unknown_connector")
    if known == "local":
        raise Conflict("the local connector is always bound", code="binding_exists", binding_id=view.LOCAL_BINDING_ID)
    _check_url(target)
    settings = _check_settings(settings or {})
    if binding_id is None:
        binding_id = "webhook-" + hashlib.blake2b(target.encode(), digest_size=4).hexdigest()
    elif not isinstance(binding_id, str) or not _BINDING_ID_RE.match(binding_id) or binding_id == view.LOCAL_BINDING_ID:
        raise Invalid("binding_id must be 1-64 lowercase letters, digits, '-' or '_' (not 'local')", code="invalid_binding_id")
    with quest.transaction() as txn:
        state = quest.state("interactions")
        for b in state.bindings.values():
            if b.active and (b.binding_id == binding_id or (b.connector == connector and b.target == target)):
                raise Conflict(f"already bound as {b.binding_id}: unbind it first", code="binding_exists", binding_id=b.binding_id)
        bound = ConnectorBound(
            binding_id=binding_id, connector=known, target=target, label=label, primary=bool(primary), settings=settings
        )
        return txn.append(bound)


def unbind(quest: Quest, binding_id: str, *, reason: str = "") -> ConnectorUnbound:
    if binding_id == view.LOCAL_BINDING_ID:
        raise Conflict("the local binding cannot be removed", code="cannot_unbind_local")
    with quest.transaction() as txn:
        binding = quest.state("interactions").bindings.get(binding_id)
        if binding is None or not binding.active:
            raise NotFound(f"no active binding {binding_id!r}: see interactions/bindings.json", code="unknown_binding")
        return txn.append(ConnectorUnbound(binding_id=binding_id, reason=reason))


def set_routing_policy(quest: Quest, policy: str) -> RoutingPolicyChanged:
    known = one_of(policy, ROUTING_POLICIES)
    if known is None:
        raise Invalid(f"unknown routing policy {policy!r}: use one of {', '.join(ROUTING_POLICIES)}", code="invalid_policy")
    previous = quest.state("interactions").routing_policy
    return quest.emit(RoutingPolicyChanged(policy=known, previous=previous))


def local_delivery_events(interaction_id: str, targets: list[view.Binding]) -> list[DeliveryAttempted]:
    """The local connector's result: delivered by being recorded (appended with the interaction)."""
    return [
        DeliveryAttempted(
            id=_attempt_id(interaction_id, b.binding_id, 1), interaction_id=interaction_id, binding_id=b.binding_id,
            connector="local", attempt=1, outcome="delivered",
        )
        for b in targets
        if b.connector == "local"
    ]


class WebhookJob(msgspec.Struct, kw_only=True, frozen=True):
    """One webhook target of one interaction that still needs an attempt."""

    quest_id: str
    interaction_id: str
    binding_id: str
    target: str
    attempts_done: int
    max_attempts: int
    backoff_seconds: float
    timeout_seconds: float
    token_env: str | None
    body: WebhookBody  # its attempt left 0

    def payload(self, attempt: int) -> WebhookBody:
        """The body of attempt ``attempt``."""
        return msgspec.structs.replace(self.body, attempt=attempt)

    def headers(self, attempt: int, environ: Mapping[str, str]) -> dict[str, str]:
        headers = {"Idempotency-Key": f"{self.interaction_id}/{self.binding_id}", "X-DS-Attempt": str(attempt)}
        if self.token_env and environ.get(self.token_env):
            headers["Authorization"] = f"Bearer {environ[self.token_env]}"
        return headers


def webhook_jobs(quest: Quest, interaction_id: str) -> list[WebhookJob]:
    """The webhook targets of ``interaction_id`` without a final outcome, each resuming
    after its last recorded attempt (so a crash continues the retry budget)."""
    state = quest.state("interactions")
    record = state.interactions.get(interaction_id)
    if record is None:
        raise NotFound(f"no interaction {interaction_id!r}", code="unknown_interaction")
    default = quest.home.config().connectors.webhook  # config.yaml's, else the built-in defaults
    jobs = []
    for status in record.deliveries.values():
        binding = state.bindings.get(status.binding_id)
        if status.outcome not in ("pending", "retrying") or binding is None or binding.connector != "webhook":
            continue
        own = binding.settings  # a binding's own settings win over the defaults
        jobs.append(
            WebhookJob(
                quest_id=quest.id, interaction_id=interaction_id, binding_id=binding.binding_id, target=binding.target,
                attempts_done=status.attempts, max_attempts=int(own.get("max_attempts", default.max_attempts)),
                backoff_seconds=float(own.get("backoff_seconds", default.backoff_seconds)),
                timeout_seconds=float(own.get("timeout_seconds", default.timeout_seconds)),
                token_env=own.get("token_env", default.token_env),
                body=webhook_payload(quest.id, record, binding.binding_id, 0),
            )
        )  # fmt: skip
    return jobs


def unfinished_interactions(quest: Quest) -> list[str]:
    """Interactions with a delivery that has no final outcome (to resume after a restart)."""
    return list(dict.fromkeys(r.interaction_id for r, _ in view.unfinished_deliveries(quest.state("interactions"))))


def attempt_outcome(job: WebhookJob, attempt: int, error: str, retryable: bool) -> DeliveryOutcome:
    """``delivered``, ``retrying`` (another attempt follows) or ``failed`` (final)."""
    if not error:
        return "delivered"
    return "retrying" if retryable and attempt < job.max_attempts else "failed"


async def record_attempt(
    quest: Quest, job: WebhookJob, attempt: int, *, status_code: int | None, error: str, retryable: bool
) -> DeliveryAttempted:
    """Record one attempt's result; returns the stored event."""
    event = DeliveryAttempted(
        id=_attempt_id(job.interaction_id, job.binding_id, attempt), interaction_id=job.interaction_id,
        binding_id=job.binding_id, connector="webhook", attempt=attempt,
        outcome=attempt_outcome(job, attempt, error, retryable),
        status_code=status_code, error=error,
    )  # fmt: skip
    return await quest.emit_async(event)


def webhook_payload(quest_id: str, record: view.InteractionRecord, binding_id: str, attempt: int) -> WebhookBody:
    """The JSON body a webhook receives."""
    options = record.delivery_options
    return WebhookBody(
        quest_id=quest_id, interaction_id=record.interaction_id, kind=record.kind, message=record.message,
        reply_mode=record.reply_mode, options=record.options, reply_schema=record.reply_schema,
        reply_to_interaction_id=record.reply_to_interaction_id, summary_preview=options.summary_preview,
        importance=options.importance, response_phase=options.response_phase, attachments=options.attachments,
        surface_actions=options.surface_actions, connector_hints=options.connector_hints,
        allow_free_text=options.allow_free_text, expects_reply=record.expects_reply, seq=record.seq, ts=record.ts,
        binding_id=binding_id, attempt=attempt,
    )  # fmt: skip


# -- helpers ---------------------------------------------------------------------------


def _attempt_id(interaction_id: str, binding_id: str, attempt: int) -> str:
    return f"da-{interaction_id}-{binding_id}-{attempt}"


def _check_url(target: object) -> None:
    parts = urlsplit(target) if isinstance(target, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in str(target)):
        raise Invalid(f"a webhook target must be an http(s) URL, got {target!r}", code="invalid_url")


def _check_settings(settings: object) -> dict[str, Any]:
    if not isinstance(settings, dict):
        raise Invalid("settings must be an object", code="invalid_binding_settings")
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "token_env":
            if not isinstance(value, str) or not _ENV_RE.match(value):
                raise Invalid("token_env must name an environment variable", code="invalid_binding_settings")
            out[key] = value
            continue
        if key not in _SETTINGS:
            raise Invalid(f"unknown setting {key!r}: use {', '.join([*_SETTINGS, 'token_env'])}", code="invalid_binding_settings")
        types, low, high = _SETTINGS[key]
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not isinstance(number, types) or not (low <= number <= high):
            raise Invalid(f"{key} must be a number from {low:g} to {high:g}", code="invalid_binding_settings")
        out[key] = value
    return out
