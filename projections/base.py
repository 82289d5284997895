"""The projection contract and the generic fold.

A projection is a module-level :class:`Projection` value: a name, a state type, how to
make an empty state, a pure ``apply(state, event) -> state`` and, optionally, a pure
``render(state) -> {relative path: bytes}`` for the files it materialises.

Projections never do I/O and never read the clock: everything they know comes from
events. ``apply`` may update the state it is given and return it (the fold owns the
state), which keeps replay of long logs cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

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
    # The files these events touched, when cheaper than rendering everything (optional).
    # It must agree with render: live files are checked against a full replay in tests.
    render_changed: Callable[[S, Iterable[Event]], Files] | None = None
    # Bump when the state's shape changes: snapshots of another version are ignored.
    version: int = 1
    # Copies what ``apply`` changes in place below the state's top-level containers, for
    # a state that was handed out before more events are applied (optional).
    thaw: Callable[[S], S] | None = None


def fold(projection: Projection[S], events: Iterable[Event], state: S | None = None) -> S:
    """Apply ``events`` in order to ``state`` (or a fresh one) and return the result."""
    current = projection.initial() if state is None else state
    apply = projection.apply
    for event in events:
        current = apply(current, event)
    return current
