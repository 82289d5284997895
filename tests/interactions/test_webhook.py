"""The webhook connector against a real aiohttp server on loopback; routing policies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ds_events.events.interaction import DeliveryAttempted, DeliveryOptions
from ds_events.home import Home, Quest
from ds_events.services import interactions as service
from ds_events.services.interactions import connectors
from ds_events.services.interactions.commands import Interact, WebhookBody
from handlers.connectors import webhook

from .clients import artifact_client, call

Server = Callable[..., Awaitable[TestServer]]
FAST = {"backoff_seconds": 0.01, "max_attempts": 3, "timeout_seconds": 5}


class Receiver:
    """A webhook endpoint that answers with scripted statuses (the last one repeats)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.json()))
        status = self.statuses[min(len(self.requests), len(self.statuses)) - 1]
        return web.Response(status=status, text="ok" if status < 300 else "nope")

    async def start(self, aiohttp_server: Server) -> str:
        app = web.Application()
        app.router.add_post("/hook", self.handle)
        server = await aiohttp_server(app)
        return str(server.make_url("/hook"))


def attempts(quest: Quest, binding_id: str) -> list[tuple[int, str, int | None]]:
    return [
        (e.attempt, e.outcome, e.status_code)
        for e in quest.log.read(types=["delivery.attempted"])
        if isinstance(e, DeliveryAttempted) and e.binding_id == binding_id
    ]


async def test_the_interact_tool_posts_to_a_bound_webhook_and_records_the_delivery(
    home: Home, quest: Quest, aiohttp_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = Receiver([200])
    monkeypatch.setenv("HOOK_TOKEN", "s3cret-value")
    bound = connectors.bind(quest, "webhook", await hook.start(aiohttp_server), primary=True,
                            settings={**FAST, "token_env": "HOOK_TOKEN"})
    async with artifact_client(home) as client:
        r = await call(client, "interact", {"kind": "milestone", "message": "Baseline reproduced: 91.6%",
                                            "importance": "normal", "connector_hints": {"webhook": {"format": "md"}}})
    assert {(d["binding_id"], d["outcome"]) for d in r["deliveries"]} == {("local", "delivered"), (bound.binding_id, "delivered")}
    assert attempts(quest, bound.binding_id) == [(1, "delivered", 200)]
    [(headers, body)] = hook.requests
    assert body["interaction_id"] == r["interaction_id"] and body["message"] == "Baseline reproduced: 91.6%"
    assert body["quest_id"] == "q1" and body["kind"] == "milestone" and body["attempt"] == 1
    # DeepScientist's delivery arguments reach the receiver, to render as it can.
    assert (body["importance"], body["connector_hints"], body["summary_preview"]) == (
        "normal", {"webhook": {"format": "md"}}, "Baseline reproduced: 91.6%")
    assert headers["Idempotency-Key"] == f"{r['interaction_id']}/{bound.binding_id}"
    assert headers["Authorization"] == "Bearer s3cret-value"
    assert b"s3cret-value" not in (quest.root / ".ds" / "events.jsonl").read_bytes()


async def test_a_webhook_that_fails_temporarily_is_retried_and_each_attempt_is_an_event(
    quest: Quest, aiohttp_server: Server
) -> None:
    hook = Receiver([503, 429, 200])
    bound = connectors.bind(quest, "webhook", await hook.start(aiohttp_server), settings=FAST)
    r = await service.interact_async(quest, Interact(message="Epoch 1 done"), deliver=webhook.deliver)
    assert attempts(quest, bound.binding_id) == [(1, "retrying", 503), (2, "retrying", 429), (3, "delivered", 200)]
    assert [h["X-DS-Attempt"] for h, _ in hook.requests] == ["1", "2", "3"]
    assert len({h["Idempotency-Key"] for h, _ in hook.requests}) == 1
    hooked = next(d for d in r.deliveries if d.binding_id == bound.binding_id)
    assert hooked.outcome == "delivered" and hooked.attempts == 3


async def test_a_webhook_that_keeps_failing_ends_with_a_recorded_final_failure(quest: Quest, aiohttp_server: Server) -> None:
    hook = Receiver([500])
    bound = connectors.bind(quest, "webhook", await hook.start(aiohttp_server), settings=FAST)
    r = await service.interact_async(quest, Interact(message="Epoch 2 done"), deliver=webhook.deliver)
    assert attempts(quest, bound.binding_id) == [(1, "retrying", 500), (2, "retrying", 500), (3, "failed", 500)]
    assert len(hook.requests) == 3
    status = quest.state("interactions").interactions[r.interaction_id].deliveries[bound.binding_id]
    assert (status.outcome, status.attempts, status.error) == ("failed", 3, "HTTP 500 Internal Server Error")
    # A final failure is not resumed later.
    assert await webhook.deliver_pending(quest) == [] and len(hook.requests) == 3


async def test_a_client_error_from_the_webhook_is_not_retried(quest: Quest, aiohttp_server: Server) -> None:
    hook = Receiver([400])
    bound = connectors.bind(quest, "webhook", await hook.start(aiohttp_server), settings=FAST)
    await service.interact_async(quest, Interact(message="Epoch 3 done"), deliver=webhook.deliver)
    assert attempts(quest, bound.binding_id) == [(1, "failed", 400)] and len(hook.requests) == 1


async def test_an_unreachable_webhook_fails_after_the_retry_budget(quest: Quest, aiohttp_server: Server) -> None:
    app = web.Application()
    server = await aiohttp_server(app)
    url = str(server.make_url("/hook"))
    await server.close()  # nothing listens on that loopback port any more
    bound = connectors.bind(quest, "webhook", url, settings={**FAST, "max_attempts": 2})
    await service.interact_async(quest, Interact(message="Epoch 4 done"), deliver=webhook.deliver)
    events = [e for e in quest.log.read(types=["delivery.attempted"]) if e.binding_id == bound.binding_id]
    assert [(e.attempt, e.outcome, e.status_code) for e in events] == [(1, "retrying", None), (2, "failed", None)]
    assert all("ClientConnectorError" in e.error for e in events)


async def test_deliver_pending_resumes_an_interrupted_retry_without_restarting_the_budget(
    quest: Quest, aiohttp_server: Server
) -> None:
    hook = Receiver([200])
    bound = connectors.bind(quest, "webhook", await hook.start(aiohttp_server), settings=FAST)
    r = service.interact(quest, Interact(message="Evaluation finished"))  # sent, webhook not yet delivered
    # The process that sent it failed once, recorded it, and died before retrying.
    quest.emit(DeliveryAttempted(interaction_id=r.interaction_id, binding_id=bound.binding_id, connector="webhook",
                                 attempt=1, outcome="retrying", error="HTTP 502 Bad Gateway", status_code=502))
    resumed = await webhook.deliver_pending(quest)
    assert [(e.attempt, e.outcome) for e in resumed] == [(2, "delivered")]
    assert [b["attempt"] for _, b in hook.requests] == [2]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("fanout_all", {"local", "hook-a", "hook-b"}),
        ("primary_only", {"hook-b"}),
        ("primary_plus_local", {"local", "hook-b"}),
    ],
)
async def test_the_routing_policy_chooses_which_bindings_receive_an_interaction(
    quest: Quest, aiohttp_server: Server, policy: str, expected: set[str]
) -> None:
    a, b = Receiver([200]), Receiver([200])
    connectors.bind(quest, "webhook", await a.start(aiohttp_server), binding_id="hook-a", settings=FAST)
    connectors.bind(quest, "webhook", await b.start(aiohttp_server), binding_id="hook-b", primary=True, settings=FAST)
    connectors.set_routing_policy(quest, policy)
    r = await service.interact_async(quest, Interact(message=f"Routed under {policy}"), deliver=webhook.deliver)
    assert {d.binding_id for d in r.deliveries if d.outcome == "delivered"} == expected
    assert bool(a.requests) == ("hook-a" in expected) and bool(b.requests) == ("hook-b" in expected)


async def test_primary_only_without_a_primary_falls_back_to_local_and_unbinding_stops_delivery(
    quest: Quest, aiohttp_server: Server
) -> None:
    hook = Receiver([200])
    connectors.bind(quest, "webhook", await hook.start(aiohttp_server), binding_id="hook-a", settings=FAST)
    connectors.set_routing_policy(quest, "primary_only")
    r = await service.interact_async(quest, Interact(message="Only local"), deliver=webhook.deliver)
    assert [d.binding_id for d in r.deliveries] == ["local"] and hook.requests == []
    connectors.set_routing_policy(quest, "fanout_all")
    connectors.unbind(quest, "hook-a", reason="channel archived")
    r = await service.interact_async(quest, Interact(message="Still only local"), deliver=webhook.deliver)
    assert [d.binding_id for d in r.deliveries] == ["local"] and hook.requests == []
    assert '"active": false' in (quest.root / "interactions" / "bindings.json").read_text()


def test_the_webhook_body_carries_every_delivery_option_of_the_interaction() -> None:
    # The body lists DeliveryOptions' fields flat: a new delivery option must reach receivers too.
    assert set(DeliveryOptions.__struct_fields__) <= set(WebhookBody.__struct_fields__)
