"""The quest domain's answers for the edges: the quest list (``services/quest/listing.py``)
and pages of the event log (``services/quest/event_pages.py``)."""

from __future__ import annotations

import msgspec

from ds_events.home import Home, Quest
from ds_events.services.interactions import mailbox
from ds_events.services.quest import PostMessage, QuestSummary, post_message
from ds_events.services.quest.event_pages import EventPage, event_page
from ds_events.services.quest.listing import list_quests, quest_summary, show_quest
from projections.status import StatusState


def test_a_row_per_quest_with_its_last_event_time_and_open_requests(home: Home, quest: Quest) -> None:
    other = home.create_quest("Other quest", quest_id="q0")
    try:
        mailbox.interact(quest, mailbox.Interact(kind="decision_request", message="Which?", reply_mode="blocking",
                                                 options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]))  # fmt: skip
        opened = {"q0": other, "q1": quest}
        listed = list_quests(home, opened.__getitem__)
        assert [r.quest_id for r in listed.quests] == home.quest_ids()
        row = next(r for r in listed.quests if r.quest_id == "q1")
        last = quest.log.read(quest.log.last_seq - 1)[-1]
        assert row == QuestSummary(quest_id="q1", title="Test quest", status="active", anchor=quest.state("status").anchor,
                               last_seq=last.seq, updated_at=last.ts, open_requests=1, health=row.health)  # fmt: skip
        assert row.health.state == "waiting_for_user" and row.health.since_seq == last.seq - 1  # the request, before its delivery
        assert quest_summary(other).open_requests == 0
    finally:
        other.close()


def test_a_row_sees_another_processs_appends(home: Home, quest: Quest) -> None:
    before = quest_summary(quest).last_seq
    with home.open_quest("q1", actor="other") as elsewhere:
        post_message(elsewhere, PostMessage(text="from elsewhere"))
    assert quest_summary(quest).last_seq == before + 1


def test_show_is_the_whole_status_view_and_the_root(quest: Quest) -> None:
    shown = show_quest(quest)
    assert isinstance(shown, StatusState) and shown.root == str(quest.root)
    fields = [*StatusState.__struct_fields__, "root", "health"]
    assert list(msgspec.to_builtins(shown)) == fields
    health = msgspec.to_builtins(shown.health)
    assert health["state"] == "new"
    # what the route answered, and the health added last
    before = msgspec.to_builtins(quest.state("status")) | {"root": str(quest.root), "health": health}
    assert msgspec.json.encode(shown) == msgspec.json.encode(before)


def _seqs(page: EventPage) -> list[int]:
    return [e["seq"] for e in page.events]


def test_pages_forward_backward_and_from_the_tail(quest: Quest) -> None:
    for i in range(6):
        post_message(quest, PostMessage(text=f"m{i}"))
    last = quest.log.last_seq
    first = event_page(quest, limit=2)
    assert _seqs(first) == [1, 2] and first.next_after == 2 and first.has_more
    rest = event_page(quest, after=last - 1, limit=10)
    assert _seqs(rest) == [last] and rest.next_after == last and not rest.has_more
    empty = event_page(quest, after=last, limit=10)
    assert empty.events == [] and empty.next_after == last and not empty.has_more
    back = event_page(quest, before=last, limit=2)
    assert _seqs(back) == [last - 2, last - 1] and back.has_more
    window = event_page(quest, before=last, after=last - 2, limit=10)
    assert _seqs(window) == [last - 1]  # only seqs above after
    tail = event_page(quest, tail=True, limit=2)
    assert _seqs(tail) == [last - 1, last] and tail.has_more
    assert not event_page(quest, tail=True, limit=last).has_more


def test_pages_filter_by_type_and_map_to_acp(quest: Quest) -> None:
    for i in range(3):
        post_message(quest, PostMessage(text=f"m{i}"))
    texts = event_page(quest, limit=10, types=["conversation.message"])
    assert [e["content"] for e in texts.events] == ["m0", "m1", "m2"]
    assert not event_page(quest, tail=True, limit=3, types=["conversation.message"]).has_more
    acp = event_page(quest, limit=1, types=["conversation.message"], fmt="acp")
    note = acp.events[0]
    assert note["method"] == "session/update" and note["params"]["sessionId"] == "q1"
    assert acp.next_after == texts.events[0]["seq"]
