"""The three MCP namespaces (``memory``, ``artifact``, ``bash_exec``) and their shared plumbing.

One job a module: :mod:`.binding` (which quest), :mod:`.context` (the open quest and a
namespace's state, the server's lifespan state), :mod:`.namespace` (registering tools
and serving them through the SDK's low-level server), :mod:`.tools` (one tool: its
listing, annotations and call), :mod:`.calls` (the call log), :mod:`.schema` (input and
output schemas) and :mod:`.errors` (what a failure looks like).
"""

from __future__ import annotations

import importlib
from typing import Any

import anyio

from .binding import QuestBinding
from .context import NamespaceState, ToolContext
from .namespace import Namespace, NamespaceServer, serve_stdio
from .tools import READ_ONLY, writes

__all__ = [
    "NAMESPACES",
    "build_server",
    "run_stdio",
    "serve_stdio",
    "Namespace",
    "NamespaceServer",
    "NamespaceState",
    "QuestBinding",
    "ToolContext",
    "READ_ONLY",
    "writes",
]

# namespace -> module exposing build_server(binding) -> NamespaceServer
NAMESPACES: dict[str, str] = {
    "memory": "handlers.mcp.memory",
    "artifact": "handlers.mcp.artifact",
    "bash_exec": "handlers.mcp.bash_exec",
}


def build_server(namespace: str, binding: QuestBinding) -> NamespaceServer[Any]:
    """The server of ``namespace`` bound to ``binding`` (KeyError for an unknown one)."""
    if namespace not in NAMESPACES:
        raise KeyError(namespace)
    server: NamespaceServer[Any] = importlib.import_module(NAMESPACES[namespace]).build_server(binding)
    return server


def run_stdio(server: NamespaceServer[Any]) -> None:
    """Serve ``server`` over stdin and stdout until the client goes (what ``ds mcp`` runs)."""
    anyio.run(serve_stdio, server)
