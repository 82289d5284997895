"""The `interactions` view. Its domain's issue fills this module in."""

from __future__ import annotations

import msgspec

from ds_events.events import Event

from .base import Projection

__all__ = ["PROJECTION"]


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    return state


PROJECTION = Projection(name="interactions", state_type=State, initial=State, apply=apply)
