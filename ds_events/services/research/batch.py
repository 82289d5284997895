"""Appending a batch that records git side effects already made (a branch, a worktree):
the effects stand if the events are in the log, else they are undone."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ds_events.artifacts import git as git_ops
from ds_events.events import Event, new_event_id
from ds_events.home import Quest
from ds_events.log import LogError
from ds_events.store import StoreTransaction

__all__ = ["append_batch"]


def append_batch(quest: Quest, undo: git_ops.Rollback, decide: Callable[[StoreTransaction], list[Event]]) -> list[Event]:
    """Append the events ``decide`` returns (under the log's lock) that record the side
    effects registered on ``undo``: they stand if the events are in the log, else they
    are undone. As in :func:`ds_events.services.artifacts.checkpoints.append_recording`, "in the log" is
    judged by the file: a failed sync may still have left the lines there."""
    before = 0
    batch: list[Event] = []
    try:
        with quest.transaction() as txn:
            before = txn.last_seq
            batch = [e if e.id else msgspec.structs.replace(e, id=new_event_id()) for e in decide(txn)]
            stored = txn.append(batch)
            undo.keep()
    except BaseException as exc:
        if batch and not undo.kept and _reached_log(quest, batch[0].id, before):
            undo.keep()
            exc.add_note(f"the {batch[0].type} event reached the log although the append failed, so what it records was kept")
        raise
    return stored


def _reached_log(quest: Quest, event_id: str, after_seq: int) -> bool:
    try:
        for _seq, line in quest.log.iter_lines(after_seq=after_seq):
            if f'"id":"{event_id}"'.encode() in line:
                return True
    except (OSError, LogError):
        return False
    return False
