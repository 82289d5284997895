"""Rebuild every projection and every materialised file of a quest from its log."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .events import new_event_id
from .store import EventStore
from .stores import FILE, open_log
from .views import Views

__all__ = ["ReplayResult", "replay_quest"]


@dataclass
class ReplayResult:
    events: int
    last_seq: int
    files_written: list[str]
    # Files whose on-disk bytes differed from the log (hand edits): copied here first.
    replaced: list[str] = field(default_factory=list)
    replaced_dir: str | None = None


def replay_quest(
    root: str | os.PathLike[str],
    *,
    quest_id: str,
    progress: Callable[[int], None] | None = None,
    key: bytes | None = None,
    log: EventStore | None = None,
) -> ReplayResult:
    """Fold all projections from seq 0 (snapshots ignored), rewrite files and snapshots.

    A file that differs from what the log renders is kept under ``.ds/replaced/<id>/``
    before it is overwritten (see ``ReplayResult.replaced``).

    ``progress`` receives byte counts as lines are consumed (for a progress bar).
    ``key`` signs the log's head anchor if opening it records a recovery.
    ``log``: the quest's log opened by the caller (``Home.open_log``, any store; the
    caller closes it); by default the file at ``root/.ds/events.jsonl``.
    Running it twice gives identical files.
    """
    root = Path(root)
    owned = log is None
    if log is None:
        log = open_log(FILE, path=root / ".ds" / "events.jsonl", name=quest_id, actor="replay", key=key)
    try:
        views = Views(log, root)
        views.catch_up(progress=progress, keep=False)
        events = views.applied
        keep = root / ".ds" / "replaced" / new_event_id()
        written = views.materialise(full=True, keep_replaced=keep)
        views.save_snapshots()
        return ReplayResult(
            events=events,
            last_seq=views.last_seq,
            files_written=written,
            replaced=list(views.replaced),
            replaced_dir=str(keep) if views.replaced else None,
        )
    finally:
        if owned:
            log.close()
