"""The interactions domain: the mailbox (`interact`, replies, delivery to the agent), the delivery forms, and the connectors that deliver outward.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
The verbs live in the modules beside this one and are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .forms import (
        check_forms as check_forms,
        reply_mode_for as reply_mode_for,
        too_soon as too_soon,
        check_interaction_id as check_interaction_id,
        IMPORTANCE as IMPORTANCE,
        RESPONSE_PHASES as RESPONSE_PHASES,
        ERROR_CODES as ERROR_CODES,
        PREVIEW_CHARS as PREVIEW_CHARS,
    )
    from .connectors import (
        bind as bind,
        unbind as unbind,
        set_routing_policy as set_routing_policy,
        WebhookJob as WebhookJob,
        webhook_jobs as webhook_jobs,
        unfinished_interactions as unfinished_interactions,
        attempt_outcome as attempt_outcome,
        record_attempt as record_attempt,
        local_delivery_events as local_delivery_events,
        webhook_payload as webhook_payload,
        CONNECTORS as CONNECTORS,
        ROUTING_POLICIES as ROUTING_POLICIES,
        WEBHOOK_DEFAULTS as WEBHOOK_DEFAULTS,
    )
    from .mailbox import (
        Interact as Interact,
        Reply as Reply,
        GetInteraction as GetInteraction,
        InboundMessage as InboundMessage,
        InteractionSummary as InteractionSummary,
        InteractResult as InteractResult,
        InteractionDetail as InteractionDetail,
        DeliveryBatch as DeliveryBatch,
        Deliver as Deliver,
        interact as interact,
        interact_async as interact_async,
        consume_mailbox as consume_mailbox,
        reply as reply,
        get_interaction as get_interaction,
        wait_for_reply as wait_for_reply,
        decision_type_of as decision_type_of,
        KINDS as KINDS,
        REPLY_MODES as REPLY_MODES,
        MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS,
        MAX_RECENT as MAX_RECENT,
        MAX_WAIT_SECONDS as MAX_WAIT_SECONDS,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "forms": ("check_forms", "reply_mode_for", "too_soon", "check_interaction_id", "IMPORTANCE", "RESPONSE_PHASES", "ERROR_CODES", "PREVIEW_CHARS"),
    "connectors": ("bind", "unbind", "set_routing_policy", "WebhookJob", "webhook_jobs", "unfinished_interactions", "attempt_outcome", "record_attempt", "local_delivery_events", "webhook_payload", "CONNECTORS", "ROUTING_POLICIES", "WEBHOOK_DEFAULTS"),
    "mailbox": ("Interact", "Reply", "GetInteraction", "InboundMessage", "InteractionSummary", "InteractResult", "InteractionDetail", "DeliveryBatch", "Deliver", "interact", "interact_async", "consume_mailbox", "reply", "get_interaction", "wait_for_reply", "decision_type_of", "KINDS", "REPLY_MODES", "MAX_MESSAGE_CHARS", "MAX_RECENT", "MAX_WAIT_SECONDS"),
})
