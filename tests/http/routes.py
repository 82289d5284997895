"""Every route of the daemon's app, read from its router (a route added later is covered
by the tests that use this without a line changed there)."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

__all__ = ["every_route", "fill", "PARAMS"]

_PARAM = re.compile(r"\{(\w+)\}")
# A value that reaches past the lookup of each path parameter on the quest q1.
PARAMS = {"quest_id": "q1", "name": "app.js", "card_id": "knowledge-00000000", "bid": "bx-00000000",
          "ref": "main", "iid": "ia-00000000"}  # fmt: skip


def every_route(app: web.Application) -> list[tuple[str, str]]:
    """(method, path template) of every route, HEAD (aiohttp's twin of each GET) left out."""
    found = []
    for route in app.router.routes():
        info: dict[str, Any] = route.resource.get_info() if route.resource is not None else {}
        template = info.get("formatter") or info.get("path")
        if route.method != "HEAD" and template:
            found.append((route.method, template))
    return sorted(set(found))


def fill(template: str, values: dict[str, str] | None = None) -> str:
    """``template`` with each ``{param}`` replaced (``values`` first, then :data:`PARAMS`)."""
    chosen = {**PARAMS, **(values or {})}
    return _PARAM.sub(lambda m: chosen.get(m.group(1), "x"), template)
