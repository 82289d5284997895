"""The claims domain: the claim audit of a manuscript (every number it states resolved
to the log's records, or reported) and the claim stamp that lets ``ds verify`` notice
a later edit to a cited record or to the manuscript.

``commands`` is the domain's contract (the audit's and the stamp's types); ``numbers``
finds the numbers, ``sources`` folds what they can come from out of the log,
``resolve`` matches them, ``stamp`` makes and checks stamps, ``manuscript`` finds a
quest's manuscript and audits it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        CitedEvent as CitedEvent,
        Claim as Claim,
        ClaimAudit as ClaimAudit,
        NumberMention as NumberMention,
        SkippedNumber as SkippedNumber,
        Source as Source,
        StampProblem as StampProblem,
    )
    from .manuscript import MANUSCRIPT_PATHS as MANUSCRIPT_PATHS, audit_quest as audit_quest, find_manuscript as find_manuscript
    from .numbers import find_numbers as find_numbers
    from .resolve import audit_manuscript as audit_manuscript, manuscript_hash as manuscript_hash
    from .sources import ClaimSources as ClaimSources, claim_sources as claim_sources, quest_sources as quest_sources
    from .stamp import (
        QuestLog as QuestLog,
        check_stamp as check_stamp,
        claim_stamp as claim_stamp,
        event_hash as event_hash,
        stamp_types as stamp_types,
        verify_claim_stamps as verify_claim_stamps,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("CitedEvent", "Claim", "ClaimAudit", "NumberMention", "SkippedNumber", "Source", "StampProblem"),
    "manuscript": ("MANUSCRIPT_PATHS", "audit_quest", "find_manuscript"),
    "numbers": ("find_numbers",),
    "resolve": ("audit_manuscript", "manuscript_hash"),
    "sources": ("ClaimSources", "claim_sources", "quest_sources"),
    "stamp": ("QuestLog", "check_stamp", "claim_stamp", "event_hash", "stamp_types", "verify_claim_stamps"),
})  # fmt: skip
