"""Quest-level changes: messages, control records, anchor moves, completion, the runner.

Each validates its command against the quest's status and appends one event. Pausing or
stopping a quest also ends its shell sessions and its running agent: that is the
runtime's job (:func:`ds_events.services.runtime.steering.control`), which records the
control through :func:`record_control` here first.
"""

from __future__ import annotations

from ds_events.config import RUNNER_NAMES
from ds_events.errors import Conflict, Invalid
from ds_events.events import ConversationMessage, QuestAnchorChanged, QuestCompleted, QuestControl, QuestRunnerSet
from ds_events.home import Quest

from .archiving import refuse_if_archived
from .commands import ANCHORS, CONTROL_ACTIONS, MAX_MESSAGE_CHARS, ROLES, ChangeAnchor, Complete, Control, PostMessage, SetRunner

__all__ = ["post_message", "record_control", "change_anchor", "complete", "set_runner"]


def post_message(quest: Quest, cmd: PostMessage, *, source: str = "cli", actor: str | None = None) -> ConversationMessage:
    """Append a conversation message; returns it as stored (with its seq).

    A user's message is recorded as the user's act, ``actor="user:<source>"``
    (``user:cli``, ``user:http``), not as the act of the process that appended it (the
    daemon's quest handle would record ``daemon``); ``actor`` overrides it."""
    text = cmd.text
    if not text.strip():
        raise Invalid("a message needs some text", code="empty_message")
    if len(text) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a message is at most {MAX_MESSAGE_CHARS} characters", code="message_too_long")
    role = next((r for r in ROLES if r == cmd.role), None)
    if role is None:
        raise Invalid(f"unknown role {cmd.role!r}: use user, assistant or system", code="invalid_role")
    if actor is None:
        actor = f"user:{source}" if role == "user" else ""  # "": the log's own actor
    with quest.transaction() as txn:  # under the log's lock: an archive cannot slip in between
        refuse_if_archived(quest, "message")
        return txn.append(ConversationMessage(role=role, content=text, source=source, actor=actor))


def record_control(quest: Quest, cmd: Control) -> QuestControl:
    """Record a pause, stop or resume (nothing else: see the module docstring)."""
    action = next((a for a in CONTROL_ACTIONS if a == cmd.action), None)
    if action is None:
        raise Invalid(f"unknown control action {cmd.action!r}: use pause, stop or resume", code="invalid_action")
    status = quest.state("status").status
    if status == "completed":
        raise Conflict("the quest is completed; it cannot be paused, stopped or resumed", code="quest_completed")
    return quest.emit(QuestControl(action=action, reason=cmd.reason))


def change_anchor(quest: Quest, cmd: ChangeAnchor) -> QuestAnchorChanged:
    anchor, reason = cmd.anchor, cmd.reason
    if anchor not in ANCHORS:
        raise Invalid(f"unknown anchor {anchor!r}: use one of {', '.join(ANCHORS)}", code="invalid_anchor")
    previous = quest.state("status").anchor
    return quest.emit(QuestAnchorChanged(anchor=anchor, previous=previous, reason=reason))


def complete(quest: Quest, cmd: Complete) -> QuestCompleted:
    summary = cmd.summary
    if quest.state("status").status == "completed":
        raise Conflict("the quest is already completed", code="quest_completed")
    return quest.emit(QuestCompleted(summary=summary))


def set_runner(quest: Quest, cmd: SetRunner) -> QuestRunnerSet:
    """Record the quest's runner and model; the next turn uses them."""
    if cmd.runner and cmd.runner not in RUNNER_NAMES:
        raise Invalid(f"unknown runner {cmd.runner!r}: use one of {', '.join(RUNNER_NAMES)}", code="unknown_runner")
    if len(cmd.model) > 200 or any(c.isspace() for c in cmd.model):
        raise Invalid("a model is a name without spaces, at most 200 characters", code="invalid_model")
    return quest.emit(QuestRunnerSet(runner=cmd.runner, model=cmd.model))
