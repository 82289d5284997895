"""The `workflow` view: what happened in a quest, one entry per meaningful event, and the
files the events say were written.

Memory is bounded: the newest ``WINDOW`` entries and ``WINDOW`` changed files are kept,
plus a count per entry kind over the whole history (the full history stays in the log).

Tool-call events (``tool.call_started`` / ``tool.call_finished``, from the MCP handlers)
are read by tag and attribute, so this module does not import their classes: any event
whose tag starts with ``tool.`` becomes a ``tool_call`` entry.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from ds_events.events import Event

from .base import Projection

__all__ = ["PROJECTION", "State", "Entry", "WINDOW", "entry_for", "files_written", "record_title"]

WINDOW = 500
_SUMMARY_CHARS = 200


class Entry(msgspec.Struct, kw_only=True, omit_defaults=True):
    seq: int
    ts: str
    entry_kind: str  # quest | message | artifact | run | analysis | baseline | checkpoint | branch | tool_call | bash | memory | interaction
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
    entry = entry_for(event)
    if entry is not None:
        _add_entry(state, entry)
    for path in files_written(event):
        _touch(state, path)
    return state


def entry_for(event: Event) -> Entry | None:
    """The workflow entry an event makes, or None for bookkeeping events."""
    tag = event.TAG
    get = lambda name, default=None: getattr(event, name, default)  # noqa: E731
    base: dict[str, Any] = {"seq": event.seq, "ts": event.ts}
    domain = tag.split(".", 1)[0]
    if tag == "quest.created":
        return Entry(**base, entry_kind="quest", title=f"Quest created: {get('title', '')}", summary=_short(get("brief", "")))
    if tag == "quest.anchor_changed":
        return Entry(**base, entry_kind="quest", title=f"Stage: {get('anchor')}", summary=_short(get("reason", "")), ref=get("anchor"))
    if tag == "quest.control":
        return Entry(**base, entry_kind="quest", title=f"Control: {get('action')}", summary=_short(get("reason", "")), status=get("action"))
    if tag == "quest.completed":
        return Entry(**base, entry_kind="quest", title="Quest completed", summary=_short(get("summary", "")), status="completed")
    if tag == "conversation.message":
        return Entry(**base, entry_kind="message", title=f"{get('role')} message", summary=_short(get("content", "")))
    if tag == "artifact.recorded":
        payload = get("payload", {}) or {}
        return Entry(**base, entry_kind="artifact", title=f"{get('kind')}: {_short(record_title(payload, get('artifact_id')))}",
                     summary=_short(str(payload.get("summary") or payload.get("reason") or "")), ref=get("artifact_id"))  # fmt: skip
    if tag == "artifact.main_experiment_recorded":
        return Entry(**base, entry_kind="run", title=f"Run {get('run')}: {_short(get('title', ''))}",
                     summary=_short(get("summary", "") or _metrics(get("metrics_summary", {}))), ref=get("run"))  # fmt: skip
    if tag == "artifact.analysis_campaign_created":
        return Entry(**base, entry_kind="analysis", title=f"Analysis campaign: {_short(get('title', ''))}",
                     summary=_short(get("goal", "")), ref=get("campaign_id"))  # fmt: skip
    if tag == "artifact.analysis_slice_recorded":
        return Entry(**base, entry_kind="analysis", title=f"Slice {get('slice_id')} {get('status')}",
                     summary=_short(get("summary", "") or _metrics(get("metrics_summary", {}))),
                     ref=f"{get('campaign_id')}/{get('slice_id')}", status=get("status"))  # fmt: skip
    if tag in ("artifact.baseline_published", "artifact.baseline_attached", "artifact.baseline_confirmed"):
        verb = tag.rsplit("_", 1)[1]
        return Entry(**base, entry_kind="baseline", title=f"Baseline {get('baseline_id')} {verb}",
                     summary=_short(get("summary", "") or ""), ref=get("baseline_id"))  # fmt: skip
    if tag == "git.checkpointed":
        return Entry(**base, entry_kind="checkpoint", title=f"Checkpoint on {get('branch')}",
                     summary=_short((get("message", "") or "").splitlines()[0] if get("message") else ""), ref=get("sha"))  # fmt: skip
    if tag == "git.branch_prepared":
        return Entry(**base, entry_kind="branch", title=f"Branch {get('branch')} ({get('branch_kind')})", ref=get("branch"))
    if domain == "tool":
        status = get("status") or "in_progress"
        error = get("error_code") or ""
        return Entry(**base, entry_kind="tool_call", title=f"{get('namespace', '')}.{get('tool', '')}".strip("."),
                     summary=_short(error), ref=get("call_id"), status=status)  # fmt: skip
    if tag == "bash.session_started":
        return Entry(**base, entry_kind="bash", title=f"bash: {_short(str(get('command', '')))}", ref=get("session_id"), status="running")
    if tag in ("bash.session_exited", "bash.session_lost"):
        status = "lost" if tag.endswith("lost") else str(get("status"))
        return Entry(**base, entry_kind="bash", title=f"bash {get('session_id')} {status}", ref=get("session_id"), status=status)
    if tag == "memory.card_written":
        return Entry(**base, entry_kind="memory", title=f"Memory {get('kind')}: {_short(get('title', ''))}", ref=get("card_id"))
    if tag in ("interaction.sent", "interaction.replied"):
        return Entry(**base, entry_kind="interaction", title=tag.split(".", 1)[1].capitalize(),
                     summary=_short(str(get("message", "") or get("text", "") or "")), ref=get("interaction_id"))  # fmt: skip
    return None


def files_written(event: Event) -> list[str]:
    """Paths (relative to the quest root) an event says were written."""
    tag = event.TAG
    if tag == "artifact.recorded":
        from .artifacts import KIND_DIRS  # the same layout the artifacts view materialises

        kind = getattr(event, "kind", "")
        paths = [f"artifacts/{KIND_DIRS[kind]}/{getattr(event, 'artifact_id')}.json"] if kind in KIND_DIRS else []
        named = (getattr(event, "payload", {}) or {}).get("paths")  # files the record says it wrote
        if isinstance(named, list):
            paths += [p for p in named if isinstance(p, str) and p]
        return paths
    if tag == "artifact.baseline_confirmed":
        return [getattr(event, "contract_path")]
    if tag == "memory.card_written":
        return [f"memory/{getattr(event, 'kind')}/{getattr(event, 'card_id')}.md"]
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
