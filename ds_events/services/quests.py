"""Quest-level commands: messages, control, anchor moves, completion."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from ds_events.config import RUNNER_NAMES
from ds_events.events import ConversationMessage, Event, QuestAnchorChanged, QuestCompleted, QuestControl, QuestRunnerSet
from ds_events.home import Quest

from ds_events.errors import Conflict, Invalid

from .commands import Command

__all__ = [
    "PostMessage", "Control", "ChangeAnchor", "Complete", "SetRunner",
    "post_message", "control", "change_anchor", "complete", "set_runner", "ANCHORS", "CONTROL_ACTIONS",
]  # fmt: skip

ANCHORS = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize", "decision")
CONTROL_ACTIONS = ("pause", "stop", "resume")
MAX_MESSAGE_CHARS = 100_000


class PostMessage(Command):
    """A message to the quest's conversation (the user's, by default)."""

    text: Annotated[str, Meta(description=f"The message, at most {MAX_MESSAGE_CHARS} characters.")]
    role: Annotated[str, Meta(description="user | assistant | system.")] = "user"


class Control(Command):
    """Pause, stop or resume the quest."""

    action: Annotated[str, Meta(description="pause | stop | resume.")]
    reason: Annotated[str, Meta(description="Why, recorded with the event.")] = ""


class ChangeAnchor(Command):
    """Move the quest to another stage (anchor)."""

    anchor: Annotated[str, Meta(description="One of " + ", ".join(ANCHORS) + ".")]
    reason: Annotated[str, Meta(description="Why, recorded with the event.")] = ""


class Complete(Command):
    """Mark the quest completed."""

    summary: Annotated[str, Meta(description="What the quest found.")] = ""


class SetRunner(Command):
    """Choose the agent that runs this quest's turns (empty: the home's runner config)."""

    runner: Annotated[str, Meta(description="codex | claude | acp | scripted, or empty for the home's runner.name.")] = ""
    model: Annotated[str, Meta(description="The model the agent uses, or empty for runner.model / the agent's own.")] = ""


def post_message(quest: Quest, cmd: PostMessage, *, source: str = "cli") -> Event:
    """Append a conversation message; returns it as stored (with its seq)."""
    text, role = cmd.text, cmd.role
    if not text.strip():
        raise Invalid("a message needs some text", code="empty_message")
    if len(text) > MAX_MESSAGE_CHARS:
        raise Invalid(f"a message is at most {MAX_MESSAGE_CHARS} characters", code="message_too_long")
    if role not in ("user", "assistant", "system"):
        raise Invalid(f"unknown role {role!r}: use user, assistant or system", code="invalid_role")
    return quest.emit(ConversationMessage(role=role, content=text, source=source))[0]  # type: ignore[arg-type]


def control(quest: Quest, cmd: Control) -> Event:
    """Pause, stop or resume the quest."""
    action, reason = cmd.action, cmd.reason
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
        # ... and no agent: the running turn's process group goes too (its host sees it
        # end and records the turn interrupted or cancelled).
        from .turns import stop_runner

        stop_runner(quest, grace_seconds=quest.home.config().runner.kill_grace_seconds)
    return event


def change_anchor(quest: Quest, cmd: ChangeAnchor) -> Event:
    anchor, reason = cmd.anchor, cmd.reason
    if anchor not in ANCHORS:
        raise Invalid(f"unknown anchor {anchor!r}: use one of {', '.join(ANCHORS)}", code="invalid_anchor")
    previous = quest.state("status").anchor
    return quest.emit(QuestAnchorChanged(anchor=anchor, previous=previous, reason=reason))[0]


def complete(quest: Quest, cmd: Complete) -> Event:
    summary = cmd.summary
    if quest.state("status").status == "completed":
        raise Conflict("the quest is already completed", code="quest_completed")
    return quest.emit(QuestCompleted(summary=summary))[0]


def set_runner(quest: Quest, cmd: SetRunner) -> Event:
    """Record the quest's runner and model; the next turn uses them."""
    if cmd.runner and cmd.runner not in RUNNER_NAMES:
        raise Invalid(f"unknown runner {cmd.runner!r}: use one of {', '.join(RUNNER_NAMES)}", code="unknown_runner")
    if len(cmd.model) > 200 or any(c.isspace() for c in cmd.model):
        raise Invalid("a model is a name without spaces, at most 200 characters", code="invalid_model")
    return quest.emit(QuestRunnerSet(runner=cmd.runner, model=cmd.model))[0]
