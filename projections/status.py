"""Quest status: title, lifecycle status, active anchor, counts by event type, last seq
(``status.md`` shows the first three and the conversation counts).

Materialises ``quest.yaml``, ``brief.md``, ``plan.md`` and ``status.md`` at the quest
root. ``SUMMARY.md`` belongs to :mod:`projections.artifacts`, which knows the results.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import yaml

from ds_events.events import (
    ConversationMessage,
    Event,
    QuestAnchorChanged,
    QuestArchived,
    QuestCompleted,
    QuestControl,
    QuestCreated,
    QuestRunnerSet,
    QuestUnarchived,
)

from .base import Files, Projection

__all__ = ["StatusState", "PROJECTION", "apply", "render"]

_STATUS_AFTER_CONTROL = {"pause": "paused", "stop": "stopped", "resume": "active"}


class StatusState(msgspec.Struct, kw_only=True):
    quest_id: str = ""
    title: str = ""
    brief: str = ""
    tags: list[str] = []
    status: str = "new"  # new | active | paused | stopped | completed
    anchor: str = "scout"
    created_at: str = ""
    updated_at: str = ""
    last_seq: int = 0
    counts: dict[str, int] = {}
    user_messages: int = 0
    assistant_messages: int = 0
    last_user_message: str = ""
    completed_summary: str = ""
    runner: str = ""  # the quest's own runner and model ("": the home's config)
    model: str = ""
    archived: bool = False  # put away (quest.archived): hidden from lists, no turns, no messages


def initial() -> StatusState:
    return StatusState()


def apply(state: StatusState, event: Event) -> StatusState:
    state.last_seq = event.seq
    state.updated_at = event.ts
    tag = event.TAG
    state.counts[tag] = state.counts.get(tag, 0) + 1
    match event:  # most frequent first: replay of long logs runs this per event
        case ConversationMessage(role=role):
            if role == "user":
                state.user_messages += 1
                state.last_user_message = event.content
            elif role == "assistant":
                state.assistant_messages += 1
        case QuestCreated(title=title, brief=brief, tags=tags):
            state.quest_id = event.quest_id
            state.title, state.brief, state.tags = title, brief, list(tags)
            state.status = "active"
            state.created_at = event.ts
        case QuestAnchorChanged(anchor=anchor):
            state.anchor = anchor
        case QuestControl(action=action):
            if state.status != "completed":
                state.status = _STATUS_AFTER_CONTROL[action]
        case QuestRunnerSet(runner=runner, model=model):
            state.runner, state.model = runner, model
        case QuestCompleted(summary=summary):
            state.status = "completed"
            state.completed_summary = summary
        case QuestArchived():
            state.archived = True
        case QuestUnarchived():
            state.archived = False
    return state


def render(state: StatusState) -> Files:
    if not state.quest_id:
        return {}
    return _identity_files(state) | _status_file(state)


def render_changed(state: StatusState, events: Iterable[Event]) -> Files:
    """Each file only when an event changed what it shows."""
    if not state.quest_id:
        return {}
    events = list(events)
    files: Files = {}
    if any(isinstance(e, _STATUS_EVENTS) for e in events):
        files |= _status_file(state)
    if any(isinstance(e, _IDENTITY_EVENTS) for e in events):
        files |= _identity_files(state)
    return files


# quest.yaml, brief.md and plan.md show only what these events change.
_IDENTITY_EVENTS = (QuestCreated, QuestAnchorChanged, QuestControl, QuestCompleted)
# status.md shows the quest's status, stage and conversation, so only these change it. It
# once also showed the last seq and a count per event type: it was rewritten (and changed
# in git) by every memory write and every MCP call's record. Those figures are in
# ``ds quest show`` and ``GET /api/quests/{id}``.
_STATUS_EVENTS = (*_IDENTITY_EVENTS, ConversationMessage)


def _identity_files(state: StatusState) -> Files:
    quest_yaml = {
        "quest_id": state.quest_id,
        "title": state.title,
        "status": state.status,
        "active_anchor": state.anchor,
        "tags": list(state.tags),
        "created_at": state.created_at,
    }
    return {
        "quest.yaml": yaml.dump(quest_yaml, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True).encode(),
        "brief.md": f"# Brief: {state.title}\n\n{state.brief}\n".encode(),
        "plan.md": f"# Plan: {state.title}\n\n_The agent keeps its plan here; it starts at the `{state.anchor}` stage._\n".encode(),
    }


def _status_file(state: StatusState) -> Files:
    status_md = (
        f"# Status: {state.title}\n\n"
        f"- quest: `{state.quest_id}`\n"
        f"- status: **{state.status}**\n"
        f"- active anchor: `{state.anchor}`\n"
        f"- messages: {state.user_messages} from the user, {state.assistant_messages} from the agent\n"
        + (f"- outcome: {state.completed_summary}\n" if state.completed_summary else "")
        + f"\nEvent counts and the last seq: `ds quest show {state.quest_id}`.\n"
    )
    return {"status.md": status_md.encode()}


# libyaml's emitter when PyYAML was built with it (same output, many times faster).
_YamlDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


PROJECTION = Projection(
    name="status", state_type=StatusState, initial=initial, apply=apply, render=render, render_changed=render_changed
)
