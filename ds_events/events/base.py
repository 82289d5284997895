"""The event envelope shared by every event type.

Every event is a frozen, keyword-only msgspec Struct that subclasses :class:`Event`
with an explicit, stable ``tag`` (the ``type`` field on disk). The envelope fields are
filled in by :class:`ds_events.log.EventLog` at append time: callers build an event
with its payload only, and get back the stored event with ``seq``, ``id``, ``ts`` and
``prev`` set.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import ClassVar, dataclass_transform

import msgspec

__all__ = ["Event", "new_event_id", "new_event_ids", "utc_now", "ts_seconds", "seconds_ts"]


# Tells the type checker what msgspec's own annotations cannot: every subclass is
# frozen and keyword-only like this base (msgspec inherits the settings; without this,
# mypy takes each subclass for a mutable dataclass deriving from a frozen one).
@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(msgspec.field,))
class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Envelope. Subclasses add payload fields and set ``tag=`` (and ``v`` when bumped)."""

    seq: int = 0
    id: str = ""
    ts: str = ""
    v: int = 1
    quest_id: str = ""
    actor: str = ""
    run_id: str | None = None
    prev: str = ""
    # How many lines of the same append (batch) follow this one: 0 on a batch's last
    # line (and on every line written before batches were marked). A log whose last
    # line says more follow holds an incomplete batch, which recovery drops whole.
    more: int = 0

    # The stable dotted tag of the class, set for every type in ``ds_events.events``
    # (msgspec keeps it in ``__struct_config__``; a class attribute is cheaper to read).
    TAG: ClassVar[str] = ""

    @property
    def type(self) -> str:
        """The stable dotted tag stored as ``type``."""
        return self.TAG


def new_event_id() -> str:
    """A 32-hex-digit id: 48-bit millisecond time then 80 random bits.

    Sortable by creation time (to the millisecond) and unique without coordination,
    so processes appending to one log never need to agree on ids. Hex keeps it cheap
    to make: ids are minted on every append.
    """
    return new_event_ids(1)[0]


def new_event_ids(count: int) -> list[str]:
    """``count`` ids as :func:`new_event_id` makes them, with one clock read and one
    read of randomness for all of them (a group commit mints one per event)."""
    prefix = f"{time.time_ns() // 1_000_000:012x}"
    rand = os.urandom(10 * count).hex()
    return [prefix + rand[i : i + 20] for i in range(0, 20 * count, 20)]


def utc_now() -> str:
    """The current time as RFC 3339 UTC with microseconds, e.g. ``2026-11-30T09:34:45.123456Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ts_seconds(ts: str) -> float:
    """An event's ``ts`` (as :func:`utc_now` writes it) as POSIX seconds; ValueError if
    it is not a timestamp."""
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def seconds_ts(seconds: float) -> str:
    """POSIX ``seconds`` as RFC 3339 UTC to the second, e.g. ``2026-12-02T04:10:00Z``
    (a time the log implies, such as a retry's, which projections may not compute with
    a clock of their own)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
