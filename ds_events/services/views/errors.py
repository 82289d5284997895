"""The views domain's error codes (see :mod:`ds_events.services.quest.errors` for the
shape). ``unknown_node`` is the quest read models' code: one meaning for one fact."""

from __future__ import annotations

from ds_events.errors import catalogue
from ds_events.services.quest.errors import CODES as QUEST_CODES

__all__ = ["CODES"]

CODES = catalogue(
    QUEST_CODES["unknown_node"],  # node_details: neither the traces nor git know the ref
)
