"""The quest domain: its lifecycle (messages, control records, anchor, completion,
runner) and its read models (the quest list row, workflow, node traces, Canvas).

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .archiving import archive as archive, unarchive as unarchive
    from .commands import (
        ANCHORS as ANCHORS,
        CONTROL_ACTIONS as CONTROL_ACTIONS,
        MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS,
        ROLES as ROLES,
        Archive as Archive,
        Archived as Archived,
        ChangeAnchor as ChangeAnchor,
        Complete as Complete,
        Control as Control,
        DeletePlan as DeletePlan,
        DeleteQuest as DeleteQuest,
        PostMessage as PostMessage,
        QuestSummary as QuestSummary,
        SetRunner as SetRunner,
    )
    from .event_pages import (
        FORMATS as FORMATS,
        EventFormat as EventFormat,
        EventPage as EventPage,
        event_json as event_json,
        event_page as event_page,
    )
    from .lifecycle import (
        change_anchor as change_anchor,
        complete as complete,
        post_message as post_message,
        record_control as record_control,
        set_runner as set_runner,
    )
    from .listing import (
        QuestList as QuestList,
        QuestShown as QuestShown,
        list_quests as list_quests,
        quest_health as quest_health,
        quest_summary as quest_summary,
        show_quest as show_quest,
    )
    from .read_models import (
        VIEWS as VIEWS,
        canvas as canvas,
        canvas_svg as canvas_svg,
        node_trace as node_trace,
        node_traces as node_traces,
        workflow as workflow,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "PostMessage", "Control", "ChangeAnchor", "Complete", "SetRunner", "QuestSummary", "ANCHORS",
        "CONTROL_ACTIONS", "ROLES", "MAX_MESSAGE_CHARS", "Archive", "Archived", "DeleteQuest", "DeletePlan",
    ),
    "archiving": ("archive", "unarchive"),
    "lifecycle": ("post_message", "record_control", "change_anchor", "complete", "set_runner"),
    "read_models": ("workflow", "node_traces", "node_trace", "canvas", "canvas_svg", "VIEWS"),
    "listing": ("QuestList", "QuestShown", "list_quests", "quest_summary", "show_quest", "quest_health"),
    "event_pages": ("EventPage", "EventFormat", "FORMATS", "event_page", "event_json"),
})  # fmt: skip
