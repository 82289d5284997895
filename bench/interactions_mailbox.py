"""Mailbox and interact() cost against raw appends of the same events, measured side by side.

Run: python3 bench/interactions_mailbox.py [N]

Figures (per operation, same log policy "group", same machine, same run):
- raw:      EventLog.append of a user message, then of a mailbox.delivered naming it
- consume:  post_message + consume_mailbox (transaction: lock, catch views up, append)
- interact: post_message + interact() (validation, suppression check, routing, batch)
- backlog:  one consume_mailbox of N queued messages, against one raw append of the same event
"""

from __future__ import annotations

import sys
import tempfile
import time

from ds_events.events import ConversationMessage
from ds_events.events.interaction import MailboxDelivered
from ds_events.home import Home
from ds_events.log import EventLog
from ds_events.services import quest as quests
from ds_events.services.interactions import mailbox as interactions


def main(n: int) -> None:
    home = Home(tempfile.mkdtemp(prefix="ds-bench-"))
    home.init()

    log = EventLog(home.root / "raw.jsonl", quest_id="raw", actor="bench")
    t0 = time.perf_counter()
    for i in range(n):
        msg = log.append(ConversationMessage(role="user", content=f"message {i}", source="bench"))
        log.append(MailboxDelivered(batch_id=f"mb-{i}", message_ids=[msg.id], message_seqs=[msg.seq], consumer="bench"))
    raw = (time.perf_counter() - t0) / n

    q1 = home.create_quest("consume", quest_id="consume")
    t0 = time.perf_counter()
    for i in range(n):
        quests.post_message(q1, quests.PostMessage(text=f"message {i}"), source="bench")
        _batch, items = interactions.consume_mailbox(q1, consumer="bench")
        assert len(items) == 1
    consume = (time.perf_counter() - t0) / n

    q2 = home.create_quest("interact", quest_id="interact")
    t0 = time.perf_counter()
    for i in range(n):
        quests.post_message(q2, quests.PostMessage(text=f"message {i}"), source="bench")
        r = interactions.interact(q2, interactions.Interact(message=f"step {i} done", recent_message_limit=8))
        assert len(r.recent_inbound_messages) == 1
    interact = (time.perf_counter() - t0) / n

    q3 = home.create_quest("backlog", quest_id="backlog")
    q3.emit([ConversationMessage(role="user", content=f"queued {i}", source="bench") for i in range(n)])
    t0 = time.perf_counter()
    _batch, items = interactions.consume_mailbox(q3, consumer="bench")
    backlog = time.perf_counter() - t0
    assert len(items) == n
    t0 = time.perf_counter()
    log.append(MailboxDelivered(batch_id="mb-backlog", message_ids=[m.id for m in items], message_seqs=[m.seq for m in items]))
    backlog_raw = time.perf_counter() - t0

    print(f"operations: {n} (log policy {q1.log.policy})")
    print(f"raw append pair:          {raw * 1e3:8.3f} ms/op   1.00x")
    print(f"post + consume_mailbox:   {consume * 1e3:8.3f} ms/op   {consume / raw:5.2f}x raw")
    print(f"post + interact():        {interact * 1e3:8.3f} ms/op   {interact / raw:5.2f}x raw")
    print(f"consume backlog of {n}:  {backlog * 1e3:8.3f} ms      {backlog / backlog_raw:5.2f}x one raw append of that batch")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
