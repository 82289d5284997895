"""The three MCP namespaces (``memory``, ``artifact``, ``bash_exec``) and their shared plumbing."""

from __future__ import annotations

import importlib
from typing import Any

from .common import Namespace, QuestBinding, ToolContext

__all__ = ["NAMESPACES", "build_server", "Namespace", "QuestBinding", "ToolContext"]

# namespace -> module exposing build_server(binding) -> MCPServer
NAMESPACES: dict[str, str] = {
    "memory": "handlers.mcp.memory",
    "artifact": "handlers.mcp.artifact",
    "bash_exec": "handlers.mcp.bash_exec",
}


def build_server(namespace: str, binding: QuestBinding) -> Any:
    if namespace not in NAMESPACES:
        raise KeyError(namespace)
    return importlib.import_module(NAMESPACES[namespace]).build_server(binding)
