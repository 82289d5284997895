"""The interaction tools of the `artifact` namespace: ``interact`` and ``get_interaction``.

Thin adapters over :mod:`ds_events.services.interactions`; webhook targets are sent by
:mod:`handlers.connectors.webhook`. ``handlers.mcp.artifact`` calls :func:`register`.
"""

from __future__ import annotations

from ds_events.services import interactions as service
from ds_events.services.interactions import GetInteraction, Interact, InteractionDetail, InteractResult

from .common import Namespace, ToolContext

__all__ = ["register"]


def register(ns: Namespace) -> None:
    """Add the interaction tools to ``ns``."""

    @ns.tool
    async def interact(tc: ToolContext, cmd: Interact) -> InteractResult:
        """Talk to the user and read what they sent you. Call it at every natural checkpoint.

        Each call records your message (delivered to the user's bound conversations) and
        hands you every user message and reply that arrived since the last call, exactly
        once, in `new_messages`. If that list is empty, nothing new arrived: continue.

        Returns: interaction_id, status (sent | waiting | answered | suppressed),
        suppressed and duplicate_of (a progress/milestone identical to the previous one of
        its kind, or reusing a dedupe_key, is not sent again), new_messages,
        recent_interactions, recent_inbound_messages, deliveries (per target: outcome),
        reply, guidance.

        Examples:
          interact(message="Baseline reproduced: 91.6% top-1. Starting label smoothing.")
          interact(kind="decision_request", message="Accuracy plateaued. Next?",
                   options=[{"id": "wider", "label": "Try a wider model"},
                            {"id": "stop", "label": "Write up now"}])
        """
        from ..connectors import webhook  # loads aiohttp: not before the first message

        quest = await tc.quest_async()
        return await service.interact_async(quest, cmd, consumer=tc.actor, deliver=webhook.deliver)

    @ns.tool
    def get_interaction(tc: ToolContext, cmd: GetInteraction) -> InteractionDetail:
        """Look up one of your interactions: its status (sent | waiting | answered),
        per-target delivery outcomes, and the user's replies so far. Read-only: it does
        not consume the mailbox (replies still arrive once through interact()).

        Example: get_interaction(interaction_id="ia-01JABCDEF...")
        """
        return service.get_interaction(tc.quest, cmd)
