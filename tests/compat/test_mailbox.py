"""DeepScientist's mailbox contract for `artifact.interact`, through real stdio MCP servers.

The call forms are the ones DeepScientist's skills and tests send (written here from its
public facts): `include_recent_inbound_messages`, `deliver_to_bound_conversations`,
`reply_schema={"decision_type": ...}`; the fields asserted are the ones its callers
read: `status` (ok | suppressed_duplicate), `recent_inbound_messages` (message_id,
conversation_id, text, reply_to_interaction_id), `agent_instruction`,
`recent_interaction_records`, `delivered`, `delivery_targets`, `expects_reply`,
`open_request_count`. Each test also checks the events that landed in the log.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ds_events.events import ConversationMessage
from ds_events.events.interaction import DeliveryAttempted, InteractionSent, MailboxDelivered
from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import interactions as service, quest as quest_service
from ds_events.services.interactions import connectors
from projections import interactions as view
from tests.helpers import domain_events, ds_env, stdio_server, tool_error
from tests.interactions.test_mailbox_race import PRODUCER

pytestmark = pytest.mark.slow

Server = Callable[..., Awaitable[TestServer]]


def stdio_artifact(home: Home, quest_id: str = "q1") -> mcp.StdioServerParameters:
    return stdio_server(home, "artifact", quest_id)


@asynccontextmanager
async def artifact(home: Home):  # type: ignore[no-untyped-def]
    async with mcp.Client(stdio_artifact(home)) as client:
        yield client


async def call(client: mcp.Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


def of_type(quest: Quest, cls: type, after: int = 0) -> list[Any]:
    return [e for e in quest.log.read(after_seq=after) if isinstance(e, cls)]


async def test_queued_messages_come_back_once_in_recent_inbound_messages_and_then_the_result_says_continue(
    home: Home, quest: Quest
) -> None:
    async with artifact(home) as client:
        progress = await call(client, "interact", {
            "kind": "progress", "message": "Checking the training entry point.", "deliver_to_bound_conversations": False,
            "include_recent_inbound_messages": True,
        })  # fmt: skip
        first = quest_service.post_message(quest, quest_service.PostMessage(text="Check the data loader first."), source="cli")
        answer = service.reply(quest, service.Reply(interaction_id=progress["interaction_id"], text="Then the versions."), source="http")
        before = quest.log.last_seq

        polled = await call(client, "interact", {
            "kind": "progress", "message": "Starting the checks.", "deliver_to_bound_conversations": False,
            "include_recent_inbound_messages": True,
        })  # fmt: skip
        assert polled["status"] == "ok"
        inbound = polled["recent_inbound_messages"]
        assert [m["message_id"] for m in inbound] == [first.id, answer.id]
        assert [m["text"] for m in inbound] == ["Check the data loader first.", "Then the versions."]
        assert [m["conversation_id"] for m in inbound] == ["local:cli", "local:http"]
        assert [m["reply_to_interaction_id"] for m in inbound] == [None, progress["interaction_id"]]
        assert all(m["sender"] == "user" and m["created_at"] for m in inbound)
        assert "Check the data loader first." in polled["agent_instruction"] and "Then the versions." in polled["agent_instruction"]
        assert polled["delivery_batch"]["message_ids"] == [first.id, answer.id]
        # The log: one interaction and one delivery naming both messages, in one append.
        [sent] = of_type(quest, InteractionSent, before)
        [batch] = of_type(quest, MailboxDelivered, before)
        assert sent.interaction_id == polled["interaction_id"] and batch.interaction_id == sent.interaction_id
        assert batch.message_ids == [first.id, answer.id] and batch.batch_id == polled["delivery_batch"]["batch_id"]
        assert batch.seq == sent.seq + 1

        # Nothing new: an empty list, an instruction to continue, and the interaction
        # records in their own field.
        quiet = await call(client, "interact", {
            "kind": "progress", "message": "Data loader checked.", "deliver_to_bound_conversations": False,
            "include_recent_inbound_messages": True,
        })  # fmt: skip
        assert quiet["recent_inbound_messages"] == [] and quiet["delivery_batch"] is None
        assert quiet["agent_instruction"].startswith("No new user message arrived. Continue the current work")
        assert [r["message"] for r in quiet["recent_interaction_records"]][-3:] == [
            "Checking the training entry point.", "Starting the checks.", "Data loader checked."
        ]
        assert len(of_type(quest, MailboxDelivered)) == 1


async def test_include_recent_inbound_messages_false_leaves_the_queue_for_a_later_call(home: Home, quest: Quest) -> None:
    queued = quest_service.post_message(quest, quest_service.PostMessage(text="Use CIFAR-100 instead."))
    async with artifact(home) as client:
        skipped = await call(client, "interact", {
            "kind": "milestone", "message": "Baseline reproduced.", "include_recent_inbound_messages": False,
        })  # fmt: skip
        assert skipped["status"] == "ok" and skipped["recent_inbound_messages"] == []
        assert of_type(quest, MailboxDelivered) == []
        assert [i.id for i in view.pending_items(quest.state("interactions"))] == [queued.id]
        read = await call(client, "interact", {"kind": "progress", "message": "Switching datasets."})
    assert [m["message_id"] for m in read["recent_inbound_messages"]] == [queued.id]
    assert [e.message_ids for e in of_type(quest, MailboxDelivered)] == [[queued.id]]


async def test_deliver_to_bound_conversations_is_honoured(home: Home, quest: Quest, aiohttp_server: Server) -> None:
    posts: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        posts.append(await request.json())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    url = str((await aiohttp_server(app)).make_url("/hook"))
    bound = connectors.bind(quest, "webhook", url, settings={"backoff_seconds": 0.01, "max_attempts": 2, "timeout_seconds": 5})
    async with artifact(home) as client:
        sent = await call(client, "interact", {
            "kind": "progress", "message": "qq-style delivery check", "deliver_to_bound_conversations": True,
            "include_recent_inbound_messages": False,
        })  # fmt: skip
        assert sent["status"] == "ok" and sent["delivered"] is True
        assert sorted(sent["delivery_targets"]) == sorted(["local", bound.binding_id])
        assert [p["message"] for p in posts] == ["qq-style delivery check"]
        before = quest.log.last_seq
        kept = await call(client, "interact", {
            "kind": "progress", "message": "local record only", "deliver_to_bound_conversations": False,
        })  # fmt: skip
    assert kept["status"] == "ok" and kept["delivered"] is False and kept["delivery_targets"] == [] and kept["deliveries"] == []
    assert len(posts) == 1  # nothing more reached the webhook
    [event] = of_type(quest, InteractionSent, before)
    assert event.message == "local record only" and event.targets == []
    assert of_type(quest, DeliveryAttempted, before) == []
    attempts = [(e.binding_id, e.outcome) for e in of_type(quest, DeliveryAttempted)]
    assert sorted(attempts) == sorted([("local", "delivered"), (bound.binding_id, "delivered")])


async def test_a_completion_approval_request_in_the_decision_type_form_blocks_and_counts_as_open(home: Home, quest: Quest) -> None:
    async with artifact(home) as client:
        request = await call(client, "interact", {
            "kind": "decision_request", "message": "May I end this quest now?", "deliver_to_bound_conversations": False,
            "include_recent_inbound_messages": False, "reply_mode": "blocking",
            "reply_schema": {"decision_type": "quest_completion_approval"},
        })  # fmt: skip
        assert request["status"] == "ok" and request["expects_reply"] is True and request["open_request_count"] == 1
        assert request["interaction_status"] == "waiting" and request["decision_type"] == "quest_completion_approval"
        [event] = of_type(quest, InteractionSent)
        assert event.reply_schema == {"decision_type": "quest_completion_approval"} and event.reply_mode == "blocking"
        approval = service.reply(quest, service.Reply(interaction_id=request["interaction_id"], text="approve"), source="tui-ink")
        follow = await call(client, "interact", {"kind": "progress", "message": "Approval received, closing."})
    assert follow["open_request_count"] == 0
    [reply] = follow["recent_inbound_messages"]
    assert reply["message_id"] == approval.id and reply["text"] == "approve"
    assert reply["reply_to_interaction_id"] == request["interaction_id"] and reply["conversation_id"] == "local:tui-ink"
    record = json.loads((quest.root / "interactions" / "records" / f"{request['interaction_id']}.json").read_text())
    assert record["status"] == "answered" and record["reply_schema"] == {"decision_type": "quest_completion_approval"}


async def test_an_unchanged_progress_update_answers_suppressed_duplicate_and_writes_no_second_interaction(
    home: Home, quest: Quest
) -> None:
    text = "First round of checks done; nothing changed."
    async with artifact(home) as client:
        first = await call(client, "interact", {"kind": "progress", "message": text, "deliver_to_bound_conversations": False,
                                                "include_recent_inbound_messages": False})  # fmt: skip
        second = await call(client, "interact", {"kind": "progress", "message": text, "deliver_to_bound_conversations": False,
                                                 "include_recent_inbound_messages": False})  # fmt: skip
        forced = await call(client, "interact", {"kind": "progress", "message": text, "suppress_if_unchanged": False,
                                                 "deliver_to_bound_conversations": False})  # fmt: skip
    assert first["status"] == "ok" and second["status"] == "suppressed_duplicate"
    assert second["duplicate_of"] == first["interaction_id"] and second["delivered"] is False
    assert forced["status"] == "ok" and forced["interaction_id"] not in (None, first["interaction_id"])
    assert [e.interaction_id for e in of_type(quest, InteractionSent)] == [first["interaction_id"], forced["interaction_id"]]


async def test_bad_reply_schemas_are_refused_with_a_code_and_write_nothing(home: Home, quest: Quest) -> None:
    async with artifact(home) as client:
        for schema in ({"decision_type": ""}, {"decision_type": 7}, {}, {"decision_type": "ok", "type": "frog"}):
            before = domain_events(quest)
            result = await client.call_tool("interact", {
                "kind": "decision_request", "message": "Close?", "reply_mode": "blocking", "reply_schema": schema,
            })  # fmt: skip
            assert tool_error(result)["error"] == "invalid_reply_schema", schema
            assert domain_events(quest) == before
        # A plain decision request still needs options: only a decision_type label makes
        # a free-text request.
        before = domain_events(quest)
        result = await client.call_tool("interact", {"kind": "decision_request", "message": "Which one?"})
        assert tool_error(result)["error"] == "missing_options" and domain_events(quest) == before


async def test_replay_rebuilds_the_interaction_files_byte_for_byte(home: Home, quest: Quest) -> None:
    async with artifact(home) as client:
        quest_service.post_message(quest, quest_service.PostMessage(text="hello"))
        request = await call(client, "interact", {
            "kind": "decision_request", "message": "May I end this quest now?",
            "reply_schema": {"decision_type": "quest_completion_approval"}, "deliver_to_bound_conversations": False,
        })  # fmt: skip
        service.reply(quest, service.Reply(interaction_id=request["interaction_id"], text="approve"))
        await call(client, "interact", {"kind": "milestone", "message": "Closing."})
    files = [*sorted((quest.root / "interactions").rglob("*.json")), quest.root / "interactions" / "open_requests.md"]
    before = {p: p.read_bytes() for p in files}
    for p in files:
        p.unlink()
    replay_quest(quest.root, quest_id=quest.id)
    assert {p: p.read_bytes() for p in files} == before


# -- the race: three consumers, 200 queued messages ------------------------------------------

N = 200
# PRODUCER (queues N user messages from its own process) is the older race test's.


CONSUMER = """
import json, sys, time
from ds_events.home import Home
from ds_events.services.interactions.mailbox import consume_mailbox
n, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
q = Home().open_quest("q1", actor="consumer-c")
got = []
def all_delivered():
    return sum(1 for i in q.state("interactions").inbound.values() if i.delivered_batch) >= n
while time.monotonic() < deadline:
    seen = q.log.last_seq
    _batch, items = consume_mailbox(q, consumer="consumer-c")
    got += [i.id for i in items]
    if all_delivered():
        break
    while not items and q.log.last_seq == seen and time.monotonic() < deadline:
        time.sleep(0.005)
print(json.dumps(got))
"""


def _delivered(quest: Quest) -> int:
    return sum(1 for i in quest.state("interactions").inbound.values() if i.delivered_batch)


async def _drain(client: mcp.Client, quest: Quest, deadline: float, name: str) -> list[str]:
    """Call interact until every message is delivered; the ids this consumer was handed."""
    got: list[str] = []
    while _delivered(quest) < N and time.monotonic() < deadline:
        r = await call(client, "interact", {
            "kind": "progress", "message": f"{name} still training", "include_recent_inbound_messages": True,
            "deliver_to_bound_conversations": False, "recent_message_limit": 0,
        })  # fmt: skip
        taken = [m["message_id"] for m in r["recent_inbound_messages"]]
        got += taken
        if not taken:
            await asyncio.sleep(0.01)
    return got


async def test_three_consumers_race_over_200_queued_messages_and_each_arrives_exactly_once(home: Home, quest: Quest) -> None:
    env = ds_env(home, DS_QUEST_ID="q1")
    other = subprocess.Popen([sys.executable, "-c", CONSUMER, str(N), "150"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        async with artifact(home) as a, artifact(home) as b:
            producer = subprocess.Popen([sys.executable, "-c", PRODUCER, str(N)], env=env)
            deadline = time.monotonic() + 150
            via_a, via_b = await asyncio.gather(_drain(a, quest, deadline, "a"), _drain(b, quest, deadline, "b"))
            assert await asyncio.to_thread(producer.wait, 60) == 0
        out, _ = await asyncio.to_thread(other.communicate, timeout=150)
    finally:
        if other.poll() is None:
            other.kill()
    via_c = json.loads(out)
    queued = [e.id for e in quest.log.read(types=["conversation.message"]) if isinstance(e, ConversationMessage)]
    assert len(queued) == N
    takes = [via_a, via_b, via_c]
    assert all(len(t) == len(set(t)) for t in takes)
    assert sorted(via_a + via_b + via_c) == sorted(queued)  # none lost, none twice
    named = [mid for e in of_type(quest, MailboxDelivered) for mid in e.message_ids]
    assert sorted(named) == sorted(queued)
    state = quest.state("interactions")
    assert state.pending == [] and state.duplicate_deliveries == 0
    print(f"delivered via MCP server a: {len(via_a)}, b: {len(via_b)}, the third consumer: {len(via_c)}; batches {state.batches}")
