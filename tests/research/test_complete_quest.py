"""DeepScientist's ``complete_quest`` on our `artifact` server: the quest completes only
after the user explicitly approved a blocking decision request of decision type
``quest_completion_approval``; otherwise a structured refusal says what is missing and
nothing is written."""

from __future__ import annotations

import mcp
import pytest

from ds_events.home import Home, Quest
from ds_events.services.interactions.commands import Reply
from ds_events.services.interactions.mailbox import reply
from tests.compat.research_support import LogWatch, artifact_client, ok, refused, stdio_artifact

_ASK = {
    "kind": "decision_request", "message": "May I end this quest now?", "reply_mode": "blocking",
    "reply_schema": {"type": "object", "decision_type": "quest_completion_approval"},
    "options": [{"id": "approve", "label": "Yes, end the quest"}, {"id": "continue", "label": "No, keep working"}],
}  # fmt: skip
_OPTIONS = _ASK["options"]


@pytest.mark.slow
async def test_the_quest_completes_after_an_explicit_approval_through_a_stdio_client(home: Home, quest: Quest) -> None:
    log = LogWatch(quest)
    async with mcp.Client(stdio_artifact(home)) as c:
        missing = await refused(c, "complete_quest", {"summary": "done"})
        assert missing["error"] == "approval_required" and "quest_completion_approval" in missing["message"]
        asked = await ok(c, "interact", _ASK)
        log.since()
        waiting = await refused(c, "complete_quest", {"summary": "done"})
        assert waiting["error"] == "waiting_for_user" and waiting["interaction_id"] == asked["interaction_id"]
        assert log.types() == []

        reply(quest, Reply(interaction_id=asked["interaction_id"], text="approve"))
        log.since()
        done = await ok(c, "complete_quest", {"summary": "Quest complete after MCP verification."})
        assert done["status"] == "completed" and done["interaction_id"] == asked["interaction_id"]
        assert done["approval_message_id"] and done["seq"]
        events = log.since()
        assert [e["type"] for e in events] == ["quest.completed"]
        assert events[0]["summary"].startswith("Quest complete after MCP verification.")
        state = await ok(c, "get_quest_state", {})
        assert state["quest_state"]["status"] == "completed"
        again = await ok(c, "complete_quest", {})
        assert again["status"] == "already_completed" and again["seq"] is None
        assert log.types() == []
    assert "status: completed" in (quest.root / "quest.yaml").read_text()


@pytest.mark.parametrize(
    ("answer", "option", "approved"),
    [
        ("yes, wrap it up", None, True),
        ("同意完成", None, True),
        ("Approved.", None, True),
        ("no, keep going", None, False),
        ("not yet", None, False),
        ("let's wait for the ablation", None, False),
        ("hmm", None, False),
        ("whatever you pick", "yes", True),
        ("whatever you pick", "no", False),
    ],
)
async def test_only_an_explicit_yes_completes_the_quest(home: Home, quest: Quest, answer: str, option: str | None, approved: bool) -> None:
    async with artifact_client(home) as c:
        args = dict(_ASK, options=[{"id": "yes", "label": "Yes, end it"}, {"id": "no", "label": "No, continue"}])
        asked = await ok(c, "interact", args)
        reply(quest, Reply(interaction_id=asked["interaction_id"], text=answer, option_id=option))
        log = LogWatch(quest)
        if approved:
            assert (await ok(c, "complete_quest", {}))["status"] == "completed"
            assert log.types() == ["quest.completed"]
        else:
            payload = await refused(c, "complete_quest", {})
            assert payload["error"] == "approval_not_explicit" and payload["interaction_id"] == asked["interaction_id"]
            assert log.types() == []
            assert quest.state("status").status != "completed"


async def test_a_decision_request_that_is_not_about_completion_does_not_approve_it(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        asked = await ok(c, "interact", {"kind": "decision_request", "message": "Run the ablation?", "reply_mode": "blocking",
                                         "options": _OPTIONS})
        reply(quest, Reply(interaction_id=asked["interaction_id"], text="yes"))
        log = LogWatch(quest)
        assert (await refused(c, "complete_quest", {}))["error"] == "approval_required"
        assert log.types() == []


async def test_the_schema_form_of_the_decision_type_is_understood_too(home: Home, quest: Quest) -> None:
    schema = {"type": "object", "properties": {"decision_type": {"const": "quest_completion_approval"}}}
    async with artifact_client(home) as c:
        asked = await ok(c, "interact", {"kind": "decision_request", "message": "End?", "reply_mode": "blocking",
                                         "reply_schema": schema, "options": _OPTIONS})  # fmt: skip
        reply(quest, Reply(interaction_id=asked["interaction_id"], text="ok, approve"))
        assert (await ok(c, "complete_quest", {"summary": "finished"}))["status"] == "completed"


async def test_deepscientists_bare_decision_type_form_without_options_completes_the_quest(home: Home, quest: Quest) -> None:
    """DeepScientist asks for completion with ``reply_schema={"decision_type": ...}`` and no
    options; the user's free-text "approve" is the explicit yes."""
    async with artifact_client(home) as c:
        asked = await ok(c, "interact", {
            "kind": "decision_request", "message": "May I end this quest now?", "reply_mode": "blocking",
            "deliver_to_bound_conversations": False, "include_recent_inbound_messages": False,
            "reply_schema": {"decision_type": "quest_completion_approval"},
        })  # fmt: skip
        before = quest.log.last_seq
        await refused(c, "complete_quest", {"summary": "too early"})  # asked, not yet answered
        assert quest.log.last_seq == before + 1  # only the refused call's own record
        reply(quest, Reply(interaction_id=asked["interaction_id"], text="approve"))
        done = await ok(c, "complete_quest", {"summary": "Quest complete after MCP verification."})
    assert done["status"] == "completed"
    assert quest.state("status").status == "completed"
