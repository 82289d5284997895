"""Schema evolution: per-type upcaster chains applied to raw dicts before typed decoding.

A stored line is never rewritten. When a type's shape changes, its class gets a higher
``v`` default and an ``upcast`` step is registered here that lifts a raw dict from
version N to N+1. Reading an old line runs every step from its ``v`` to the current one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["UPCASTERS", "upcaster", "upcast"]

Raw = dict[str, Any]
UPCASTERS: dict[tuple[str, int], Callable[[Raw], Raw]] = {}


def upcaster(tag: str, from_v: int) -> Callable[[Callable[[Raw], Raw]], Callable[[Raw], Raw]]:
    """Register ``fn`` as the step that lifts ``tag`` from ``from_v`` to ``from_v + 1``."""

    def register(fn: Callable[[Raw], Raw]) -> Callable[[Raw], Raw]:
        UPCASTERS[(tag, from_v)] = fn
        return fn

    return register


def upcast(raw: Raw, current_v: int) -> Raw:
    """Run the chain for ``raw['type']`` from its ``v`` up to ``current_v``.

    Raises ``LookupError`` when a step is missing: an old line we cannot lift is a
    decoding error, never silently read with the wrong shape.
    """
    tag = str(raw.get("type"))
    v = int(raw.get("v", 1))
    while v < current_v:
        step = UPCASTERS.get((tag, v))
        if step is None:
            raise LookupError(f"no upcaster for {tag} v{v} -> v{v + 1}")
        raw = step(dict(raw))
        v += 1
        raw["v"] = v
    return raw


@upcaster("quest.created", 1)
def _quest_created_v1_v2(raw: Raw) -> Raw:
    # v1 called the brief "goal" and had no tags.
    raw["brief"] = raw.pop("goal", "") or ""
    raw.setdefault("tags", [])
    return raw
