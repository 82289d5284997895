"""The projection contract and the generic fold.

A projection is a module-level :class:`Projection` value: a name, a state type, how to
make an empty state, a pure ``apply(state, event) -> state`` and, optionally, a pure
``render(state) -> {relative path: bytes}`` for the files it materialises.

Projections never do I/O and never read the clock: everything they know comes from
events. ``apply`` may update the state it is given and return it (the fold owns the
state), which keeps replay of long logs cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ds_events.events import Event

__all__ = ["Projection", "fold", "Files"]

S = TypeVar("S")
Files = dict[str, bytes]


@dataclass(frozen=True)
class Projection(Generic[S]):
    name: str
    state_type: type[S]
    initial: Callable[[], S]
    apply: Callable[[S, Event], S]
    render: Callable[[S], Files] | None = None
    # Files touched by one event, when cheaper than rendering everything (optional).
    render_changed: Callable[[S, Iterable[Event]], Files] | None = None
    # Bump when the state's shape changes: snapshots of another version are ignored.
    version: int = 1

    def files_for(self, state: S, events: Iterable[Event]) -> Files:
        if self.render_changed is not None:
            return self.render_changed(state, events)
        return self.render(state) if self.render is not None else {}


def fold(projection: Projection[S], events: Iterable[Event], state: S | None = None) -> S:
    """Apply ``events`` in order to ``state`` (or a fresh one) and return the result."""
    current = projection.initial() if state is None else state
    apply = projection.apply
    for event in events:
        current = apply(current, event)
    return current


def last_seq_of(state: Any) -> int:
    return int(getattr(state, "last_seq", 0))


def merge_files(parts: Iterable[Mapping[str, bytes]]) -> Files:
    out: Files = {}
    for part in parts:
        out.update(part)
    return out
