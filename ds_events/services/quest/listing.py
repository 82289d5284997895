"""The quest domain's answers about quests as a whole: a row per quest of the home (what
the page's quest list and ``ds quest list`` show) and one quest's status with where its
files are.

Queries: they read views and append nothing. The HTTP routes ``GET /api/quests`` and
``GET /api/quests/{id}`` answer with these, encoded as they are."""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from ds_events.config import RunnerConfig
from ds_events.errors import ServiceError
from ds_events.home import Home, Quest
from projections import health as health_view
from projections.health import Health
from projections.interactions import PROJECTION as INTERACTIONS, State as InteractionsState
from projections.status import PROJECTION as STATUS, StatusState
from projections.turns import PROJECTION as TURNS, State as TurnsState

from .commands import QuestSummary

__all__ = ["QuestList", "QuestShown", "list_quests", "quest_summary", "show_quest", "quest_health"]


class QuestList(msgspec.Struct, kw_only=True):
    quests: list[QuestSummary]


class QuestShown(StatusState, kw_only=True):
    """The quest's status view, every field of it, its root directory and its health."""

    root: str
    health: Health


def quest_summary(quest: Quest) -> QuestSummary:
    """The quest's list row, from its status and interactions views caught up with the log."""
    quest.views.catch_up(keep=False)
    # Lent, not handed out: the page polls the list, and a handed-out state makes the
    # next event copy it.
    s: StatusState
    inbox: InteractionsState
    t: TurnsState
    runner = _runner_config(quest)
    with quest.views.lend(STATUS.name) as s, quest.views.lend(INTERACTIONS.name) as inbox, quest.views.lend(TURNS.name) as t:
        return QuestSummary(
            quest_id=quest.id, title=s.title, status=s.status, anchor=s.anchor, last_seq=s.last_seq,
            updated_at=s.updated_at, open_requests=len(inbox.open_requests), health=_derive(s, t, inbox, runner),
            archived=s.archived,
        )  # fmt: skip


def quest_health(quest: Quest, *, now: float | None = None) -> Health:
    """The quest's health now (``now``: POSIX seconds, default the clock), judged with the
    home's runner settings (``stall_seconds``, ``max_attempts``)."""
    return _derive(quest.state("status"), quest.state("turns"), quest.state("interactions"), _runner_config(quest), now)


def list_quests(home: Home, open_quest: Callable[[str], Quest] | None = None, *, archived: bool = False) -> QuestList:
    """A row per quest of ``home``, in the home's order; archived quests only with
    ``archived`` (each row says whether it is). ``open_quest`` gives the open quest of
    an id (the daemon passes its own, which keeps quests open between calls); without
    it each quest is opened read-only for this call and closed again."""
    if open_quest is not None:
        rows = [quest_summary(open_quest(quest_id)) for quest_id in home.quest_ids()]
    else:
        rows = []
        for quest_id in home.quest_ids():
            with home.open_quest(quest_id, read_only=True) as quest:
                rows.append(quest_summary(quest))
    return QuestList(quests=[r for r in rows if archived or not r.archived])


def show_quest(quest: Quest) -> QuestShown:
    """The quest's status view with its root (a shallow copy of the view's fields)."""
    status = quest.state("status")
    return QuestShown(**msgspec.structs.asdict(status), root=str(quest.root), health=quest_health(quest))


def _derive(status: StatusState, turns: TurnsState, inbox: InteractionsState, runner: RunnerConfig, now: float | None = None) -> Health:
    return health_view.derive(
        status, turns, inbox, now=time.time() if now is None else now, stall_seconds=runner.stall_seconds,
        max_attempts=runner.max_attempts,
    )  # fmt: skip


def _runner_config(quest: Quest) -> RunnerConfig:
    # A read must not fail on a config the loader refuses (`ds doctor` says what is
    # wrong with it): the defaults judge stalls and budgets then.
    try:
        return quest.home.config().runner
    except ServiceError:
        return RunnerConfig()
