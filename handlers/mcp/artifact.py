"""The `artifact` MCP namespace. Its issue fills this module in."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from . import artifact_interact
from .common import QuestBinding, ToolContext, new_server

__all__ = ["build_server"]


def build_server(binding: QuestBinding) -> MCPServer[ToolContext]:
    server = new_server("artifact", binding, instructions="Not implemented yet.")
    artifact_interact.register(server)
    return server
