"""Quest lifecycle, conversation and log-maintenance events."""

from __future__ import annotations

from typing import Literal

from .base import Event

__all__ = [
    "QuestCreated",
    "QuestAnchorChanged",
    "QuestControl",
    "QuestCompleted",
    "QuestRunnerSet",
    "QuestArchived",
    "QuestUnarchived",
    "ConversationMessage",
    "LogRecovered",
    "LogRepaired",
    "EVENTS",
]


class QuestCreated(Event, tag="quest.created", kw_only=True):
    """A quest came into being.

    v1 stored the brief as ``goal`` and had no ``tags``; :mod:`ds_events.events.upcast`
    lifts such lines.
    """

    v: int = 2
    title: str
    brief: str = ""
    tags: list[str] = []


class QuestAnchorChanged(Event, tag="quest.anchor_changed", kw_only=True):
    """The quest's active anchor (the stage the agent works in) moved."""

    anchor: str
    previous: str | None = None
    reason: str = ""


class QuestControl(Event, tag="quest.control", kw_only=True):
    """A human (or the daemon) paused, stopped or resumed the quest."""

    action: Literal["pause", "stop", "resume"]
    reason: str = ""


class QuestCompleted(Event, tag="quest.completed", kw_only=True):
    """The quest reached its end."""

    summary: str = ""


class QuestRunnerSet(Event, tag="quest.runner_set", kw_only=True):
    """The agent that runs this quest's turns (empty: the home's ``runner`` config)."""

    runner: str = ""
    model: str = ""


class QuestArchived(Event, tag="quest.archived", kw_only=True):
    """The quest was put away: hidden from the quest lists (unless asked for), no turn
    is scheduled for it and no message accepted, its log and files kept whole.
    ``quest.unarchived`` takes it back."""

    reason: str = ""


class QuestUnarchived(Event, tag="quest.unarchived", kw_only=True):
    """An archived quest was taken back: listed, scheduled and steerable again."""

    reason: str = ""


class ConversationMessage(Event, tag="conversation.message", kw_only=True):
    """A message in the quest's conversation, from the user or the assistant."""

    role: Literal["user", "assistant", "system"]
    content: str
    source: str = ""  # where it came from: "cli", "web", a connector name ...


class LogRecovered(Event, tag="log.recovered", kw_only=True):
    """Opening the log found a torn tail (a line without its newline, an undecodable
    last line, or the first lines of a batch whose last line is missing) and moved it
    to quarantine."""

    reason: str
    offset: int
    length: int
    quarantine_path: str
    dropped_events: int = 0  # complete event lines of an incomplete batch among them


class LogRepaired(Event, tag="log.repaired", kw_only=True):
    """``ds repair`` explicitly quarantined lines from the middle of the log."""

    removed_lines: list[int]
    removed_bytes: int
    quarantine_path: str
    reasons: list[str] = []
    renumbered: int = 0  # kept events whose seq changed to close gaps or reorder
    rechained_from_seq: int | None = None  # first seq whose ``prev`` was recomputed
    reordered: int = 0  # kept events moved back into seq order
    unvouched: list[int] = []  # seqs quarantined because no chain or anchor vouched for them


EVENTS = (
    QuestCreated,
    QuestAnchorChanged,
    QuestControl,
    QuestCompleted,
    QuestRunnerSet,
    ConversationMessage,
    LogRecovered,
    LogRepaired,
    QuestArchived,
    QuestUnarchived,
)
