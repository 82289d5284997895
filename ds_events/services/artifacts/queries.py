"""Read-only answers about a quest's results: the method scoreboard and the optimisation
frontier (pure functions of the `artifacts` view, :mod:`projections.results`)."""

from __future__ import annotations

from ds_events.home import Quest
from projections import results as results_view

from .commands import GetMethodScoreboard, GetOptimizationFrontier
from .results import FrontierResult, ScoreboardResult

__all__ = ["method_scoreboard", "optimization_frontier"]


def method_scoreboard(quest: Quest, cmd: GetMethodScoreboard) -> ScoreboardResult:
    """The quest's research lines with their runs, best results and the incumbent line."""
    return ScoreboardResult(scoreboard=results_view.method_scoreboard(quest.state("artifacts")))


def optimization_frontier(quest: Quest, cmd: GetOptimizationFrontier) -> FrontierResult:
    """Best run and lines, waiting idea briefs and candidates, stagnant lines, a mode."""
    return FrontierResult(optimization_frontier=results_view.optimization_frontier(quest.state("artifacts")))
