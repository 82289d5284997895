"""status.md changes only with what it shows (status, stage, conversation), so a memory
write or an MCP call's record rewrites no quest file but its own."""

from __future__ import annotations

import msgspec

from ds_events.events import ConversationMessage, QuestAnchorChanged, QuestCreated
from ds_events.events.memory import CardWritten
from ds_events.events.tool import ToolCallFinished
from projections import status
from projections.base import fold


def _seq(events: list) -> list:
    return [msgspec.structs.replace(e, seq=i + 1, ts=f"2026-12-01T00:00:{i:02d}Z", quest_id="q1") for i, e in enumerate(events)]


def test_only_status_events_rewrite_status_md() -> None:
    events = _seq([
        QuestCreated(title="T", brief="b"),
        CardWritten(card_id="knowledge-0001", kind="knowledge", title="x", body="y"),
        ToolCallFinished(call_id="tc-1", namespace="memory", tool="write", status="ok"),
        ConversationMessage(role="user", content="hi"),
        QuestAnchorChanged(anchor="idea"),
    ])  # fmt: skip
    state = fold(status.PROJECTION, events)
    assert status.PROJECTION.render_changed(state, events[1:3]) == {}  # type: ignore[misc]
    assert set(status.PROJECTION.render_changed(state, events[3:4])) == {"status.md"}  # type: ignore[misc]
    assert {"status.md", "quest.yaml"} <= set(status.PROJECTION.render_changed(state, events[4:]))  # type: ignore[misc]
    # and what it renders equals a full render, whatever came in between
    assert status.PROJECTION.render(state)["status.md"] == status.PROJECTION.render_changed(state, events[3:4])["status.md"]  # type: ignore[misc]
