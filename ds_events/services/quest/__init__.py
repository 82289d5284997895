"""The quest domain: its lifecycle (messages, control records, anchor, completion, runner) and its read models (workflow, node traces, Canvas).

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        PostMessage as PostMessage,
        Control as Control,
        ChangeAnchor as ChangeAnchor,
        Complete as Complete,
        SetRunner as SetRunner,
        ANCHORS as ANCHORS,
        CONTROL_ACTIONS as CONTROL_ACTIONS,
        MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS,
    )
    from .lifecycle import (
        post_message as post_message,
        record_control as record_control,
        change_anchor as change_anchor,
        complete as complete,
        set_runner as set_runner,
    )
    from .read_models import (
        workflow as workflow,
        node_traces as node_traces,
        node_trace as node_trace,
        canvas as canvas,
        canvas_svg as canvas_svg,
        VIEWS as VIEWS,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("PostMessage", "Control", "ChangeAnchor", "Complete", "SetRunner", "ANCHORS", "CONTROL_ACTIONS", "MAX_MESSAGE_CHARS"),
    "lifecycle": ("post_message", "record_control", "change_anchor", "complete", "set_runner"),
    "read_models": ("workflow", "node_traces", "node_trace", "canvas", "canvas_svg", "VIEWS"),
})
