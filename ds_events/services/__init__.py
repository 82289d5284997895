"""The command side: validate a request against current projections, then emit events.

One package per domain (``quest``, ``memory``, ``bash``, ``interactions``, ``artifacts``,
``research``, ``runtime``, ``views``), each with the same entrance: ``commands.py`` is
its contract (the commands and results its MCP tools, HTTP routes and CLI commands take
and return), verb modules beside it, and an ``__init__`` that re-exports the public
verbs. Shared by all of them: :mod:`.commands` (the ``Command``/``Result`` vocabulary)
and :mod:`.tool_calls` (the call log). Adapters (CLI, HTTP routes, MCP tools) call these
functions and never append to a log themselves.

A domain's ``__init__`` re-exports lazily (:func:`lazy_exports`): ``ds quest show``
imports the quest domain's lifecycle without loading git for its Canvas views, and an
MCP server of one namespace loads only its own domain's modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ds_events.errors import Conflict, Invalid, NotFound, ServiceError

__all__ = ["ServiceError", "NotFound", "Invalid", "Conflict", "lazy_exports"]


def lazy_exports(package: str, table: dict[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], Any]]:
    """``__all__`` and a module ``__getattr__`` for ``package`` that imports a name's
    module (``table``: module -> the names it exports) on first access.

    The package also imports the same names under ``if TYPE_CHECKING:`` so the type
    checker sees them; ``tests/test_architecture.py`` holds the two lists equal."""
    where = {name: module for module, names in table.items() for name in names}
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later lookups skip this function
        return value

    return list(where), __getattr__
