"""The quest domain's answers about quests as a whole: a row per quest of the home (what
the page's quest list shows) and one quest's status with where its files are.

Queries: they read views and append nothing. The HTTP routes ``GET /api/quests`` and
``GET /api/quests/{id}`` answer with these, encoded as they are."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ds_events.home import Home, Quest
from projections.interactions import State as InteractionsState
from projections.status import StatusState

__all__ = ["QuestRow", "QuestList", "QuestShown", "list_quests", "quest_row", "show_quest"]


class QuestRow(msgspec.Struct, kw_only=True):
    """One quest of the list."""

    quest_id: str
    title: str
    status: str
    anchor: str
    last_seq: int
    updated_at: str  # the last event's time
    open_requests: int  # decision requests still waiting for the user


class QuestList(msgspec.Struct, kw_only=True):
    quests: list[QuestRow]


class QuestShown(StatusState, kw_only=True):
    """The quest's status view, every field of it, and its root directory."""

    root: str


def list_quests(home: Home, open_quest: Callable[[str], Quest]) -> QuestList:
    """A row for every quest of ``home``, in the home's order. ``open_quest`` gives the
    open quest of an id (the daemon's hub keeps each open across requests)."""
    return QuestList(quests=[quest_row(open_quest(quest_id)) for quest_id in home.quest_ids()])


def quest_row(quest: Quest) -> QuestRow:
    """The list row of ``quest``, caught up with every process's appends."""
    quest.views.catch_up(keep=False)
    # Lent, not handed out: the page polls the list, and a handed-out state makes the
    # next event copy it.
    s: StatusState
    inbox: InteractionsState
    with quest.views.lend("status") as s, quest.views.lend("interactions") as inbox:
        return QuestRow(
            quest_id=quest.id, title=s.title, status=s.status, anchor=s.anchor, last_seq=s.last_seq,
            updated_at=s.updated_at, open_requests=len(inbox.open_requests),
        )  # fmt: skip


def show_quest(quest: Quest) -> QuestShown:
    """The quest's status view with its root (a shallow copy of the view's fields)."""
    status = quest.state("status")
    return QuestShown(**msgspec.structs.asdict(status), root=str(quest.root))
