"""Page-only queries (a Canvas node's details).

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
The verbs live in the modules beside this one and are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .nodes import (
        node_details as node_details,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "nodes": ("node_details",),
})
