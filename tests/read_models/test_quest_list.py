"""The quest list row (services.quest.listing): one typed row per quest of the home,
from its status and interactions views, the same whether the caller keeps quests open
(the daemon) or not (a script)."""

from __future__ import annotations

import msgspec

from ds_events.home import Home
from ds_events.services import interactions as interaction_service, quest as quest_service
from ds_events.services.quest import listing


def test_a_row_says_title_status_stage_last_event_and_the_requests_waiting_for_the_user(home: Home) -> None:
    first = home.create_quest("First quest", quest_id="qa", brief="b")
    second = home.create_quest("Second quest", quest_id="qb")
    try:
        quest_service.post_message(first, quest_service.PostMessage(text="please start"))
        quest_service.change_anchor(first, quest_service.ChangeAnchor(anchor="baseline"))
        interaction_service.interact(first, interaction_service.Interact(
            kind="decision_request", message="Which baseline?", reply_mode="blocking",
            options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
        ))  # fmt: skip
        quest_service.record_control(second, quest_service.Control(action="pause"))
        last = first.log.read(after_seq=first.log.last_seq - 1)[-1]

        row = listing.quest_summary(first)

        assert isinstance(row, quest_service.QuestSummary)
        health = msgspec.to_builtins(row)["health"]
        assert msgspec.to_builtins(row) == {
            "quest_id": "qa", "title": "First quest", "status": "active", "anchor": "baseline",
            "last_seq": first.log.last_seq, "updated_at": last.ts, "open_requests": 1, "health": health,
            "archived": False,
        }  # fmt: skip
        assert health["state"] == "waiting_for_user" and "Which baseline?" in health["summary"]
        # The JSON keeps the order the quest list has always had (health and archived added last).
        assert list(msgspec.to_builtins(row)) == [
            "quest_id", "title", "status", "anchor", "last_seq", "updated_at", "open_requests", "health", "archived",
        ]  # fmt: skip
        paused = listing.quest_summary(second)
        assert (paused.status, paused.open_requests, paused.last_seq) == ("paused", 0, second.log.last_seq)
    finally:
        first.close()
        second.close()


def test_the_list_has_a_row_per_quest_with_or_without_the_callers_open_quests(home: Home) -> None:
    opened = {qid: home.create_quest(f"Quest {qid}", quest_id=qid) for qid in ("qc", "qa", "qb")}
    try:
        quest_service.post_message(opened["qb"], quest_service.PostMessage(text="hello"))
        by_the_daemon = listing.list_quests(home, opened.__getitem__).quests
        on_its_own = listing.list_quests(home).quests  # opens each quest read-only, and closes it
        assert [r.quest_id for r in by_the_daemon] == home.quest_ids() == ["qa", "qb", "qc"]
        assert on_its_own == by_the_daemon
        assert {r.quest_id: r.last_seq for r in on_its_own} == {q.id: q.log.last_seq for q in opened.values()}
        # A quest added since is listed at the next call.
        with home.create_quest("Late quest", quest_id="qd"):
            assert [r.title for r in listing.list_quests(home).quests][-1] == "Late quest"
    finally:
        for q in opened.values():
            q.close()


def test_an_empty_home_lists_no_quests(home: Home) -> None:
    assert listing.list_quests(home).quests == []
