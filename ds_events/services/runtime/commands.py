"""The runtime's contract: what its parts hand each other for one turn.

The scheduler decides an :class:`Action` from the quest's projections, asks a prompt
builder for the text with a :class:`PromptRequest`, hands a runner (an adapter in
``ds_events/runners``) a :class:`TurnSpec`, and gets a :class:`RunResult` back. The runtime
has no tools of its own: pause, stop and resume take the quest domain's ``Control``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from ds_events.home import Quest
from projections.interactions import InboundItem

__all__ = ["ActionKind", "Action", "PromptRequest", "PromptBuilder", "TurnSpec", "RunResult"]

ActionKind = Literal["start", "retry", "continue", "busy", "idle"]


class Action(msgspec.Struct, frozen=True, kw_only=True):
    """What a quest needs now. ``kind``: ``start`` (queued messages), ``retry`` (a failed
    turn, due at ``due``), ``continue`` (the last turn was cut off), ``busy`` (a turn
    runs), ``idle`` (nothing to do; ``reason`` says why, e.g. ``paused``)."""

    kind: ActionKind
    reason: str = ""
    due: float = 0.0  # epoch seconds, for a retry
    retry_of: str | None = None
    attempt: int = 1


class PromptRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a prompt builder gets for one turn."""

    run_id: str
    runner: str
    model: str
    skill: str
    skill_reason: str
    messages: list[InboundItem]
    continuation: bool = False  # the previous turn was cut off: continue it
    retry_of: str | None = None
    attempt: int = 1


PromptBuilder = Callable[[Quest, PromptRequest], str]


class TurnSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What a runner gets: where the quest is, the turn's id and directory, the prompt."""

    quest_id: str
    quest_root: str
    home: str
    run_id: str
    run_dir: str  # <quest>/.ds/runs/<run_id>: the runner keeps its raw streams here
    prompt: str
    prompt_path: str
    skill: str
    runner: str
    model: str = ""
    attempt: int = 1
    turn_number: int = 1  # 1 for the quest's first turn
    env: dict[str, str] = {}  # what the agent's MCP servers need (DS_HOME, DS_QUEST_ID)
    retry_of: str | None = None  # the failed attempt this turn retries (its events are in the log)


class RunResult(msgspec.Struct, kw_only=True):
    """How the agent process ended, as its runner saw it."""

    ok: bool
    exit_code: int | None = None
    error: str = ""
