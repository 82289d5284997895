"""The command side: validate a request against current projections, then emit events.

Adapters (CLI, HTTP routes, MCP tools) call these functions and never append to a log
themselves.
"""

from ds_events.errors import Conflict, Invalid, NotFound, ServiceError

__all__ = ["ServiceError", "NotFound", "Invalid", "Conflict"]
