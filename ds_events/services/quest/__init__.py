"""The quest domain: its lifecycle (messages, control records, anchor, completion,
runner) and its read models (the quest list row, workflow, node traces, Canvas).

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import ANCHORS as ANCHORS
    from .commands import CONTROL_ACTIONS as CONTROL_ACTIONS
    from .commands import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
    from .commands import ROLES as ROLES
    from .commands import ChangeAnchor as ChangeAnchor
    from .commands import Complete as Complete
    from .commands import Control as Control
    from .commands import PostMessage as PostMessage
    from .commands import QuestSummary as QuestSummary
    from .commands import SetRunner as SetRunner
    from .lifecycle import change_anchor as change_anchor
    from .lifecycle import complete as complete
    from .lifecycle import post_message as post_message
    from .lifecycle import record_control as record_control
    from .lifecycle import set_runner as set_runner
    from .read_models import VIEWS as VIEWS
    from .read_models import canvas as canvas
    from .read_models import canvas_svg as canvas_svg
    from .read_models import list_quests as list_quests
    from .read_models import node_trace as node_trace
    from .read_models import node_traces as node_traces
    from .read_models import quest_summary as quest_summary
    from .read_models import workflow as workflow

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "PostMessage", "Control", "ChangeAnchor", "Complete", "SetRunner", "QuestSummary", "ANCHORS", "CONTROL_ACTIONS",
        "ROLES", "MAX_MESSAGE_CHARS",
    ),
    "lifecycle": ("post_message", "record_control", "change_anchor", "complete", "set_runner"),
    "read_models": ("quest_summary", "list_quests", "workflow", "node_traces", "node_trace", "canvas", "canvas_svg", "VIEWS"),
})  # fmt: skip
