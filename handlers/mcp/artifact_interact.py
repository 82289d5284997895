"""The interaction tools of the `artifact` namespace: ``interact`` and ``get_interaction``.

Thin adapters over :mod:`ds_events.services.interactions.mailbox`; webhook targets are sent by
:mod:`handlers.connectors.webhook`. ``handlers.mcp.artifact`` calls :func:`register`.
"""

from __future__ import annotations

from ds_events.services.interactions import mailbox as service
from ds_events.services.interactions.commands import GetInteraction, Interact, InteractionDetail, InteractResult

from .context import StateT, ToolContext
from .namespace import Namespace
from .tools import READ_ONLY, writes

__all__ = ["register"]


def register(ns: Namespace[StateT]) -> None:
    """Add the interaction tools to ``ns``."""

    @ns.tool(writes(destructive=False, idempotent=False))
    async def interact(tc: ToolContext[StateT], cmd: Interact) -> InteractResult:
        """Talk to the user and read what they sent you. Call it at every natural checkpoint.
        A refused call changes nothing.

        Each call records your message (sent to the quest's bound conversations unless
        deliver_to_bound_conversations=false) and reads the mailbox: every user message and
        reply queued since the last read comes back in `recent_inbound_messages`, each
        exactly once, oldest first ({message_id, conversation_id, text,
        reply_to_interaction_id, kind, option_id, ...}). They take priority over your
        current subtask: `agent_instruction` says what to do with them, or that nothing new
        arrived and you should continue. include_recent_inbound_messages=false leaves them
        queued for a later call.

        Delivery options: summary_preview (the line a connector shows first), importance,
        response_phase, attachments (each {path: a file of the quest or of one of its
        worktrees, or url; and optionally kind, name, label, content_type, caption,
        description, extracted_text_path, size_bytes, connector_delivery}),
        surface_actions (e.g. {"type": "send_notification"}), connector_hints (e.g.
        {"qq": {"render_mode": "markdown"}}); interaction_id names the interaction yourself;
        expects_reply overrides the reply mode's default (false: a decision_request that
        does not block); allow_free_text=false makes the user pick an option; a new
        blocking request closes the ones still open unless supersede_open_requests=false;
        min_interval_seconds holds back a progress update sent sooner than that after the
        previous one. reply_schema may label the decision ({"decision_type":
        "quest_completion_approval"}: a free-text approval, options not needed) and/or be
        a small JSON Schema (type, properties, required) that the reply's data must match.

        Returns: status (ok | suppressed_duplicate: a progress/milestone identical to the
        previous one of its kind, or reusing a dedupe_key, is not sent again; see
        duplicate_of | suppressed_min_interval: see retry_after_seconds),
        interaction_id, interaction_status (sent | waiting | answered),
        expects_reply, decision_type, delivered, delivery_targets, deliveries (per target:
        outcome), recent_inbound_messages, delivery_batch, recent_interaction_records (your
        latest interactions), open_request_count, agent_instruction, reply (a blocking
        request's answer when wait_timeout_seconds > 0), guidance, normalized_attachments,
        superseded_interaction_ids.

        Examples:
          interact(message="Baseline reproduced: 91.6% top-1. Starting label smoothing.")
          interact(kind="decision_request", message="Accuracy plateaued. Next?",
                   options=[{"id": "wider", "label": "Try a wider model"},
                            {"id": "stop", "label": "Write up now"}])
          interact(kind="milestone", message="Main run done: 0.921 vs 0.912.", importance="normal",
                   attachments=[{"path": "figs/summary.png", "content_type": "image/png"}])
          interact(message="Epoch 7 of 20.", min_interval_seconds=600)
          interact(kind="decision_request", message="All runs are done. May I close the quest?",
                   reply_schema={"decision_type": "quest_completion_approval"},
                   options=[{"id": "yes", "label": "Close it"}, {"id": "no", "label": "Keep going"}])
        """
        from ..connectors import webhook  # loads aiohttp: not before the first message

        quest = await tc.quest_async()
        return await service.interact_async(quest, cmd, consumer=tc.actor, deliver=webhook.deliver)

    @ns.tool(READ_ONLY)
    def get_interaction(tc: ToolContext[StateT], cmd: GetInteraction) -> InteractionDetail:
        """Look up one of your interactions: its status (sent | waiting | answered),
        per-target delivery outcomes, and the user's replies so far. Read-only: it does
        not consume the mailbox (replies still arrive once through interact()).

        Example: get_interaction(interaction_id="ia-01JABCDEF...")
        """
        return service.get_interaction(tc.quest, cmd)
