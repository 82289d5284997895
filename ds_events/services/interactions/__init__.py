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
    from .commands import CONNECTORS as CONNECTORS
    from .commands import IMPORTANCE as IMPORTANCE
    from .commands import KINDS as KINDS
    from .commands import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
    from .commands import MAX_RECENT as MAX_RECENT
    from .commands import MAX_WAIT_SECONDS as MAX_WAIT_SECONDS
    from .commands import PREVIEW_CHARS as PREVIEW_CHARS
    from .commands import REPLY_MODES as REPLY_MODES
    from .commands import RESPONSE_PHASES as RESPONSE_PHASES
    from .commands import ROUTING_POLICIES as ROUTING_POLICIES
    from .commands import Deliver as Deliver
    from .commands import DeliveryBatch as DeliveryBatch
    from .commands import GetInteraction as GetInteraction
    from .commands import InboundMessage as InboundMessage
    from .commands import Interact as Interact
    from .commands import InteractionDetail as InteractionDetail
    from .commands import InteractionSummary as InteractionSummary
    from .commands import InteractResult as InteractResult
    from .commands import Reply as Reply
    from .commands import WebhookBody as WebhookBody
    from .connectors import WebhookJob as WebhookJob
    from .connectors import attempt_outcome as attempt_outcome
    from .connectors import bind as bind
    from .connectors import local_delivery_events as local_delivery_events
    from .connectors import record_attempt as record_attempt
    from .connectors import set_routing_policy as set_routing_policy
    from .connectors import unbind as unbind
    from .connectors import unfinished_interactions as unfinished_interactions
    from .connectors import webhook_jobs as webhook_jobs
    from .connectors import webhook_payload as webhook_payload
    from .forms import check_forms as check_forms
    from .forms import check_interaction_id as check_interaction_id
    from .forms import reply_mode_for as reply_mode_for
    from .forms import too_soon as too_soon
    from .mailbox import consume_mailbox as consume_mailbox
    from .mailbox import get_interaction as get_interaction
    from .mailbox import interact as interact
    from .mailbox import interact_async as interact_async
    from .mailbox import reply as reply
    from .mailbox import wait_for_reply as wait_for_reply

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "Interact", "Reply", "GetInteraction", "InboundMessage", "InteractionSummary", "InteractResult", "InteractionDetail",
        "DeliveryBatch", "WebhookBody", "Deliver", "KINDS", "REPLY_MODES", "IMPORTANCE", "RESPONSE_PHASES", "CONNECTORS",
        "ROUTING_POLICIES", "MAX_MESSAGE_CHARS", "MAX_RECENT", "MAX_WAIT_SECONDS", "PREVIEW_CHARS",
    ),
    "checks": ("decision_type_of",),
    "forms": ("check_forms", "reply_mode_for", "too_soon", "check_interaction_id"),
    "connectors": (
        "bind", "unbind", "set_routing_policy", "WebhookJob", "webhook_jobs", "unfinished_interactions", "attempt_outcome",
        "record_attempt", "local_delivery_events", "webhook_payload",
    ),
    "mailbox": ("interact", "interact_async", "consume_mailbox", "reply", "get_interaction", "wait_for_reply"),
})  # fmt: skip
