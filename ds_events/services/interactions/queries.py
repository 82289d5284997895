"""The interactions domain's answer about a quest's conversation with the user: the
requests still waiting for a reply, the most recent interactions and how many messages
the agent has not read yet.

A query: it reads the ``interactions`` view and appends nothing. ``GET
/api/quests/{id}/interactions`` answers with it, encoded as it is."""

from __future__ import annotations

import msgspec

from ds_events.home import Quest
from projections.interactions import InteractionRecord, recent_interactions

__all__ = ["InteractionsList", "list_interactions"]


class InteractionsList(msgspec.Struct, kw_only=True):
    quest_id: str
    seq: int  # the last event the view has seen
    open_requests: list[InteractionRecord]  # blocking requests awaiting a reply, oldest first
    recent: list[InteractionRecord]  # the newest ``limit`` interactions, oldest first
    pending_messages: int  # the user's messages not yet delivered to the agent


def list_interactions(quest: Quest, *, limit: int) -> InteractionsList:
    """The open requests, the last ``limit`` interactions and the count of pending messages."""
    state = quest.state("interactions")
    return InteractionsList(
        quest_id=quest.id,
        seq=state.last_seq,
        open_requests=[state.interactions[i] for i in state.open_requests if i in state.interactions],
        recent=recent_interactions(state, limit),
        pending_messages=len(state.pending),
    )
