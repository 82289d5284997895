"""Typed events: one closed msgspec tagged union over every domain's event types.

Each domain module (``core``, ``memory``, ``bash``, ``artifact``, ``interaction``,
``tool``, ``runner``, ``research``, ``paper``)
exports ``EVENTS``; the union below is their concatenation. Tags are stable strings
stored in the ``type`` field and never change once written.

Decoding goes through :func:`decode_line`, which takes the fast typed path and falls
back to the upcaster chain only for lines written by an older schema version.
"""

from __future__ import annotations

import functools
import operator
import typing
from typing import TYPE_CHECKING, TypeAlias

import msgspec

from . import artifact, bash, core, interaction, memory, paper, research, runner, tool
from .base import Event, new_event_id, new_event_ids, utc_now
from .core import (
    EVENTS,
    ConversationMessage,
    LogRecovered,
    LogRepaired,
    QuestAnchorChanged,
    QuestArchived,
    QuestCompleted,
    QuestControl,
    QuestCreated,
    QuestRunnerSet,
    QuestUnarchived,
)
from .upcast import upcast

__all__ = [
    "Event",
    "AnyEvent",
    "ALL_EVENT_TYPES",
    "TYPES_BY_TAG",
    "CURRENT_VERSION",
    "EventDecodeError",
    "encode",
    "decode_line",
    "new_event_id",
    "new_event_ids",
    "utc_now",
]
# The core event classes (and core's EVENTS), re-exported as ``from .core import *`` did.
__all__ += [
    "QuestCreated", "QuestAnchorChanged", "QuestControl", "QuestCompleted", "QuestRunnerSet",
    "QuestArchived", "QuestUnarchived", "ConversationMessage", "LogRecovered", "LogRepaired", "EVENTS",
]  # fmt: skip

ALL_EVENT_TYPES: tuple[type[Event], ...] = (
    core.EVENTS + memory.EVENTS + bash.EVENTS + artifact.EVENTS + interaction.EVENTS + tool.EVENTS + runner.EVENTS
    + research.EVENTS + paper.EVENTS
)


def _tag_of(cls: type[Event]) -> str:
    tag = cls.__struct_config__.tag
    if not isinstance(tag, str):  # pragma: no cover - programming error
        raise RuntimeError(f"{cls.__name__} has no string tag")
    return tag


TYPES_BY_TAG: dict[str, type[Event]] = {_tag_of(t): t for t in ALL_EVENT_TYPES}
for _tag, _cls in TYPES_BY_TAG.items():
    _cls.TAG = _tag
if len(TYPES_BY_TAG) != len(ALL_EVENT_TYPES):  # pragma: no cover - programming error
    raise RuntimeError("two event types share a tag")
CURRENT_VERSION: dict[str, int] = {
    tag: next(f.default for f in msgspec.structs.fields(t) if f.name == "v") for tag, t in TYPES_BY_TAG.items()
}

_CURRENT_BY_CLASS: dict[type[Event], int] = {TYPES_BY_TAG[tag]: v for tag, v in CURRENT_VERSION.items()}

# The closed union of every event type, built from the tuple above. The checker cannot
# follow a union made at run time, so it sees the base class: what a decode returns.
if TYPE_CHECKING:
    AnyEvent: TypeAlias = Event
else:
    AnyEvent = functools.reduce(operator.or_, ALL_EVENT_TYPES)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyEvent)
_raw_decoder = msgspec.json.Decoder(dict[str, typing.Any])


class EventDecodeError(ValueError):
    """A line that is not a valid event: bad JSON, unknown type, or a shape we cannot lift."""


# The stored form of an event: one compact JSON object, no trailing newline. Bound
# directly (not wrapped) because every append calls it once per event.
encode: typing.Callable[[Event], bytes] = _encoder.encode


def decode_line(line: bytes) -> Event:
    """Decode one stored line (without its newline) into its current typed event."""
    try:
        event = _decoder.decode(line)
    except msgspec.ValidationError as exc:
        # Maybe an older shape that the current class rejects: try the upcasters.
        return _decode_via_upcast(line, exc)
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"bad JSON: {exc}") from None
    if event.v != _CURRENT_BY_CLASS[type(event)]:
        return _decode_via_upcast(line, None)
    return event


def _decode_via_upcast(line: bytes, first_error: Exception | None) -> Event:
    try:
        raw = _raw_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise EventDecodeError(f"bad JSON: {exc}") from None
    tag = raw.get("type")
    if tag not in TYPES_BY_TAG:
        raise EventDecodeError(f"unknown event type {tag!r}")
    current = CURRENT_VERSION[tag]
    v = raw.get("v", 1)
    if not isinstance(v, int) or v > current:
        raise EventDecodeError(f"{tag} has version {v!r}; this build knows up to v{current}")
    if v == current:
        raise EventDecodeError(f"invalid {tag}: {first_error}")
    try:
        lifted = upcast(raw, current)
        return msgspec.convert(lifted, AnyEvent)
    except (LookupError, msgspec.ValidationError) as exc:
        raise EventDecodeError(f"cannot lift {tag} v{v}: {exc}") from None
