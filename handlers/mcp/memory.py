"""The `memory` MCP namespace. Its issue fills this module in."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from .common import QuestBinding, ToolContext, new_server

__all__ = ["build_server"]


def build_server(binding: QuestBinding) -> MCPServer[ToolContext]:
    return new_server("memory", binding, instructions="Not implemented yet.")
