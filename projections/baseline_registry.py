"""The home's baseline registry: baselines any quest published, for every quest of the
home to attach.

Its log lives under ``DS_HOME/baselines/.ds/events.jsonl`` (same format and rules as a
quest's); it materialises ``DS_HOME/baselines/<baseline_id>.json``. A later publication
of the same id replaces the entry (the newest publication wins, whichever quest made it).

``sources`` says which quest's publication of which baseline the registry holds
(``"<quest>/<baseline_id>"`` -> the registry event's id): a quest publishes an id once,
so a quest publication missing from it is one whose publisher died before the registry
append (:func:`ds_events.services.artifacts.baselines.publish_baseline` completes it).

An entry keeps the publication itself (the event); :func:`entry_document` is its JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import msgspec

from ds_events.events import Event
from ds_events.events.artifact import RegistryBaselinePublished

from .base import Files, Projection

__all__ = ["PROJECTION", "State", "Entry", "entry_document", "entry_path", "source_key"]


class Entry(msgspec.Struct, kw_only=True, frozen=True):
    """A baseline of the registry: its newest publication, and how many there were."""

    publication: RegistryBaselinePublished
    publications: int = 1

    @property
    def baseline_id(self) -> str:
        return self.publication.baseline_id

    @property
    def payload(self) -> dict[str, Any]:
        return self.publication.payload

    @property
    def variant_ids(self) -> list[str]:
        return self.publication.variant_ids

    @property
    def source_quest(self) -> str:
        return self.publication.source_quest

    @property
    def seq(self) -> int:
        return self.publication.seq


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    entries: dict[str, Entry] = {}
    sources: dict[str, str] = {}


def source_key(quest_id: str, baseline_id: str) -> str:
    return f"{quest_id}/{baseline_id}"


def entry_document(entry: Entry) -> dict[str, Any]:
    """An entry as the registry's file and ``publish_baseline``'s answer show it."""
    p = entry.publication
    return {
        "baseline_id": p.baseline_id, "payload": p.payload, "variant_ids": list(p.variant_ids),
        "source_quest": p.source_quest, "seq": p.seq, "ts": p.ts, "publications": entry.publications,
    }  # fmt: skip


def entry_path(baseline_id: str) -> str:
    return f"{baseline_id}.json"


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    if isinstance(event, RegistryBaselinePublished):
        before = state.entries.get(event.baseline_id)
        state.entries[event.baseline_id] = Entry(publication=event, publications=(before.publications + 1) if before else 1)
        state.sources[source_key(event.source_quest, event.baseline_id)] = event.id
    return state


def render(state: State) -> Files:
    files: Files = {}
    for baseline_id in state.entries:
        files.update(_entry_file(state, baseline_id))
    return files


def render_changed(state: State, events: Iterable[Event]) -> Files:
    files: Files = {}
    for event in events:
        if isinstance(event, RegistryBaselinePublished):
            files.update(_entry_file(state, event.baseline_id))
    return files


def _entry_file(state: State, baseline_id: str) -> Files:
    entry = state.entries.get(baseline_id)
    if entry is None:
        return {}
    body = {**entry.payload, **entry_document(entry), "registry_kind": "baseline"}
    body.pop("payload", None)
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return {entry_path(baseline_id): text.encode()}


PROJECTION = Projection(
    name="baseline_registry",
    state_type=State,
    initial=State,
    apply=apply,
    render=render,
    render_changed=render_changed,
    version=3,  # 2: sources; 3: an entry keeps its publication event (older snapshots: refolded)
)
