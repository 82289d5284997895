"""The `papers` view: the quest's arXiv paper library, in the order papers entered it.

A paper enters the library the first time the quest reads it through ``artifact.arxiv``
(``artifact.paper_added``); ``arxiv(mode="list")`` without a paper lists it. Materialises
``.ds/arxiv/library.json``, which ``ds replay`` rewrites byte for byte.

The state keeps each paper's ``artifact.paper_added`` event; :class:`Paper` is how the
library file and ``arxiv(mode="list")`` show it (:func:`paper_entry`).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ds_events.events import Event
from ds_events.events.artifact import PaperAdded

from .base import Files, Projection

__all__ = ["Paper", "State", "PROJECTION", "LIBRARY_FILE", "apply", "render", "paper_entry", "library"]

LIBRARY_FILE = ".ds/arxiv/library.json"


# A paper of the library as listed (DeepScientist's field names). No docstring: it would
# enter the `arxiv` tool's output schema, which is pinned.
class Paper(msgspec.Struct, kw_only=True, frozen=True):
    arxiv_id: str
    title: str
    authors: list[str] = []
    published: str = ""
    abstract: str = ""
    added_at: str = ""
    added_seq: int = 0


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    papers: dict[str, PaperAdded] = {}  # insertion order = the order papers entered the library


def paper_entry(added: PaperAdded) -> Paper:
    return Paper(
        arxiv_id=added.paper_id, title=added.title, authors=list(added.authors), published=added.published,
        abstract=added.abstract, added_at=added.ts, added_seq=added.seq,
    )  # fmt: skip


def library(state: State) -> list[Paper]:
    """The library in the order papers entered it."""
    return [paper_entry(p) for p in state.papers.values()]


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    match event:
        case PaperAdded(paper_id=pid) if pid not in state.papers:  # the first addition wins
            state.papers[pid] = event
    return state


def render(state: State) -> Files:
    if not state.papers:
        return {}
    body = {"count": len(state.papers), "papers": [msgspec.to_builtins(p) for p in library(state)]}
    return {LIBRARY_FILE: msgspec.json.format(msgspec.json.encode(body), indent=2) + b"\n"}


def render_changed(state: State, events: Iterable[Event]) -> Files:
    if any(e.type == "artifact.paper_added" for e in events):
        return render(state)
    return {}


PROJECTION = Projection(
    name="papers",
    state_type=State,
    initial=State,
    apply=apply,
    render=render,
    render_changed=render_changed,
    version=2,  # 2: the state keeps the paper_added events (older snapshots: refolded)
)
