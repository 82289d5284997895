"""Quest-level commands: messages, control, anchor moves, completion."""

from __future__ import annotations

from ds_events.events import ConversationMessage, Event, QuestAnchorChanged, QuestCompleted, QuestControl
from ds_events.home import Quest

from ds_events.errors import Conflict, Invalid

__all__ = ["post_message", "control", "change_anchor", "complete", "ANCHORS", "CONTROL_ACTIONS"]

ANCHORS = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize", "decision")
CONTROL_ACTIONS = ("pause", "stop", "resume")
MAX_MESSAGE_CHARS = 100_000


def post_message(quest: Quest, text: str, *, role: str = "user", source: str = "cli") -> Event:
    """Append a conversation message; returns it as stored (with its seq)."""
    if not isinstance(text, str) or not text.strip():
        raise Invalid("a message needs some text", code="empty_message")
    if len(text) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a message is at most {MAX_MESSAGE_CHARS} characters", code="message_too_long")
    if role not in ("user", "assistant", "system"):
        raise Invalid(f"unknown role {role!r}: use user, assistant or system", code="invalid_role")
    return quest.emit(ConversationMessage(role=role, content=text, source=source))[0]  # type: ignore[arg-type]


def control(quest: Quest, action: str, *, reason: str = "") -> Event:
    """Pause, stop or resume the quest."""
    if action not in CONTROL_ACTIONS:
        raise Invalid(f"unknown control action {action!r}: use pause, stop or resume", code="invalid_action")
    status = quest.state("status").status
    if status == "completed":
        raise Conflict("the quest is completed; it cannot be paused, stopped or resumed", code="quest_completed")
    event = quest.emit(QuestControl(action=action, reason=reason))[0]  # type: ignore[arg-type]
    if action in ("pause", "stop"):
        # A paused or stopped quest runs nothing: end its shell sessions (TERM, then KILL).
        from .bash_exec import kill_quest_sessions

        kill_quest_sessions(quest, reason=f"quest_{action}")
    return event


def change_anchor(quest: Quest, anchor: str, *, reason: str = "") -> Event:
    if anchor not in ANCHORS:
        raise Invalid(f"unknown anchor {anchor!r}: use one of {', '.join(ANCHORS)}", code="invalid_anchor")
    previous = quest.state("status").anchor
    return quest.emit(QuestAnchorChanged(anchor=anchor, previous=previous, reason=reason))[0]


def complete(quest: Quest, *, summary: str = "") -> Event:
    if quest.state("status").status == "completed":
        raise Conflict("the quest is already completed", code="quest_completed")
    return quest.emit(QuestCompleted(summary=summary))[0]
