"""A sample of every event type, built from its fields' types (with the envelope filled).

Used by the ACP mapping tests: a sample is what a real log line would decode to.
"""

from __future__ import annotations

import typing

import msgspec

from ds_events.events import ALL_EVENT_TYPES, Event

__all__ = ["sample", "all_samples"]

_ENVELOPE = {
    "seq": 7,
    "id": "0123456789abcdef0123456789abcdef",
    "ts": "2026-12-01T07:00:00.000000Z",
    "quest_id": "q-sample",
    "actor": "test",
    "prev": "ab" * 32,
}


def sample(cls: type[Event]) -> Event:
    """An instance of ``cls`` with every field set (defaults replaced by sample values)."""
    info = msgspec.inspect.type_info(cls)
    values: dict[str, typing.Any] = {}
    for f in info.fields:  # type: ignore[attr-defined]
        if f.name in _ENVELOPE:
            values[f.name] = _ENVELOPE[f.name]
        elif f.name in ("v", "more", "run_id"):
            continue
        else:
            values[f.name] = _value(f.type, f.name)
    return cls(**values)


def all_samples() -> list[Event]:
    return [sample(t) for t in ALL_EVENT_TYPES]


def _value(t: msgspec.inspect.Type, name: str) -> typing.Any:
    if isinstance(t, msgspec.inspect.UnionType):
        # the first non-None member
        return _value(next(m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)), name)
    if isinstance(t, msgspec.inspect.LiteralType):
        return t.values[0]
    if isinstance(t, msgspec.inspect.StrType):
        return f"sample-{name}"
    if isinstance(t, msgspec.inspect.BoolType):
        return True
    if isinstance(t, msgspec.inspect.IntType):
        return 3
    if isinstance(t, msgspec.inspect.FloatType):
        return 1.5
    if isinstance(t, msgspec.inspect.ListType):
        return [_value(t.item_type, name)]
    if isinstance(t, msgspec.inspect.DictType):
        return {"k": _value(t.value_type, name)}
    if isinstance(t, msgspec.inspect.AnyType):
        return {"x": [1, "two"]}
    if isinstance(t, msgspec.inspect.StructType):  # a struct inside an event (interaction.sent's delivery_options)
        return t.cls(**{f.name: _value(f.type, f.name) for f in t.fields})
    raise TypeError(f"no sample value for field {name!r} of type {t!r}: extend tests/acp/samples.py")
