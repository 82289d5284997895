"""Exactly-once mailbox delivery with real processes racing: one queues user messages while
a stdio MCP server (interact) and a second consumer process drain the mailbox."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import mcp
import pytest

from ds_events.events import ConversationMessage
from ds_events.events.interaction import MailboxDelivered
from ds_events.home import Home, Quest
from tests.helpers import ds_env
from tests.stores import home  # noqa: F401 - every test here runs on the file store and on PostgreSQL

N = 60

PRODUCER = """
import sys
from ds_events.home import Home
from ds_events.services import quest as quests
q = Home().open_quest("q1", actor="daemon")
for i in range(int(sys.argv[1])):
    quests.post_message(q, quests.PostMessage(text=f"message {i}"), source="daemon")
"""

CONSUMER = """
import json, sys, time
from ds_events.home import Home
from ds_events.services.interactions.mailbox import consume_mailbox
n, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
q = Home().open_quest("q1", actor="consumer-b")
got = []
def all_delivered():
    s = q.state("interactions")
    return sum(1 for i in s.inbound.values() if i.delivered_batch) >= n
while time.monotonic() < deadline:
    seen = q.log.last_seq
    _batch, items = consume_mailbox(q, consumer="consumer-b")
    got += [i.id for i in items]
    if all_delivered():
        break
    while not items and q.log.last_seq == seen and time.monotonic() < deadline:
        time.sleep(0.005)  # poll the log's tail for another process's append
print(json.dumps(got))
"""


@pytest.mark.slow
async def test_each_user_message_is_delivered_exactly_once_while_processes_race(home: Home, quest: Quest) -> None:
    env = ds_env(home, DS_QUEST_ID="q1")
    consumer = subprocess.Popen([sys.executable, "-c", CONSUMER, str(N), "80"], env=env, stdout=subprocess.PIPE, text=True)
    params = mcp.StdioServerParameters(command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", "artifact"], env=env)
    via_mcp: list[str] = []
    try:
        async with mcp.Client(params) as client:
            producer = subprocess.Popen([sys.executable, "-c", PRODUCER, str(N)], env=env)
            deadline = time.monotonic() + 80
            while _delivered_count(quest) < N and time.monotonic() < deadline:
                r = await client.call_tool("interact", {"message": "still training", "recent_message_limit": 0})
                assert not r.is_error, r.content
                via_mcp += [m["message_id"] for m in r.structured_content["recent_inbound_messages"]]
                if not r.structured_content["recent_inbound_messages"]:
                    await _wait_for_append(quest, quest.log.last_seq, timeout=5)
            assert await asyncio.to_thread(producer.wait, 60) == 0
        out, _ = await asyncio.to_thread(consumer.communicate, timeout=90)
    finally:
        for p in (consumer,):
            if p.poll() is None:
                p.kill()
    via_b = json.loads(out)

    queued = [e.id for e in quest.log.read(types=["conversation.message"]) if isinstance(e, ConversationMessage)]
    assert len(queued) == N
    # Every consumer got each message at most once, together exactly once, none lost.
    assert len(via_mcp) == len(set(via_mcp)) and len(via_b) == len(set(via_b))
    assert not set(via_mcp) & set(via_b)
    assert sorted(via_mcp + via_b) == sorted(queued)
    # The log agrees: each message id is named by exactly one mailbox.delivered event.
    named = [mid for e in quest.log.read(types=["mailbox.delivered"]) if isinstance(e, MailboxDelivered) for mid in e.message_ids]
    assert sorted(named) == sorted(queued)
    state = quest.state("interactions")
    assert state.pending == [] and state.duplicate_deliveries == 0
    consumers = {e.consumer for e in quest.log.read(types=["mailbox.delivered"]) if isinstance(e, MailboxDelivered)}
    assert consumers <= {"mcp:artifact", "consumer-b"}
    print(f"delivered via MCP: {len(via_mcp)}, via the other consumer: {len(via_b)}, batches: {state.batches}")


def _delivered_count(quest: Quest) -> int:
    return sum(1 for i in quest.state("interactions").inbound.values() if i.delivered_batch)


async def _wait_for_append(quest: Quest, after_seq: int, timeout: float) -> None:
    async def first() -> None:
        async for _event in quest.log.follow(after_seq):
            return

    try:
        await asyncio.wait_for(first(), timeout)
    except TimeoutError:
        pass  # the loop re-checks its own deadline
