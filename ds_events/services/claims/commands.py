"""The claims domain's contract: what the claim audit finds in a manuscript and answers.

A :class:`NumberMention` is one number as the manuscript writes it (where, what kind);
a :class:`Source` is one thing the quest's log says that the number matches (a main
run's metric, a baseline confirmation's, an analysis slice's, a delta between two of
them, a count of runs), with the events it rests on; a :class:`Claim` is the mention
and its verdict. :class:`ClaimAudit` is the whole answer, :class:`StampProblem` what
:func:`~ds_events.services.claims.stamp.check_stamp` finds wrong with a stamp.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = [
    "MentionKind",
    "ClaimStatus",
    "NumberMention",
    "SkippedNumber",
    "CitedEvent",
    "Source",
    "Claim",
    "ClaimAudit",
    "StampProblem",
    "STAMP_VERSION",
]

# value: a number stated as it is (71.2, 0.912, 91.2%); delta: a difference (+1.2,
# "improves by 3.4%", "1.2 points"); count: a number of runs, seeds, slices ...
MentionKind = Literal["value", "delta", "count"]
# resolved: it matches a current record; superseded: only a record since replaced (or a
# failed/abandoned slice); unresolved: nothing the log records.
ClaimStatus = Literal["resolved", "superseded", "unresolved"]
STAMP_VERSION = 1


class NumberMention(msgspec.Struct, kw_only=True, frozen=True):
    """One number of the manuscript. ``line`` and ``column`` are 1-based and point at
    its first character (the sign, if written); ``decimals`` is how many digits it shows
    after the point, the precision it claims."""

    text: str  # as written, e.g. "+1.2", "91.2%", "5"
    number: str  # the number itself, without sign, grouping commas or unit: "1.2"
    negative: bool
    explicit_sign: bool  # written with + or - (or the minus sign): a delta
    decimals: int
    percent: bool  # followed by %, \% or "percent"
    points: bool  # followed by "points", "pp" or "percentage points"
    kind: MentionKind
    count_noun: str = ""  # for a count: what it counts ("runs", "seeds", "slices" ...)
    # Set when the number reads as part of the setup (a hyperparameter, "90 epochs"):
    # such a number that resolves to nothing is skipped with this reason, not reported.
    setup: str = ""
    line: int
    column: int
    sentence: str  # the sentence (within its line) the number is in


class SkippedNumber(msgspec.Struct, kw_only=True, frozen=True):
    """A number the audit does not take as a claim, and why (a year, a section, figure
    or table number, a citation, a list marker, part of a name, code, a LaTeX argument)."""

    text: str
    line: int
    column: int
    reason: str


class CitedEvent(msgspec.Struct, kw_only=True, frozen=True):
    """An event a claim rests on: its seq, id and type, and what it records (``key``:
    ``run:<run id>``, ``baseline:<baseline id>``, ``slice:<campaign id>/<slice id>``)."""

    seq: int
    id: str
    type: str
    key: str


class Source(msgspec.Struct, kw_only=True, frozen=True):
    """What a number matches in the log.

    ``kind``: ``main_run``, ``baseline``, ``slice`` (a metric value), ``delta`` (a run
    or slice against what it is compared with, in the metric's units), ``relative_delta``
    (that delta as a share of the reference, in per cent), ``count``. ``value`` is the
    exact number the log holds; ``shown`` the number written in the manuscript and how
    it was read (``0.91234 x 100 rounded to 1 decimal = 91.2``). ``contract`` is the
    metric's entry in the baseline's metric contract (direction, description,
    ``decimals`` if it declares a precision). ``superseded`` says why the record no
    longer stands ("" while it does)."""

    kind: str
    subject: str  # "main run r1", "baseline resnet20", "slice campaign-001/s1", "main run r1 - baseline resnet20"
    metric: str = ""
    value: float
    shown: str
    events: list[CitedEvent]
    commit: str | None = None  # the run's or slice's head_sha
    contract: dict[str, object] = {}
    superseded: str = ""


class Claim(msgspec.Struct, kw_only=True, frozen=True):
    """A number of the manuscript and what it resolves to, or why it does not."""

    mention: NumberMention
    status: ClaimStatus
    sources: list[Source] = []  # what it matches; the current ones first
    reason: str = ""  # why unresolved or superseded; for resolved, "" or a remark


class ClaimAudit(msgspec.Struct, kw_only=True, frozen=True):
    """The audit of one manuscript: every number it states, the ones skipped, and the
    log position it was audited at (``last_seq``)."""

    claims: list[Claim]
    skipped: list[SkippedNumber]
    last_seq: int
    manuscript_sha256: str
    manuscript_path: str = ""

    @property
    def ok(self) -> bool:
        """Every number resolves to a current record."""
        return all(c.status == "resolved" for c in self.claims)

    @property
    def unresolved(self) -> list[Claim]:
        return [c for c in self.claims if c.status != "resolved"]

    def cited(self) -> list[CitedEvent]:
        """Every event a resolved claim rests on, once, in seq order."""
        seen: dict[int, CitedEvent] = {}
        for claim in self.claims:
            if claim.status != "resolved":
                continue
            for source in claim.sources:
                if not source.superseded:
                    for event in source.events:
                        seen.setdefault(event.seq, event)
        return [seen[s] for s in sorted(seen)]


class StampProblem(msgspec.Struct, kw_only=True, frozen=True):
    """What :func:`check_stamp` found wrong: ``what`` is ``event_missing``,
    ``event_replaced``, ``event_edited``, ``record_overwritten``, ``manuscript_changed``,
    ``manuscript_missing`` or ``invalid_stamp``; ``seq`` the cited event (0: the
    manuscript or the stamp itself); ``later_seq`` the event that overwrote it."""

    what: str
    seq: int
    reason: str
    later_seq: int = 0
