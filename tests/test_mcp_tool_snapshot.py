"""The MCP tools every namespace lists are the ones a snapshot recorded: the same names
in the same order, the same descriptions, input and output schemas. Annotations may only
be added (``readOnlyHint`` on a query tool, say), never changed or dropped.

Clients and models see exactly this listing, so a restructure of the code behind the
tools must not move it. A change made on purpose regenerates the snapshot:

    DS_REGEN_SNAPSHOT=1 python3 -m pytest tests/test_mcp_tool_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .mcp_support import discover_tools

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "mcp_tools.json"


def _listing() -> list[dict[str, Any]]:
    return [
        {"namespace": namespace, **tool.model_dump(by_alias=True, exclude_none=True)}
        for namespace, tool in discover_tools()
    ]


def test_the_tool_listing_matches_the_snapshot_except_for_added_annotations() -> None:
    now = _listing()
    if os.environ.get("DS_REGEN_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(SNAPSHOT.read_text())
    assert [(t["namespace"], t["name"]) for t in now] == [(t["namespace"], t["name"]) for t in recorded]
    for tool, old in zip(now, recorded, strict=True):
        where = f"{tool['namespace']}.{tool['name']}"
        for key in ("description", "inputSchema", "outputSchema", "title"):
            assert tool.get(key) == old.get(key), f"{where}: {key} changed"
        annotations, before = tool.get("annotations", {}), old.get("annotations", {})
        assert {k: annotations.get(k) for k in before} == before, f"{where}: an annotation changed or went"
        assert set(tool) - {"annotations", "_meta"} <= set(old) | {"annotations"}, f"{where}: new listing fields"
