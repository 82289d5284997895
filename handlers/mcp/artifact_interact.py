"""The interaction tools of the `artifact` namespace: ``interact`` and ``get_interaction``.

Thin adapters: decode arguments, call :mod:`ds_events.services.interactions`, return
JSON-able dicts. ``handlers.mcp.artifact`` calls :func:`register`.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec
from mcp.server.mcpserver import Context, MCPServer

from ds_events.services import interactions as service
from ds_events.errors import NotFound

from .common import ToolContext, tool_context, tool_errors

__all__ = ["register", "InteractResult", "InteractionResult"]


class InteractResult(TypedDict):
    interaction_id: str | None
    status: str
    suppressed: bool
    duplicate_of: str | None
    kind: str
    reply_mode: str
    new_messages: list[dict[str, Any]]
    new_message_count: int
    delivery_batch_id: str | None
    recent_interactions: list[dict[str, Any]]
    recent_inbound_messages: list[dict[str, Any]]
    deliveries: list[dict[str, Any]]
    reply: dict[str, Any] | None
    guidance: str


class InteractionResult(TypedDict):
    interaction: dict[str, Any]
    replies: list[dict[str, Any]]


def register(server: MCPServer[ToolContext]) -> None:
    """Add the interaction tools to ``server``."""

    @server.tool()
    @tool_errors
    async def interact(
        ctx: Context,  # type: ignore[type-arg]
        message: str,
        # Plain strings (not Literal) so a wrong value gets our structured error code.
        kind: str = "progress",
        reply_mode: str | None = None,
        include_recent_inbound_messages: bool = True,
        recent_message_limit: int = 8,
        options: list[dict[str, Any]] | None = None,
        reply_schema: dict[str, Any] | None = None,
        reply_to_interaction_id: str | None = None,
        dedupe_key: str | None = None,
        wait_timeout_seconds: float = 0.0,
    ) -> InteractResult:
        """Talk to the user and read what they sent you. Call it at every natural checkpoint.

        Each call records your message (delivered to the user's bound conversations) and
        hands you every user message and reply that arrived since the last call, exactly
        once, in `new_messages`. If that list is empty, nothing new arrived: continue.

        Args:
          message: what you tell or ask the user (plain text or markdown, at most 20000 chars).
          kind: progress (default; routine status), milestone (a result worth noting),
            decision_request (you need the user to choose), approval_result (outcome of
            something the user approved), answer (you answer a user's question).
          reply_mode: none | threaded | blocking. Default: blocking for decision_request,
            none otherwise. A blocking request stays open until the user replies.
            progress and milestone cannot block; a decision_request cannot be none.
          include_recent_inbound_messages: also return recent, already delivered user
            messages for context (`recent_inbound_messages`).
          recent_message_limit: 0-50, how many recent interaction records and inbound
            messages to include.
          options: decision_request only, required: 2-12 objects
            {"id": "a", "label": "...", "description": "...", "recommended": true}.
          reply_schema: optional small JSON Schema ({"type": "object", "properties": {...},
            "required": [...]}) that structured reply data must match.
          reply_to_interaction_id: the interaction id or user message id this answers.
          dedupe_key: a progress/milestone update reusing a key already sent is suppressed.
          wait_timeout_seconds: blocking requests only, 0-300: wait this long for the
            reply and return it in `reply` (status `answered`). 0 returns at once.

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
        tc = tool_context(ctx)
        result = await service.interact_async(
            tc.quest,
            wait_timeout_seconds=wait_timeout_seconds,
            kind=kind,
            message=message,
            reply_mode=reply_mode,
            include_recent_inbound_messages=include_recent_inbound_messages,
            recent_message_limit=recent_message_limit,
            options=options,
            reply_schema=reply_schema,
            reply_to_interaction_id=reply_to_interaction_id,
            dedupe_key=dedupe_key,
            consumer=tc.actor,
        )
        return result  # type: ignore[return-value]

    @server.tool()
    @tool_errors
    async def get_interaction(ctx: Context, interaction_id: str) -> InteractionResult:  # type: ignore[type-arg]
        """Look up one of your interactions: its status (sent | waiting | answered),
        per-target delivery outcomes, and the user's replies so far. Read-only: it does
        not consume the mailbox (replies still arrive once through interact()).

        Args:
          interaction_id: an id returned by interact(), e.g. "ia-01J...".

        Example: get_interaction(interaction_id="ia-01JABCDEF...")
        """
        state = tool_context(ctx).quest.state("interactions")
        record = state.interactions.get(interaction_id)
        if record is None:
            raise NotFound(f"no interaction {interaction_id!r}", code="unknown_interaction")
        replies = [msgspec.to_builtins(state.inbound[r]) for r in record.replies if r in state.inbound]
        return {"interaction": msgspec.to_builtins(record), "replies": replies}
