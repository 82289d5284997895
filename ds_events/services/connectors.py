"""Delivery of outbound interactions: bindings, the routing policy, the connectors.

Bindings (which conversations a quest reports to) are events; the ``local`` binding is
always there (the quest's own CLI/web view) and cannot be removed. The routing policy
(``fanout_all`` | ``primary_only`` | ``primary_plus_local``) picks the targets of each
interaction when it is sent (:func:`projections.interactions.route`).

Connectors: ``local`` delivers by being in the log (its attempt is recorded with the
interaction, in the same append); ``webhook`` POSTs JSON with aiohttp, retrying
connection errors, timeouts, 429 and 5xx with exponential backoff up to
``max_attempts``; every attempt's result is a ``delivery.attempted`` event whose id is
derived from (interaction, binding, attempt), so a retried record is a no-op. The POST
carries an ``Idempotency-Key`` header: webhook delivery is at-least-once, receivers
dedupe on it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from ds_events.events.interaction import ConnectorBound, ConnectorUnbound, DeliveryAttempted, RoutingPolicyChanged
from ds_events.home import Quest
from projections import interactions as view

from ds_events.errors import Conflict, Invalid, NotFound

__all__ = [
    "bind",
    "unbind",
    "set_routing_policy",
    "deliver",
    "deliver_pending",
    "local_delivery_events",
    "webhook_payload",
    "CONNECTORS",
    "ROUTING_POLICIES",
    "WEBHOOK_DEFAULTS",
    "ERROR_CODES",
]

CONNECTORS = ("local", "webhook")
ROUTING_POLICIES = ("fanout_all", "primary_only", "primary_plus_local")
WEBHOOK_DEFAULTS: dict[str, Any] = {"max_attempts": 3, "backoff_seconds": 1.0, "timeout_seconds": 10.0}
ERROR_CODES = (
    "unknown_connector",
    "invalid_url",
    "invalid_binding_id",
    "invalid_binding_settings",
    "binding_exists",
    "unknown_binding",
    "cannot_unbind_local",
    "invalid_policy",
)
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
    if connector not in CONNECTORS:
        raise Invalid(f"unknown connector {connector!r}: use webhook (local is always bound)", code="unknown_connector")
    if connector == "local":
        raise Conflict("the local connector is always bound", code="binding_exists", binding_id=view.LOCAL_BINDING_ID)
    _check_url(target)
    settings = _check_settings(settings or {})
    if binding_id is None:
        binding_id = "webhook-" + hashlib.blake2b(target.encode(), digest_size=4).hexdigest()
    elif not isinstance(binding_id, str) or not _BINDING_ID_RE.match(binding_id) or binding_id == view.LOCAL_BINDING_ID:
        raise Invalid("binding_id must be 1-64 lowercase letters, digits, '-' or '_' (not 'local')", code="invalid_binding_id")
    with quest.transaction() as txn:
        state: view.State = quest.state("interactions")
        for b in state.bindings.values():
            if b.active and (b.binding_id == binding_id or (b.connector == connector and b.target == target)):
                raise Conflict(f"already bound as {b.binding_id}: unbind it first", code="binding_exists", binding_id=b.binding_id)
        stored = txn.append(
            ConnectorBound(binding_id=binding_id, connector=connector, target=target, label=label,  # type: ignore[arg-type]
                           primary=bool(primary), settings=settings)
        )
    return stored[0]  # type: ignore[return-value]


def unbind(quest: Quest, binding_id: str, *, reason: str = "") -> ConnectorUnbound:
    if binding_id == view.LOCAL_BINDING_ID:
        raise Conflict("the local binding cannot be removed", code="cannot_unbind_local")
    with quest.transaction() as txn:
        binding = quest.state("interactions").bindings.get(binding_id)
        if binding is None or not binding.active:
            raise NotFound(f"no active binding {binding_id!r}: see interactions/bindings.json", code="unknown_binding")
        stored = txn.append(ConnectorUnbound(binding_id=binding_id, reason=reason))
    return stored[0]  # type: ignore[return-value]


def set_routing_policy(quest: Quest, policy: str) -> RoutingPolicyChanged:
    if policy not in ROUTING_POLICIES:
        raise Invalid(f"unknown routing policy {policy!r}: use one of {', '.join(ROUTING_POLICIES)}", code="invalid_policy")
    previous = quest.state("interactions").routing_policy
    return quest.emit(RoutingPolicyChanged(policy=policy, previous=previous))[0]  # type: ignore[arg-type, return-value]


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


async def deliver(quest: Quest, interaction_id: str, *, session: aiohttp.ClientSession | None = None) -> list[DeliveryAttempted]:
    """Send ``interaction_id`` to its unfinished webhook targets; returns the attempt events.

    Resumes after the last recorded attempt, so calling it again after a crash continues
    the retry budget rather than restarting it.
    """
    state: view.State = quest.state("interactions")
    record = state.interactions.get(interaction_id)
    if record is None:
        raise NotFound(f"no interaction {interaction_id!r}", code="unknown_interaction")
    jobs = [
        (state.bindings[s.binding_id], s.attempts)
        for s in record.deliveries.values()
        if s.outcome in ("pending", "retrying") and s.binding_id in state.bindings
        and state.bindings[s.binding_id].connector == "webhook"
    ]
    if not jobs:
        return []
    defaults = {**WEBHOOK_DEFAULTS, **(quest.home.config().get("connectors", {}) or {}).get("webhook", {})}
    own = session is None
    session = session or aiohttp.ClientSession()
    try:
        results = await asyncio.gather(
            *(_deliver_webhook(quest, session, record, binding, done, defaults) for binding, done in jobs)
        )
    finally:
        if own:
            await session.close()
    return [event for events in results for event in events]


async def deliver_pending(quest: Quest) -> list[DeliveryAttempted]:
    """Resume every delivery without a final outcome (for the daemon after a restart)."""
    ids = list(dict.fromkeys(r.interaction_id for r, _ in view.unfinished_deliveries(quest.state("interactions"))))
    out: list[DeliveryAttempted] = []
    if not ids:
        return out
    async with aiohttp.ClientSession() as session:
        for iid in ids:
            out += await deliver(quest, iid, session=session)
    return out


def webhook_payload(quest_id: str, record: view.InteractionRecord, binding_id: str, attempt: int) -> dict[str, Any]:
    """The JSON body a webhook receives."""
    return {
        "quest_id": quest_id,
        "interaction_id": record.interaction_id,
        "kind": record.kind,
        "message": record.message,
        "reply_mode": record.reply_mode,
        "options": record.options,
        "reply_schema": record.reply_schema,
        "reply_to_interaction_id": record.reply_to_interaction_id,
        "seq": record.seq,
        "ts": record.ts,
        "binding_id": binding_id,
        "attempt": attempt,
    }


# -- the webhook connector --------------------------------------------------------------


async def _deliver_webhook(
    quest: Quest,
    session: aiohttp.ClientSession,
    record: view.InteractionRecord,
    binding: view.Binding,
    done: int,
    defaults: dict[str, Any],
) -> list[DeliveryAttempted]:
    settings = {**defaults, **binding.settings}
    max_attempts = int(settings["max_attempts"])
    backoff = float(settings["backoff_seconds"])
    timeout = aiohttp.ClientTimeout(total=float(settings["timeout_seconds"]))
    headers = {"Idempotency-Key": f"{record.interaction_id}/{binding.binding_id}"}
    token_env = settings.get("token_env")
    if token_env and os.environ.get(token_env):
        headers["Authorization"] = f"Bearer {os.environ[token_env]}"
    recorded: list[DeliveryAttempted] = []
    attempt = done
    while attempt < max_attempts:
        attempt += 1
        if attempt > 1:
            # Exponential backoff between attempts (also after a resumed crash).
            await asyncio.sleep(backoff * 2 ** (attempt - 2))
        status, error, retryable = await _post(
            session, binding.target, webhook_payload(quest.id, record, binding.binding_id, attempt),
            {**headers, "X-DS-Attempt": str(attempt)}, timeout,
        )
        if error == "":
            outcome = "delivered"
        elif retryable and attempt < max_attempts:
            outcome = "retrying"
        else:
            outcome = "failed"
        event = DeliveryAttempted(
            id=_attempt_id(record.interaction_id, binding.binding_id, attempt), interaction_id=record.interaction_id,
            binding_id=binding.binding_id, connector="webhook", attempt=attempt, outcome=outcome,  # type: ignore[arg-type]
            status_code=status, error=error,
        )
        recorded += await quest.emit_async(event)
        if outcome != "retrying":
            break
    return recorded


async def _post(
    session: aiohttp.ClientSession, url: str, payload: dict[str, Any], headers: dict[str, str], timeout: aiohttp.ClientTimeout
) -> tuple[int | None, str, bool]:
    """One POST: ``(status, error or "", retryable)``."""
    try:
        async with session.post(url, json=payload, headers=headers, timeout=timeout) as resp:
            await resp.read()
            if 200 <= resp.status < 300:
                return resp.status, "", False
            # 429 and 5xx are the receiver's temporary trouble; other 4xx will not improve.
            retryable = resp.status == 429 or resp.status >= 500
            return resp.status, f"HTTP {resp.status} {resp.reason or ''}".strip(), retryable
    except asyncio.TimeoutError:
        return None, "timed out", True
    except aiohttp.ClientError as exc:
        return None, f"{type(exc).__name__}: {exc}", True


def _attempt_id(interaction_id: str, binding_id: str, attempt: int) -> str:
    return f"da-{interaction_id}-{binding_id}-{attempt}"


def _check_url(target: Any) -> None:
    parts = urlsplit(target) if isinstance(target, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in target):
        raise Invalid(f"a webhook target must be an http(s) URL, got {target!r}", code="invalid_url")


def _check_settings(settings: Any) -> dict[str, Any]:
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
        if isinstance(value, bool) or not isinstance(value, types) or not (low <= value <= high):
            raise Invalid(f"{key} must be a number from {low:g} to {high:g}", code="invalid_binding_settings")
        out[key] = value
    return out
