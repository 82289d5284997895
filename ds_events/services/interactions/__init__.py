"""The interactions domain: the mailbox (`interact`, replies, delivery to the agent), the
delivery forms, and the connectors that deliver outward.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return, with the vocabulary and limits they use.
``checks`` and ``forms`` refuse bad requests before anything is written; the verbs live
in ``mailbox`` and ``connectors`` and are re-exported here. ``errors.CODES`` catalogues
every code the domain raises."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .checks import decision_type_of as decision_type_of
    from .commands import (
        CONNECTORS as CONNECTORS,
        IMPORTANCE as IMPORTANCE,
        KINDS as KINDS,
        MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS,
        MAX_RECENT as MAX_RECENT,
        MAX_WAIT_SECONDS as MAX_WAIT_SECONDS,
        PREVIEW_CHARS as PREVIEW_CHARS,
        REPLY_MODES as REPLY_MODES,
        RESPONSE_PHASES as RESPONSE_PHASES,
        ROUTING_POLICIES as ROUTING_POLICIES,
        Deliver as Deliver,
        DeliveryBatch as DeliveryBatch,
        GetInteraction as GetInteraction,
        InboundMessage as InboundMessage,
        Interact as Interact,
        InteractionDetail as InteractionDetail,
        InteractionSummary as InteractionSummary,
        InteractResult as InteractResult,
        Reply as Reply,
        WebhookBody as WebhookBody,
    )
    from .connectors import (
        WebhookJob as WebhookJob,
        attempt_outcome as attempt_outcome,
        bind as bind,
        local_delivery_events as local_delivery_events,
        record_attempt as record_attempt,
        set_routing_policy as set_routing_policy,
        unbind as unbind,
        unfinished_interactions as unfinished_interactions,
        webhook_jobs as webhook_jobs,
        webhook_payload as webhook_payload,
    )
    from .forms import (
        check_forms as check_forms,
        check_interaction_id as check_interaction_id,
        reply_mode_for as reply_mode_for,
        too_soon as too_soon,
    )
    from .mailbox import (
        consume_mailbox as consume_mailbox,
        get_interaction as get_interaction,
        interact as interact,
        interact_async as interact_async,
        reply as reply,
        wait_for_reply as wait_for_reply,
    )
    from .queries import InteractionsList as InteractionsList, list_interactions as list_interactions

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "Interact", "Reply", "GetInteraction", "InboundMessage", "InteractionSummary", "InteractResult",
        "InteractionDetail", "DeliveryBatch", "WebhookBody", "Deliver", "KINDS", "REPLY_MODES", "IMPORTANCE",
        "RESPONSE_PHASES", "CONNECTORS", "ROUTING_POLICIES", "MAX_MESSAGE_CHARS", "MAX_RECENT", "MAX_WAIT_SECONDS",
        "PREVIEW_CHARS",
    ),
    "checks": ("decision_type_of",),
    "forms": ("check_forms", "reply_mode_for", "too_soon", "check_interaction_id"),
    "connectors": (
        "bind", "unbind", "set_routing_policy", "WebhookJob", "webhook_jobs", "unfinished_interactions",
        "attempt_outcome", "record_attempt", "local_delivery_events", "webhook_payload",
    ),
    "mailbox": ("interact", "interact_async", "consume_mailbox", "reply", "get_interaction", "wait_for_reply"),
    "queries": ("InteractionsList", "list_interactions"),
})  # fmt: skip
