"""The ACP mapping: every event type of the closed union becomes a notification the
official SDK accepts, and the notification gives the event back unchanged."""

from __future__ import annotations

import json

import pytest
from acp.schema import SessionNotification

from ds_events.events import ALL_EVENT_TYPES, TYPES_BY_TAG, ConversationMessage, QuestAnchorChanged
from ds_events.events.tool import ToolCallFinished, ToolCallStarted
from projections import acp as acp_map

from .samples import sample

# Tags deliberately shown only as ``session_info_update`` (raw event in ``_meta``): a
# new event type must be added either to the mapping table or here, or the test fails.
INFO_ONLY = {
    "quest.created", "quest.control", "quest.completed", "quest.runner_set", "log.recovered", "log.repaired",
    "memory.card_written", "memory.card_superseded", "memory.card_promoted", "memory.card_imported",
    "memory.guard_configured",
    "artifact.recorded", "git.checkpointed", "git.branch_prepared", "artifact.baseline_published",
    "artifact.baseline_attached", "artifact.baseline_confirmed", "artifact.main_experiment_recorded",
    "artifact.analysis_campaign_created", "artifact.analysis_slice_recorded", "artifact.summary_refreshed",
    "git.graph_rendered", "artifact.baseline_waived", "registry.baseline_published",
    "interaction.sent", "interaction.replied", "mailbox.delivered", "delivery.binding_added",
    "delivery.binding_removed", "delivery.routing_policy_changed", "delivery.attempted",
    "runner.turn_started", "runner.process_started", "runner.turn_finished", "runner.turn_retry_scheduled", "runner.turn_held",
    "artifact.paper_added",
    "research.idea_submitted", "research.branch_activated",
    "interaction.superseded", "quest.archived", "quest.unarchived",
    "paper.outline_submitted", "paper.writing_plan_compiled", "paper.bundle_submitted",
}  # fmt: skip


def test_every_tag_has_a_decided_mapping():
    undecided = set(TYPES_BY_TAG) - acp_map.mapped_tags() - INFO_ONLY
    assert undecided == set(), f"event types with no ACP mapping decided: {sorted(undecided)}"
    assert INFO_ONLY <= set(TYPES_BY_TAG), f"stale INFO_ONLY tags: {sorted(INFO_ONLY - set(TYPES_BY_TAG))}"


@pytest.mark.parametrize("cls", ALL_EVENT_TYPES, ids=lambda c: c.TAG)
def test_every_event_maps_to_a_valid_notification_and_back(cls):
    event = sample(cls)
    note = acp_map.to_notification(event, "sess-1")
    # The wire form is plain JSON.
    note = json.loads(json.dumps(note))
    assert note["jsonrpc"] == "2.0" and note["method"] == "session/update"
    assert "id" not in note  # a notification, not a request
    parsed = SessionNotification.model_validate(note["params"])
    assert parsed.session_id == "sess-1"
    kind = note["params"]["update"]["sessionUpdate"]
    if cls.TAG in INFO_ONLY:
        assert kind == "session_info_update"
    else:
        assert kind != "session_info_update"
    assert acp_map.from_notification(note) == event


@pytest.mark.parametrize(
    ("role", "kind"),
    [("user", "user_message_chunk"), ("assistant", "agent_message_chunk"), ("system", "agent_thought_chunk")],
)
def test_messages_by_role(role, kind):
    event = ConversationMessage(role=role, content="hello", seq=1, id="e1")
    update = acp_map.to_notification(event, "s")["params"]["update"]
    assert update["sessionUpdate"] == kind
    assert update["content"] == {"type": "text", "text": "hello"}


def test_tool_calls_become_tool_call_then_update():
    started = ToolCallStarted(call_id="c1", namespace="bash_exec", tool="bash_exec", arguments={"command": "ls"})
    done = ToolCallFinished(call_id="c1", namespace="bash_exec", tool="bash_exec", status="error",
                            started=True, error_code="timeout", error_message="too slow")  # fmt: skip
    first = acp_map.to_notification(started, "s")["params"]["update"]
    second = acp_map.to_notification(done, "s")["params"]["update"]
    assert (first["sessionUpdate"], first["status"], first["kind"]) == ("tool_call", "in_progress", "execute")
    assert first["rawInput"] == {"command": "ls"}
    assert (second["sessionUpdate"], second["toolCallId"], second["status"]) == ("tool_call_update", "c1", "failed")
    assert second["rawOutput"]["error"] == "timeout"
    # A quick call logged once shows whole, with its input and outcome.
    once = ToolCallFinished(call_id="c2", namespace="memory", tool="search_memory", status="ok",
                            arguments={"query": "x"}, result={"items": []})  # fmt: skip
    whole = acp_map.to_notification(once, "s")["params"]["update"]
    assert (whole["sessionUpdate"], whole["status"], whole["kind"]) == ("tool_call", "completed", "search")
    assert whole["rawInput"] == {"query": "x"} and whole["rawOutput"]["result"] == {"items": []}


def test_anchor_change_is_a_plan():
    update = acp_map.to_notification(QuestAnchorChanged(anchor="experiment", previous="idea"), "s")["params"]["update"]
    assert update["sessionUpdate"] == "plan"
    statuses = {e["content"]: e["status"] for e in update["entries"]}
    assert statuses["idea"] == "completed" and statuses["experiment"] == "in_progress"
    assert statuses["write"] == "pending"


def test_foreign_notification_is_refused():
    with pytest.raises(ValueError, match="not a ds-events notification"):
        acp_map.from_notification({"jsonrpc": "2.0", "method": "session/update", "params": {"update": {}}})
    bad = acp_map.to_notification(ConversationMessage(role="user", content="x"), "s")
    bad["params"]["update"]["_meta"]["ds_events"]["event"]["role"] = "robot"
    with pytest.raises(ValueError, match="invalid"):
        acp_map.from_notification(bad)
