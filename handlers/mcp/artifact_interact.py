"""The interaction tools of the `artifact` namespace (interact, mailbox). Filled in by the
interactions work; ``handlers.mcp.artifact`` calls :func:`register`."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .common import ToolContext

__all__ = ["register"]


def register(server: MCPServer[ToolContext]) -> None:
    """Add the interaction tools to ``server``."""
