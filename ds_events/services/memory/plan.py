"""The stage memory plan: which kinds of memory to pull first, per stage, quest and global.

The prompt builder asks :func:`stage_memory_plan` what to pull for the quest's active
stage and :func:`pull_for_stage` to pull it (a search when there is a query, else the
most recent cards), in plan order.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ds_events.errors import Invalid
from ds_events.memory.store import MemoryContext
from ds_events.services.memory.cards import list_recent, search
from ds_events.services.memory.commands import CardInfo, ListRecent, SearchCards

__all__ = ["StagePlan", "PlanStep", "STAGE_PLANS", "stage_memory_plan", "pull_for_stage"]


@dataclass(frozen=True)
class StagePlan:
    stage: str
    quest: tuple[str, ...]  # kinds from the quest's memory, most important first
    global_: tuple[str, ...]  # kinds from global memory, most important first

    def steps(self) -> list[tuple[str, str]]:
        """``(scope, kind)`` pairs in pull order: quest kinds interleaved with global ones."""
        out: list[tuple[str, str]] = []
        for i in range(max(len(self.quest), len(self.global_))):
            if i < len(self.quest):
                out.append(("quest", self.quest[i]))
            if i < len(self.global_):
                out.append(("global", self.global_[i]))
        return out


class PlanStep(msgspec.Struct, frozen=True, kw_only=True):
    """The cards one step of a plan pulled: of ``kind`` from the ``scope`` memory, best or newest first."""

    scope: str
    kind: str
    cards: list[CardInfo]


STAGE_PLANS: dict[str, StagePlan] = {
    p.stage: p
    for p in (
        # Scouting: what is known about the literature and the problem, here and elsewhere.
        StagePlan("scout", ("papers", "knowledge", "decisions"), ("papers", "knowledge", "templates")),
        # Reproducing a baseline: past failures and environment lessons first.
        StagePlan("baseline", ("episodes", "knowledge", "papers"), ("episodes", "knowledge", "templates")),
        StagePlan("idea", ("ideas", "papers", "decisions", "episodes"), ("ideas", "papers", "knowledge")),
        StagePlan("experiment", ("episodes", "knowledge", "ideas", "decisions"), ("episodes", "knowledge", "templates")),
        StagePlan("analysis-campaign", ("episodes", "decisions", "knowledge", "ideas"), ("knowledge", "episodes")),
        StagePlan("write", ("papers", "decisions", "episodes", "templates"), ("templates", "papers", "knowledge")),
        StagePlan("finalize", ("decisions", "episodes", "templates"), ("templates", "knowledge")),
        StagePlan("decision", ("decisions", "ideas", "episodes", "knowledge"), ("decisions", "knowledge")),
    )
}


def stage_memory_plan(stage: str) -> StagePlan:
    """The plan for ``stage`` (one of the eight quest stages)."""
    try:
        return STAGE_PLANS[stage]
    except KeyError:
        raise Invalid(f"unknown stage {stage!r}: use one of {', '.join(STAGE_PLANS)}", code="invalid_stage") from None


def pull_for_stage(mem: MemoryContext, stage: str, query: str = "", per_kind: int = 3) -> list[PlanStep]:
    """Cards for ``stage``, one step per (scope, kind) in plan order, each card once; empty steps dropped."""
    plan = stage_memory_plan(stage)
    out = []
    seen: set[str] = set()
    for scope, kind in plan.steps():
        if query.strip():
            cards: list[CardInfo] = [*search(mem, SearchCards(query=query, scope=scope, kind=kind, limit=per_kind)).results]
        else:
            cards = list_recent(mem, ListRecent(scope=scope, kind=kind, limit=per_kind)).results
        cards = [c for c in cards if c.id not in seen]
        seen.update(c.id for c in cards)
        if cards:
            out.append(PlanStep(scope=scope, kind=kind, cards=cards))
    return out
