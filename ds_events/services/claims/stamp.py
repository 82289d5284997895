"""The claim stamp: the hashes of the events a manuscript's numbers rest on and of the
manuscript itself, recorded with a paper bundle whose numbers all resolve, and checked
again later (``ds verify``) so that a later edit to a cited record or to the manuscript
shows.

An event's hash is the sha256 of its canonical JSON: the event as stored, without the
chain fields ``prev`` and ``more`` (``ds repair`` re-chains a log, which changes every
``prev`` after a removed line without changing what any event says), keys sorted,
compact separators, UTF-8. The log cannot be edited through the runtime, so a changed
hash means the line was edited by hand (and perhaps re-chained with ``ds repair``).

"A later edit to a cited record" is read two ways, and :func:`check_stamp` reports both:

- the cited line itself changed (``event_edited``), disappeared (``event_missing``) or
  its seq now holds another event (``event_replaced``);
- a later event records the same thing again (``record_overwritten``): the cited
  baseline confirmed again or overwritten (``overwrite_baseline``), the cited run or
  slice recorded again — the numbers the manuscript took from it no longer stand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import msgspec

from ds_events.errors import Conflict
from ds_events.events import ALL_EVENT_TYPES, Event
from ds_events.store import EventStore

from .commands import STAMP_VERSION, ClaimAudit, StampProblem
from .resolve import manuscript_hash
from .sources import SOURCE_TYPES, record_key

__all__ = [
    "claim_stamp", "check_stamp", "event_hash", "stamp_types", "stamped_events", "verify_claim_stamps", "StampedQuest",
    "QuestLog",
    "STAMP_FIELD",
]  # fmt: skip

STAMP_FIELD = "claim_stamp"  # the field of an event (the paper bundle's) that carries a stamp


class StampedQuest(Protocol):
    """What checking a stamp reads: the quest's log and its root (a :class:`Quest`, or
    a read-only log and the quest's directory, as ``ds verify`` has them)."""

    @property
    def log(self) -> EventStore: ...

    @property
    def root(self) -> Path: ...


class QuestLog(NamedTuple):
    """A :class:`StampedQuest` without the quest's views: its log (read-only will do)
    and its directory."""

    log: EventStore
    root: Path


def event_hash(event: Event) -> str:
    """The sha256 (hex) of ``event``'s canonical JSON (see the module's text)."""
    raw = msgspec.to_builtins(event)
    assert isinstance(raw, dict)
    raw.pop("prev", None)
    raw.pop("more", None)
    raw["type"] = event.type
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def claim_stamp(audit: ClaimAudit, events: Iterable[Event]) -> dict[str, Any]:
    """The stamp of ``audit``: the seq, id, type, key and hash of every event its
    claims cite (found in ``events``, e.g. ``quest.log.read()``), the manuscript's hash
    and path, and the seq the audit read the log to. Refused (``claims_unresolved``)
    while any number is unresolved or superseded: a stamp vouches for every number."""
    if not audit.ok:
        bad = [f"{c.mention.line}:{c.mention.column} {c.mention.text}" for c in audit.unresolved]
        raise Conflict(
            f"{len(bad)} number(s) of the manuscript do not resolve ({', '.join(bad[:10])}): fix them before stamping",
            code="claims_unresolved", unresolved=bad,
        )  # fmt: skip
    wanted = {c.seq: c for c in audit.cited()}
    found: dict[int, Event] = {e.seq: e for e in events if e.seq in wanted}
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise Conflict(f"the events cited at seq {missing} are not among the events given", code="cited_events_missing",
                       seqs=missing)  # fmt: skip
    cited = []
    for seq, c in sorted(wanted.items()):
        event = found[seq]
        if event.id != c.id:
            raise Conflict(f"seq {seq} is not the event the audit cited", code="cited_events_missing", seqs=[seq])
        cited.append({"seq": seq, "id": c.id, "type": c.type, "key": c.key, "sha256": event_hash(event)})
    return {
        "v": STAMP_VERSION, "algorithm": "sha256", "log_seq": audit.last_seq, "manuscript_path": audit.manuscript_path,
        "manuscript_sha256": audit.manuscript_sha256, "claims": len(audit.claims), "events": cited,
    }  # fmt: skip


def check_stamp(stamp: dict[str, Any], quest: StampedQuest, *, manuscript: str | None = None) -> list[StampProblem]:
    """What no longer holds of ``stamp`` in ``quest``'s log ([] when it all does).

    The manuscript is ``manuscript`` if given (the bundle's text), else the file at the
    stamp's ``manuscript_path`` in the quest, if the stamp names one."""
    try:
        checked = msgspec.convert(stamp, _Stamp)
    except msgspec.ValidationError as exc:
        return [StampProblem(what="invalid_stamp", seq=0, reason=f"the stamp is not a claim stamp: {exc}")]
    problems: list[StampProblem] = []
    for c in checked.events:
        event = quest.log.get(c.seq)
        if event is None:
            problems.append(StampProblem(what="event_missing", seq=c.seq, reason=f"cited event seq {c.seq} ({c.key}) is gone"))
        elif event.id != c.id:
            problems.append(StampProblem(what="event_replaced", seq=c.seq,
                                         reason=f"seq {c.seq} holds another event than the cited {c.type} ({c.key})"))  # fmt: skip
        elif event_hash(event) != c.sha256:
            problems.append(StampProblem(what="event_edited", seq=c.seq,
                                         reason=f"cited event seq {c.seq} ({c.type}, {c.key}) was edited after the stamp"))  # fmt: skip
    keys = {c.key: c.seq for c in checked.events}
    for later in quest.log.read(after_seq=checked.log_seq, types=SOURCE_TYPES):
        key = record_key(later)
        if key in keys and later.seq != keys[key]:
            how = "overwritten (overwrite_baseline)" if getattr(later, "overwrite", None) else "recorded again"
            problems.append(StampProblem(what="record_overwritten", seq=keys[key], later_seq=later.seq,
                                         reason=f"{key}, cited at seq {keys[key]}, was {how} at seq {later.seq}"))  # fmt: skip
    text = manuscript
    if text is None and checked.manuscript_path:
        path = quest.root / checked.manuscript_path
        if not path.is_file():
            problems.append(StampProblem(what="manuscript_missing", seq=0, reason=f"the manuscript {checked.manuscript_path} is gone"))
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
    if text is not None and manuscript_hash(text) != checked.manuscript_sha256:
        where = checked.manuscript_path or "the manuscript"
        problems.append(StampProblem(what="manuscript_changed", seq=0, reason=f"{where} changed after the stamp"))
    return problems


def stamp_types() -> list[str]:
    """The tags of the event types that carry a claim stamp (a field named
    ``claim_stamp``: the paper bundle's); [] while there is none."""
    return [t.TAG for t in ALL_EVENT_TYPES if STAMP_FIELD in t.__struct_fields__]


def stamped_events(quest: StampedQuest) -> list[Event]:
    """The events of the log that carry a claim stamp, in seq order."""
    tags = stamp_types()
    if not tags:
        return []
    return [e for e in quest.log.read(types=tags) if isinstance(getattr(e, STAMP_FIELD, None), dict)]


def verify_claim_stamps(quest: StampedQuest) -> list[tuple[int, StampProblem]]:
    """``ds verify``'s check: every stamped event's stamp against the log as it is now,
    as ``(the stamped event's seq, problem)``. The manuscript is the stamped event's
    ``manuscript`` text if it carries one, else the stamp's file."""
    found: list[tuple[int, StampProblem]] = []
    for event in stamped_events(quest):
        stamp = getattr(event, STAMP_FIELD)
        text = getattr(event, "manuscript", None)
        for problem in check_stamp(stamp, quest, manuscript=text if isinstance(text, str) and text else None):
            found.append((event.seq, problem))
    return found


# -- private helpers ----------------------------------------------------------------------


class _Cited(msgspec.Struct, kw_only=True, frozen=True):
    seq: int
    id: str
    type: str
    key: str
    sha256: str


class _Stamp(msgspec.Struct, kw_only=True, frozen=True):
    v: int
    log_seq: int
    manuscript_sha256: str
    events: list[_Cited]
    manuscript_path: str = ""
    algorithm: str = "sha256"
    claims: int = 0
