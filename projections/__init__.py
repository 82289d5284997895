"""Pure folds over events: one module per view. No I/O, no clock.

``REGISTRY`` names every projection a quest keeps; replay folds them all in one pass and
writes their materialised files. A domain adds its module here.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Projection, fold

__all__ = ["Projection", "fold", "QUEST_PROJECTIONS", "quest_projections"]

# Module paths, each exposing PROJECTION. Order matters only for file ownership:
# a later projection's file wins over an earlier one's for the same path.
QUEST_PROJECTIONS: tuple[str, ...] = (
    "projections.status",
    "projections.memory",
    "projections.bash_sessions",
    "projections.artifacts",
    "projections.interactions",
    "projections.workflow",
    "projections.node_traces",
    "projections.turns",
    "projections.papers",
    "projections.research",
    "projections.manuscript",
)


def quest_projections() -> list[Projection[Any]]:
    # Any: each projection has its own state type; the views layer keeps them apart by name.
    return [importlib.import_module(name).PROJECTION for name in QUEST_PROJECTIONS]
