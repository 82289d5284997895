"""Cutting the prompt to size: each block to its budget, then the whole to ``max_chars``.

A :class:`Block` holds its heading and its full content as items and cuts itself to a
budget where it matters least (:meth:`Block.fit`), saying so in a marker; :func:`fit`
joins the blocks and, over the cap, shrinks them in :data:`SHRINK_ORDER` until the whole
prompt fits. Pure: text in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BLOCKS", "SHRINK_ORDER", "Block", "BlockInfo", "fit", "one_line"]

BLOCKS = (
    "system", "runtime", "communication", "skills", "quest_files", "durable_state",
    "interaction_style", "memory", "conversation", "message",
)  # fmt: skip
# Which blocks give way first when the whole prompt is over ``max_chars``: history and
# retrieved context before the rules and the user's own words.
SHRINK_ORDER = (
    "conversation", "memory", "durable_state", "quest_files", "skills", "interaction_style",
    "communication", "system", "message", "runtime",
)  # fmt: skip
_MIN_BLOCK = 200  # a shrunk block keeps at least this much (its heading and a marker)
_MIN_PARTIAL = 80  # an item cut to fit shows at least this much of itself, else it is left out


@dataclass(frozen=True)
class BlockInfo:
    name: str
    chars: int
    truncated: bool


def fit(blocks: Mapping[str, Block], budgets: Mapping[str, int], max_chars: int) -> tuple[str, tuple[BlockInfo, ...]]:
    """The prompt's text from ``blocks`` (one per name in :data:`BLOCKS`), each within
    its budget and the whole within ``max_chars``, and what each block kept."""
    rendered = {name: blocks[name].fit(budgets[name]) for name in BLOCKS}
    # The whole prompt: blocks joined by a blank line. Over the cap, shrink blocks in
    # SHRINK_ORDER, each re-cut from its full content, until the excess is gone: first
    # down to a tenth of the cap each (so one huge block cannot leave the others
    # nothing), then, if that is not enough, down to the minimum.
    for floor in (max(_MIN_BLOCK, max_chars // 10), _MIN_BLOCK):
        for name in SHRINK_ORDER:
            excess = _total(rendered) - max_chars
            if excess <= 0:
                break
            budget = max(floor, len(rendered[name][0]) - excess)
            if budget < len(rendered[name][0]):
                rendered[name] = blocks[name].fit(budget)
    text = "\n\n".join(rendered[name][0] for name in BLOCKS) + "\n"
    if len(text) > max_chars:  # only when max_chars is below the blocks' minimums
        marker = "\n[… prompt cut at prompt.max_chars …]\n"
        text = text[: max_chars - len(marker)] + marker
    infos = tuple(BlockInfo(name, len(rendered[name][0]), rendered[name][1]) for name in BLOCKS)
    return text, infos


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Block:
    """A block's heading and its full content as items, cut to a budget on demand.

    ``keep`` says which end survives a cut: ``head`` (the first items) or ``tail``
    (the newest, for the conversation). ``unit`` names the items in the marker.
    """

    def __init__(self, name: str, heading: str, items: list[str], keep: str, unit: str, hint: str = "") -> None:
        self.name, self.heading, self.items, self.keep, self.unit, self.hint = name, heading, items, keep, unit, hint
        self._head = f"## {heading}\n\n" if heading else ""

    def fit(self, budget: int) -> tuple[str, bool]:
        """``(text, truncated)`` with ``len(text) <= budget``."""
        full = self._head + "\n".join(self.items)
        if len(full) <= budget:
            return full, False
        total = len(self.items)
        marker_room = len(self._marker(total, total, budget)) + 1
        room = budget - len(self._head) - marker_room
        order = self.items if self.keep == "head" else reversed(self.items)
        kept: list[str] = []
        whole = used = 0
        for item in order:
            cost = len(item) + (1 if kept else 0)
            if used + cost > room:
                left = room - used - (1 if kept else 0)
                if left >= _MIN_PARTIAL:  # the item that does not fit: show the part that does
                    kept.append(item[: left - 1] + "…" if self.keep == "head" else "…" + item[-(left - 1) :])
                break
            kept.append(item)
            whole += 1
            used += cost
        if self.keep == "tail":
            kept.reverse()
        marker = self._marker(total - whole, total, budget)
        body = [marker, *kept] if self.keep == "tail" else [*kept, marker]
        return (self._head + "\n".join(body))[:budget], True

    def _marker(self, omitted: int, total: int, budget: int) -> str:
        where = "older" if self.keep == "tail" else "later"
        hint = f"; {self.hint}" if self.hint else ""
        return f"[… truncated: {omitted} of {total} {self.unit} ({where} ones) cut or left out to fit {budget} chars{hint} …]"


def _total(rendered: Mapping[str, tuple[str, bool]]) -> int:
    return sum(len(text) for text, _ in rendered.values()) + 2 * (len(rendered) - 1) + 1
