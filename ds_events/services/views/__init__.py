"""Page-only queries: a Canvas node's details (``nodes``).

The page's other reads are the quest domain's read models and the research queries;
what lives here serves the page alone. The verbs live in the modules beside this one
and are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .nodes import node_details as node_details

__all__, __getattr__ = lazy_exports(__name__, {
    "nodes": ("node_details",),
})
