"""The home's baseline registry: its own log under ``DS_HOME/baselines`` (see
:mod:`projections.baseline_registry`), where a baseline any quest publishes can be
attached by every quest of the home.

A publication is appended to the quest first, then to the registry under the quest
event's id (so a retry, or two racing, store it once). A publisher that dies between the
two leaves a quest publication the registry lacks: :func:`unregistered_publications`
finds them, :func:`complete_registry` (``ds repair --registry``) or a retry of
``publish_baseline`` completes them.
"""

from __future__ import annotations

from typing import Any

from ds_events.events.artifact import BaselinePublished, RegistryBaselinePublished
from ds_events.home import Home, Quest
from ds_events.store import EventStore
from ds_events.stores import REGISTRY_LOG
from ds_events.views import Views
from projections import baseline_registry
from projections.artifacts import State

__all__ = [
    "open_registry",
    "registry_state",
    "registry_entry",
    "publish_to_registry",
    "unregistered_publication",
    "unregistered_publications",
    "complete_registry",
]


def open_registry(home: Home, actor: str = "cli") -> tuple[EventStore, Views]:
    """The registry's log and view (the caller closes the log)."""
    log = home.open_log(REGISTRY_LOG, actor=actor)
    try:
        views = Views(log, home.log_root(REGISTRY_LOG), projections=[baseline_registry.PROJECTION]).load()
    except BaseException:
        log.close()
        raise
    return log, views


def registry_state(home: Home) -> baseline_registry.State | None:
    """The home's baseline registry as folded now, or None when nothing was ever
    published (a read: no registry log is created)."""
    if not home.has_log(REGISTRY_LOG):
        return None
    log, views = open_registry(home)
    try:
        state: baseline_registry.State = views.state(baseline_registry.PROJECTION.name)
        return state
    finally:
        log.close()


def registry_entry(home: Home, baseline_id: str) -> baseline_registry.Entry | None:
    """The registry's entry for ``baseline_id``, or None."""
    state = registry_state(home)
    return None if state is None else state.entries.get(baseline_id)


def publish_to_registry(quest: Quest, published: BaselinePublished) -> dict[str, Any]:
    """The registry half of ``published`` (a quest event), under the quest event's id:
    appending it again (a retry, two retries racing) stores nothing new. Returns the
    entry's document with the path of its file."""
    log, views = open_registry(quest.home, quest.log.actor)
    try:
        event = RegistryBaselinePublished(
            baseline_id=published.baseline_id, payload=dict(published.payload), variant_ids=list(published.variant_ids),
            source_quest=quest.id, id=published.id,
        )  # fmt: skip
        views.materialise(log.append([event]))
        state: baseline_registry.State = views.state(baseline_registry.PROJECTION.name)
        entry = state.entries[published.baseline_id]
        return {**baseline_registry.entry_document(entry), "path": str(views.root / baseline_registry.entry_path(published.baseline_id))}
    finally:
        log.close()


def unregistered_publication(quest: Quest, state: State, baseline_id: str) -> BaselinePublished | None:
    """This quest's publication of ``baseline_id`` when the registry does not hold it (its
    publisher died between the two appends), else None."""
    baseline = state.baselines.get(baseline_id)
    if baseline is None or baseline.published_seq is None:
        return None
    event = quest.log.get(baseline.published_seq)
    if not isinstance(event, BaselinePublished):
        return None
    registry = registry_state(quest.home)
    held = registry is not None and baseline_registry.source_key(quest.id, baseline_id) in registry.sources
    return None if held else event


def unregistered_publications(home: Home) -> list[dict[str, Any]]:
    """Every quest publication (``artifact.baseline_published``) the home's registry
    lacks — a publisher died between its quest append and its registry append — as
    ``{quest_id, baseline_id, seq, event_id}`` (what ``ds verify --registry`` prints).
    Reads the logs only."""
    registry = registry_state(home)
    held = registry.sources if registry is not None else {}
    missing: list[dict[str, Any]] = []
    for quest_id in home.quest_ids():
        log = home.open_log(quest_id, read_only=True)
        try:
            latest: dict[str, BaselinePublished] = {}  # one publication per baseline: the last one counts
            for event in log.read(types=[BaselinePublished.TAG]):
                if isinstance(event, BaselinePublished):
                    latest[event.baseline_id] = event
        finally:
            log.close()
        for baseline_id, published in sorted(latest.items()):
            if held.get(baseline_registry.source_key(quest_id, baseline_id)) != published.id:
                missing.append({"quest_id": quest_id, "baseline_id": baseline_id, "seq": published.seq, "event_id": published.id})
    return missing


def complete_registry(home: Home, actor: str = "cli") -> list[dict[str, Any]]:
    """Append to the registry every quest publication it lacks (what a retry of each
    ``publish_baseline`` would do; idempotent by the quest event's id). Returns them."""
    done = []
    for item in unregistered_publications(home):
        with home.open_quest(item["quest_id"], actor=actor) as quest:
            event = quest.log.get(item["seq"])
            assert isinstance(event, BaselinePublished)
            publish_to_registry(quest, event)
        done.append(item)
    return done
