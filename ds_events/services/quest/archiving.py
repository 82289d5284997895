"""Archiving a quest: put away, reversibly, with its log and files kept whole.

An archived quest is hidden from the quest lists (``ds quest list``, ``GET
/api/quests``) unless asked for, runs no turn (the scheduler's ``next_action`` is idle
with reason ``archived``) and takes no message (``quest_archived``): whatever would
start a turn waits until ``quest.unarchived``. Archiving is refused while a turn runs
(``turn_running``): pause or stop the quest first, so nothing is left half done behind
the shelf.
"""

from __future__ import annotations

from ds_events.errors import Conflict
from ds_events.events import QuestArchived, QuestUnarchived
from ds_events.home import Quest

from .commands import Archive, Archived

__all__ = ["archive", "unarchive", "refuse_if_archived"]


def archive(quest: Quest, cmd: Archive) -> Archived:
    """Append ``quest.archived`` (refused when it is archived already or a turn runs)."""
    with quest.transaction() as txn:  # the check and the append under the log's lock
        if quest.state("status").archived:
            raise Conflict(f"quest {quest.id!r} is archived already: `ds quest unarchive {quest.id}` takes it back",
                           code="quest_archived")  # fmt: skip
        running = quest.state("turns").running
        if running is not None:
            raise Conflict(f"turn {running} is running: stop it first (`ds control {quest.id} stop`), then archive",
                           code="turn_running", run_id=running)  # fmt: skip
        event = txn.append(QuestArchived(reason=cmd.reason))
    return Archived(quest_id=quest.id, archived=True, seq=event.seq)


def unarchive(quest: Quest, cmd: Archive) -> Archived:
    """Append ``quest.unarchived`` (refused when the quest is not archived)."""
    with quest.transaction() as txn:
        if not quest.state("status").archived:
            raise Conflict(f"quest {quest.id!r} is not archived: nothing to take back", code="quest_not_archived")
        event = txn.append(QuestUnarchived(reason=cmd.reason))
    return Archived(quest_id=quest.id, archived=False, seq=event.seq)


def refuse_if_archived(quest: Quest, what: str) -> None:
    """Raise ``quest_archived`` for ``what`` (e.g. "a message") on an archived quest."""
    if quest.state("status").archived:
        raise Conflict(f"quest {quest.id!r} is archived and takes no {what}: `ds quest unarchive {quest.id}` first",
                       code="quest_archived")  # fmt: skip
