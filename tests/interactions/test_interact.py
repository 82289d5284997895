"""interact() through an MCP client: mailbox batches, suppression, blocking requests, files."""

from __future__ import annotations

import json
import subprocess

import mcp
import pytest

from ds_events.events.interaction import InteractionSent, MailboxDelivered
from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import interactions as service, quest as quest_service
from ds_events.services.interactions.commands import Interact, Reply

from .clients import artifact_client, call

OPTIONS = [{"id": "wider", "label": "Try a wider model"}, {"id": "stop", "label": "Write up now"}]


async def test_interact_hands_over_pending_user_messages_as_one_batch_then_says_nothing_new(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        first = quest_service.post_message(quest, quest_service.PostMessage(text="Try a smaller vocabulary first"))
        second = quest_service.post_message(quest, quest_service.PostMessage(text="And log the perplexity"))

        r = await call(client, "interact", {"message": "Tokenizer sweep started"})
        assert r["status"] == "ok" and r["interaction_status"] == "sent"
        assert [m["message_id"] for m in r["recent_inbound_messages"]] == [first.id, second.id]
        assert [m["text"] for m in r["recent_inbound_messages"]] == ["Try a smaller vocabulary first", "And log the perplexity"]
        assert "Try a smaller vocabulary first" in r["agent_instruction"]
        batches = quest.log.read(types=["mailbox.delivered"])
        assert len(batches) == 1 and batches[0].message_ids == [first.id, second.id]
        assert r["delivery_batch"] == {"batch_id": batches[0].batch_id, "message_ids": [first.id, second.id]}
        assert batches[0].interaction_id == r["interaction_id"]

        # Already delivered messages never come back: nothing new means an empty list.
        again = await call(client, "interact", {"message": "Vocabulary 8k done"})
        assert again["recent_inbound_messages"] == [] and again["delivery_batch"] is None
        assert again["agent_instruction"].startswith("No new user message arrived. Continue the current work")
        assert [i["message"] for i in again["recent_interaction_records"]] == ["Tokenizer sweep started", "Vocabulary 8k done"]
        # Not reading the mailbox leaves a queued message queued, for the next read.
        third = quest_service.post_message(quest, quest_service.PostMessage(text="Also try 32k"))
        quiet = await call(
            client, "interact", {"message": "Vocabulary 16k done", "include_recent_inbound_messages": False, "recent_message_limit": 1}
        )
        assert quiet["recent_inbound_messages"] == [] and len(quiet["recent_interaction_records"]) == 1
        assert "not read" in quiet["agent_instruction"]
        assert len(quest.log.read(types=["mailbox.delivered"])) == 1
        later = await call(client, "interact", {"message": "Vocabulary 32k queued"})
        assert [m["message_id"] for m in later["recent_inbound_messages"]] == [third.id]


async def test_repeated_identical_progress_is_suppressed_but_still_reads_the_mailbox(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        sent = await call(client, "interact", {"message": "Epoch 3/10: loss 1.92"})
        before = quest.log.last_seq
        msg = quest_service.post_message(quest, quest_service.PostMessage(text="Stop after epoch 5"))

        repeat = await call(client, "interact", {"message": "  epoch 3/10:   LOSS 1.92 "})
        assert repeat["suppressed"] is True and repeat["status"] == "suppressed_duplicate"
        assert repeat["duplicate_of"] == sent["interaction_id"] and repeat["interaction_id"] is None
        assert repeat["delivered"] is False and repeat["delivery_targets"] == []
        assert [m["message_id"] for m in repeat["recent_inbound_messages"]] == [msg.id]
        # Only the message and its delivery were written (besides the call's tool record): no
        # second interaction.
        written = [e.type for e in quest.log.read(after_seq=before) if not e.type.startswith("tool.")]
        assert written == ["conversation.message", "mailbox.delivered"]

        keyed = await call(client, "interact", {"message": "Checkpoint saved", "dedupe_key": "ckpt-3"})
        reworded = await call(client, "interact", {"message": "Saved the checkpoint", "dedupe_key": "ckpt-3"})
        assert keyed["suppressed"] is False and reworded["duplicate_of"] == keyed["interaction_id"]
        # A decision request is never suppressed, and a different update goes through.
        changed = await call(client, "interact", {"message": "Epoch 4/10: loss 1.85"})
        assert changed["suppressed"] is False
        assert len(quest.log.read(types=["interaction.sent"])) == 3


async def test_a_decision_request_blocks_by_default_and_stays_open_until_a_reply_event(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        r = await call(client, "interact", {"kind": "decision_request", "message": "Accuracy plateaued. Next?", "options": OPTIONS})
        iid = r["interaction_id"]
        assert r["reply_mode"] == "blocking" and r["status"] == "ok" and r["interaction_status"] == "waiting"
        assert r["expects_reply"] is True and r["open_request_count"] == 1
        state = quest.state("interactions")
        assert state.open_requests == [iid]
        assert iid in (quest.root / "interactions" / "open_requests.md").read_text()

        nothing = await call(client, "interact", {"message": "Meanwhile: cleaning the data loader"})
        assert nothing["recent_inbound_messages"] == [] and nothing["open_request_count"] == 1
        assert quest.state("interactions").open_requests == [iid]

        answer = service.reply(quest, Reply(interaction_id=iid, text="Go wider", option_id="wider"))
        assert quest.state("interactions").open_requests == []
        looked = await call(client, "get_interaction", {"interaction_id": iid})
        assert looked["interaction"]["status"] == "answered" and looked["replies"][0]["option_id"] == "wider"

        got = await call(client, "interact", {"message": "Reading your answer"})
        assert [(m["message_id"], m["kind"], m["option_id"], m["reply_to_interaction_id"]) for m in got["recent_inbound_messages"]] == [
            (answer.id, "reply", "wider", iid)
        ]
        assert got["open_request_count"] == 0
        assert "_Nothing is waiting for you._" in (quest.root / "interactions" / "open_requests.md").read_text()


@pytest.mark.slow
async def test_a_blocking_interact_returns_the_reply_that_another_process_writes(home: Home, quest: Quest) -> None:
    import asyncio
    import sys

    from tests.helpers import DS, ds_env

    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", "artifact"], env=ds_env(home, DS_QUEST_ID="q1")
    )
    async with mcp.Client(params) as c:
        pending = asyncio.create_task(c.call_tool("interact", {
            "kind": "decision_request", "message": "Which dataset?", "wait_timeout_seconds": 60,
            "options": [{"id": "c10", "label": "CIFAR-10"}, {"id": "c100", "label": "CIFAR-100"}],
        }))
        iid = await _wait_for_open_request(quest, timeout=30)
        reply_cmd = [*DS[:1], "-c", "import sys, ds_events.cli.interact; from ds_events.cli import main; main(sys.argv[1:])"]
        done = subprocess.run([*reply_cmd, "reply", "q1", iid, "CIFAR-100 please", "--option", "c100", "--json"],
                              env=ds_env(home), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["interaction_id"] == iid
        r = (await asyncio.wait_for(pending, 60)).structured_content
    assert r["interaction_status"] == "answered" and r["reply"]["text"] == "CIFAR-100 please" and r["reply"]["option_id"] == "c100"
    assert [m["text"] for m in r["recent_inbound_messages"]] == ["CIFAR-100 please"]
    assert r["recent_inbound_messages"][0]["reply_to_interaction_id"] == iid and r["open_request_count"] == 0
    # Delivered once: another interact does not see it again.
    assert service.consume_mailbox(quest) == (None, [])


async def test_a_blocking_wait_that_times_out_leaves_the_request_open(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        r = await call(client, "interact", {
            "kind": "decision_request", "message": "Proceed?", "options": OPTIONS, "wait_timeout_seconds": 0.2,
        })
        assert r["interaction_status"] == "waiting" and r["reply"] is None and "No reply within" in r["guidance"]
        assert quest.state("interactions").open_requests == [r["interaction_id"]]


async def test_a_threaded_answer_can_refer_to_a_user_message_and_take_replies(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        question = quest_service.post_message(quest, quest_service.PostMessage(text="Why did run 3 diverge?"))
        r = await call(client, "interact", {
            "kind": "answer", "message": "The LR warmup was skipped.", "reply_mode": "threaded",
            "reply_to_interaction_id": question.id,
        })
        event = quest.log.read(types=["interaction.sent"])[-1]
        assert isinstance(event, InteractionSent) and event.reply_to_interaction_id == question.id
        service.reply(quest, Reply(interaction_id=r["interaction_id"], text="Thanks, rerun it with warmup"))
        service.reply(quest, Reply(interaction_id=r["interaction_id"], text="And keep the seed"))  # threaded: many replies, stays open
        assert quest.state("interactions").interactions[r["interaction_id"]].status == "sent"
        got = await call(client, "interact", {"message": "Rerunning with warmup"})
        assert [m["text"] for m in got["recent_inbound_messages"]] == ["Thanks, rerun it with warmup", "And keep the seed"]
        assert {m["reply_to_interaction_id"] for m in got["recent_inbound_messages"]} == {r["interaction_id"]}


def test_replay_rewrites_the_interaction_files_byte_for_byte(quest: Quest) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text="hello"))
    r = service.interact(quest, Interact(kind="decision_request", message="A or B?", options=OPTIONS))
    service.reply(quest, Reply(interaction_id=r.interaction_id, text="A", option_id="wider"))
    service.interact(quest, Interact(kind="milestone", message="Baseline confirmed"))
    files = [*sorted((quest.root / "interactions").rglob("*.json")), quest.root / "interactions" / "open_requests.md"]
    before = {p: p.read_bytes() for p in files}
    assert len(files) == 3 + 1
    for p in files:
        p.unlink()
    replay_quest(quest.root, quest_id=quest.id)
    first = {p: p.read_bytes() for p in files}
    replay_quest(quest.root, quest_id=quest.id)
    assert first == before == {p: p.read_bytes() for p in files}
    record = json.loads((quest.root / "interactions" / "records" / f"{r.interaction_id}.json").read_text())
    assert record["status"] == "answered" and record["options"] == OPTIONS
    assert all(isinstance(e, MailboxDelivered) for e in quest.log.read(types=["mailbox.delivered"]))


async def _wait_for_open_request(quest: Quest, timeout: float) -> str:
    import asyncio

    async def poll() -> str:
        async for _event in quest.log.follow(0):
            opened = quest.state("interactions").open_requests
            if opened:
                return opened[0]
        raise AssertionError("unreachable")

    return await asyncio.wait_for(poll(), timeout)


async def test_an_attachment_may_come_from_a_worktree_but_not_from_the_runtimes_own_files(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        branch = await call(client, "prepare_branch", {"run_id": "r1"})
        figure = quest.root / branch["worktree"] / "figs" / "loss.png"
        figure.parent.mkdir(parents=True)
        figure.write_bytes(b"\x89PNG")
        sent = await call(client, "interact", {"kind": "milestone", "message": "Loss curve attached.",
                                               "attachments": [{"path": str(figure), "content_type": "image/png"}]})
        assert sent["normalized_attachments"] == [{"path": f"{branch['worktree']}/figs/loss.png", "content_type": "image/png"}]
        for path in (".ds/worktrees", ".git/HEAD", f"{branch['worktree']}/../../events.jsonl"):
            refused = await client.call_tool("interact", {"message": "x", "attachments": [{"path": path}]})
            assert refused.is_error and "invalid_attachments" in refused.content[0].text, path
