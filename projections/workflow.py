"""The `workflow` view: what happened in a quest, one entry per meaningful event, and the
files the events say were written.

Memory is bounded: the newest ``WINDOW`` entries and ``WINDOW`` changed files are kept,
plus a count per entry kind over the whole history (the full history stays in the log).

Events are matched by class (the closed union of :mod:`ds_events.events`): a type not
named here makes no entry.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from ds_events.events import (
    ConversationMessage,
    Event,
    QuestAnchorChanged,
    QuestCompleted,
    QuestControl,
    QuestCreated,
)
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    BranchPrepared,
    GitCheckpointed,
    MainExperimentRecorded,
)
from ds_events.events.bash import BashSessionExited, BashSessionLost, BashSessionStarted
from ds_events.events.interaction import InteractionReplied, InteractionSent
from ds_events.events.memory import CardWritten
from ds_events.events.tool import ToolCallFinished, ToolCallStarted

from .base import Projection

__all__ = ["PROJECTION", "State", "Entry", "WINDOW", "entry_for", "files_written", "record_title"]

WINDOW = 500
_SUMMARY_CHARS = 200


class Entry(msgspec.Struct, kw_only=True, omit_defaults=True):
    seq: int
    ts: str
    # quest | message | artifact | run | analysis | baseline | checkpoint | branch | tool_call | bash | memory | interaction
    entry_kind: str
    title: str
    summary: str = ""
    ref: str | None = None
    status: str | None = None


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    entries: list[Entry] = []  # oldest first, at most WINDOW
    changed_files: list[str] = []  # oldest first, distinct, at most WINDOW
    counts: dict[str, int] = {}  # entry_kind -> entries over the whole log


def initial() -> State:
    return State()


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    if type(event) not in _ENTRY_TYPES:  # bookkeeping: no entry, and no file written
        return state
    entry = entry_for(event)
    if entry is not None:
        _add_entry(state, entry)
    for path in files_written(event):
        _touch(state, path)
    return state


def entry_for(event: Event) -> Entry | None:
    """The workflow entry an event makes, or None for bookkeeping events."""
    seq, ts = event.seq, event.ts
    match event:  # most frequent first: every MCP call leaves a tool.call_finished
        case ToolCallStarted():
            return _tool_call(event, status="in_progress", error="")
        case ToolCallFinished():
            return _tool_call(event, status=event.status or "in_progress", error=event.error_code)
        case QuestCreated():
            return Entry(seq=seq, ts=ts, entry_kind="quest", title=f"Quest created: {event.title}", summary=_short(event.brief))
        case QuestAnchorChanged():
            return Entry(seq=seq, ts=ts, entry_kind="quest", title=f"Stage: {event.anchor}", summary=_short(event.reason),
                         ref=event.anchor)  # fmt: skip
        case QuestControl():
            return Entry(seq=seq, ts=ts, entry_kind="quest", title=f"Control: {event.action}", summary=_short(event.reason),
                         status=event.action)  # fmt: skip
        case QuestCompleted():
            return Entry(seq=seq, ts=ts, entry_kind="quest", title="Quest completed", summary=_short(event.summary),
                         status="completed")  # fmt: skip
        case ConversationMessage():
            return Entry(seq=seq, ts=ts, entry_kind="message", title=f"{event.role} message", summary=_short(event.content))
        case ArtifactRecorded():
            payload = event.payload or {}
            return Entry(seq=seq, ts=ts, entry_kind="artifact",
                         title=f"{event.kind}: {_short(record_title(payload, event.artifact_id))}",
                         summary=_short(str(payload.get("summary") or payload.get("reason") or "")), ref=event.artifact_id)  # fmt: skip
        case MainExperimentRecorded():
            return Entry(seq=seq, ts=ts, entry_kind="run", title=f"Run {event.run}: {_short(event.title)}",
                         summary=_short(event.summary or _metrics(event.metrics_summary)), ref=event.run)  # fmt: skip
        case AnalysisCampaignCreated():
            return Entry(seq=seq, ts=ts, entry_kind="analysis", title=f"Analysis campaign: {_short(event.title)}",
                         summary=_short(event.goal), ref=event.campaign_id)  # fmt: skip
        case AnalysisSliceRecorded():
            return Entry(seq=seq, ts=ts, entry_kind="analysis", title=f"Slice {event.slice_id} {event.status}",
                         summary=_short(event.summary or _metrics(event.metrics_summary)),
                         ref=f"{event.campaign_id}/{event.slice_id}", status=event.status)  # fmt: skip
        case BaselinePublished() | BaselineAttached() | BaselineConfirmed():
            verb = event.TAG.rsplit("_", 1)[1]
            summary = event.summary if isinstance(event, BaselineConfirmed) else ""  # only a confirmation says one
            return Entry(seq=seq, ts=ts, entry_kind="baseline", title=f"Baseline {event.baseline_id} {verb}",
                         summary=_short(summary), ref=event.baseline_id)  # fmt: skip
        case GitCheckpointed():
            return Entry(seq=seq, ts=ts, entry_kind="checkpoint", title=f"Checkpoint on {event.branch}",
                         summary=_short(event.message.splitlines()[0] if event.message else ""), ref=event.sha)  # fmt: skip
        case BranchPrepared():
            return Entry(seq=seq, ts=ts, entry_kind="branch", title=f"Branch {event.branch} ({event.branch_kind})", ref=event.branch)
        case BashSessionStarted():
            return Entry(seq=seq, ts=ts, entry_kind="bash", title=f"bash: {_short(event.command)}", ref=event.session_id,
                         status="running")  # fmt: skip
        case BashSessionExited() | BashSessionLost():
            ended = "lost" if isinstance(event, BashSessionLost) else event.status
            return Entry(seq=seq, ts=ts, entry_kind="bash", title=f"bash {event.session_id} {ended}", ref=event.session_id,
                         status=ended)  # fmt: skip
        case CardWritten():
            return Entry(seq=seq, ts=ts, entry_kind="memory", title=f"Memory {event.kind}: {_short(event.title)}", ref=event.card_id)
        case InteractionSent():
            return Entry(seq=seq, ts=ts, entry_kind="interaction", title="Sent", summary=_short(event.message),
                         ref=event.interaction_id)  # fmt: skip
        case InteractionReplied():
            return Entry(seq=seq, ts=ts, entry_kind="interaction", title="Replied", summary=_short(event.text),
                         ref=event.interaction_id)  # fmt: skip
    return None


def files_written(event: Event) -> list[str]:
    """Paths (relative to the quest root) an event says were written."""
    match event:
        case ArtifactRecorded(kind=kind, artifact_id=artifact_id):
            from .artifacts import KIND_DIRS  # the same layout the artifacts view materialises

            paths = [f"artifacts/{KIND_DIRS[kind]}/{artifact_id}.json"] if kind in KIND_DIRS else []
            named = (event.payload or {}).get("paths")  # files the record says it wrote
            if isinstance(named, list):
                paths += [p for p in named if isinstance(p, str) and p]
            return paths
        case BaselineConfirmed():
            return [event.contract_path]
        case CardWritten():
            return [f"memory/{event.kind}/{event.card_id}.md"]
    return []


def record_title(payload: dict[str, Any], fallback: str) -> str:
    """A one-line title for an artifact record: its title, summary, decision or message."""
    for key in ("title", "summary", "message"):
        if payload.get(key):
            return str(payload[key])
    if payload.get("verdict") or payload.get("action"):
        return " → ".join(str(payload[k]) for k in ("verdict", "action") if payload.get(k))
    return fallback


# -- private helpers ----------------------------------------------------------------------

# The types entry_for matches (files_written's are among them): one set lookup lets
# every other event pass.
_ENTRY_TYPES: frozenset[type[Event]] = frozenset({
    QuestCreated, QuestAnchorChanged, QuestControl, QuestCompleted, ConversationMessage, ArtifactRecorded,
    MainExperimentRecorded, AnalysisCampaignCreated, AnalysisSliceRecorded, BaselinePublished, BaselineAttached,
    BaselineConfirmed, GitCheckpointed, BranchPrepared, ToolCallStarted, ToolCallFinished, BashSessionStarted,
    BashSessionExited, BashSessionLost, CardWritten, InteractionSent, InteractionReplied,
})  # fmt: skip


def _tool_call(event: ToolCallStarted | ToolCallFinished, *, status: str, error: str) -> Entry:
    return Entry(seq=event.seq, ts=event.ts, entry_kind="tool_call", title=f"{event.namespace}.{event.tool}".strip("."),
                 summary=_short(error), ref=event.call_id, status=status)  # fmt: skip


def _add_entry(state: State, entry: Entry) -> None:
    state.counts[entry.entry_kind] = state.counts.get(entry.entry_kind, 0) + 1
    if entry.entry_kind == "tool_call" and entry.status != "in_progress":
        # A finished call replaces its in-progress entry when that is still in the window.
        for i in range(len(state.entries) - 1, max(-1, len(state.entries) - 50), -1):
            old = state.entries[i]
            if old.entry_kind == "tool_call" and old.ref == entry.ref and old.status == "in_progress":
                state.entries[i] = replace(old, status=entry.status, summary=entry.summary)
                state.counts["tool_call"] -= 1
                return
    state.entries.append(entry)
    if len(state.entries) > WINDOW:
        del state.entries[0]


def _touch(state: State, path: str) -> None:
    files = state.changed_files
    if files and files[-1] == path:
        return
    if path in files:
        files.remove(path)
    files.append(path)
    if len(files) > WINDOW:
        del files[0]


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def _metrics(metrics: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in sorted(metrics.items()))


PROJECTION: Projection[State] = Projection(name="workflow", state_type=State, initial=initial, apply=apply)
