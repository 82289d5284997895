"""Events of the `memory` domain. The domain's issue fills this module in."""

from __future__ import annotations

from .base import Event

__all__ = ["EVENTS"]

EVENTS: tuple[type[Event], ...] = ()
