"""The projection contract and the generic fold.

A projection is a module-level :class:`Projection` value: a name, a state type, how to
make an empty state, a pure ``apply(state, event) -> state`` and, optionally, a pure
``render(state) -> {relative path: bytes}`` for the files it materialises.

Projections never do I/O and never read the clock: everything they know comes from
events.

The one rule every ``apply`` follows, so that a state handed to a caller never changes
under it: **never mutate a record already in the state; replace it**
(``msgspec.structs.replace``). ``apply`` may set the State's own fields and insert into or
delete from its top-level containers (dicts, lists, sets): the views layer, once it has
handed a state out, gives the fold a copy (:func:`shallow_thaw`, or the projection's own
``thaw``) before the next event. That copy is made once per hand-out, not per event, so
replay of a long log still updates one state in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from ds_events.events import Event

__all__ = ["Projection", "fold", "Files", "shallow_thaw"]

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
    # A copy of a state that ``apply`` may then update without changing the original.
    # None means :func:`shallow_thaw` (a new State with copies of its top-level
    # containers), enough when ``apply`` replaces records instead of mutating them. A
    # state whose ``apply`` inserts into containers nested deeper supplies its own.
    thaw: Callable[[S], S] | None = None

    def thawed(self, state: S) -> S:
        """A copy of ``state`` that the fold may update; ``state`` itself stays as it is."""
        return self.thaw(state) if self.thaw is not None else shallow_thaw(state)


def fold(projection: Projection[S], events: Iterable[Event], state: S | None = None) -> S:
    """Apply ``events`` in order to ``state`` (or a fresh one) and return the result.

    A ``state`` passed in is updated in place (the fold owns it); pass
    ``projection.thawed(state)`` to keep the original.
    """
    current = projection.initial() if state is None else state
    apply = projection.apply
    for event in events:
        current = apply(current, event)
    return current


def shallow_thaw(state: S) -> S:
    """A new State struct whose top-level dict, list and set fields are copies.

    Records inside those containers are shared with ``state``: that is safe because
    ``apply`` replaces a record rather than mutating it.
    """
    if not isinstance(state, msgspec.Struct):
        raise TypeError(f"shallow_thaw copies msgspec Structs, not {type(state).__name__}: give the projection a thaw")
    changes: dict[str, Any] = {}
    for name in state.__struct_fields__:
        value = getattr(state, name)
        if isinstance(value, (dict, list, set)):
            changes[name] = value.copy()
    return msgspec.structs.replace(state, **changes)
