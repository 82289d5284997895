"""Memory: knowledge cards in a quest's log and in global memory, ranked search,
near-duplicate refusal, supersession, promotion, audit and hand-edit import.

The commands are in :mod:`ds_events.services.memory`; this package holds what they
build on (stores, the search index, text measures) and the record-style and
stage-plan APIs.
"""

from .plan import STAGE_PLANS, StagePlan, pull_for_stage, stage_memory_plan
from .store import MemoryContext, MemoryStore

__all__ = ["MemoryContext", "MemoryStore", "StagePlan", "STAGE_PLANS", "stage_memory_plan", "pull_for_stage"]
