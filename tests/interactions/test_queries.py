"""The interactions domain's list (``services/interactions/queries.py``): the requests
waiting for the user, the recent interactions and the messages the agent has not read."""

from __future__ import annotations

import msgspec

from ds_events.home import Quest
from ds_events.services.interactions import mailbox
from ds_events.services.interactions.queries import InteractionsList, list_interactions
from ds_events.services.quest import PostMessage, post_message


def _ask(quest: Quest, text: str) -> str:
    cmd = mailbox.Interact(kind="decision_request", message=text, reply_mode="blocking",
                           options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}])  # fmt: skip
    return _id(mailbox.interact(quest, cmd))


def _tell(quest: Quest, text: str) -> str:
    return _id(mailbox.interact(quest, mailbox.Interact(kind="progress", message=text)))


def _id(sent: mailbox.InteractResult) -> str:
    assert sent.interaction_id is not None
    return sent.interaction_id


def test_open_requests_recent_interactions_and_pending_messages(quest: Quest) -> None:
    told = [_tell(quest, f"progress {i}") for i in range(3)]
    asked = _ask(quest, "Which baseline?")
    post_message(quest, PostMessage(text="an answer the agent has not read yet"))
    listed = list_interactions(quest, limit=2)
    assert isinstance(listed, InteractionsList) and listed.quest_id == "q1"
    assert [r.interaction_id for r in listed.open_requests] == [asked]
    assert [r.interaction_id for r in listed.recent] == [told[2], asked]  # the newest two, oldest first
    assert listed.pending_messages == 1 and listed.seq == quest.log.last_seq
    mailbox.reply(quest, mailbox.Reply(interaction_id=asked, text="A", option_id="a"), source="test")
    _tell(quest, "read it")  # the agent's next interaction reads the mailbox
    after = list_interactions(quest, limit=20)
    assert after.open_requests == [] and after.pending_messages == 0
    assert [r.interaction_id for r in after.recent][:4] == [*told, asked]


def test_the_answer_encodes_as_the_route_always_did(quest: Quest) -> None:
    _ask(quest, "Which one?")
    listed = list_interactions(quest, limit=5)
    state = quest.state("interactions")
    before = {
        "quest_id": "q1", "seq": state.last_seq,
        "open_requests": msgspec.to_builtins([state.interactions[i] for i in state.open_requests]),
        "recent": msgspec.to_builtins(list(state.interactions.values())[-5:]), "pending_messages": len(state.pending),
    }  # fmt: skip
    assert msgspec.json.encode(listed) == msgspec.json.encode(before)
