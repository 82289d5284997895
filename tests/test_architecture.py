"""Layering, checked on the source: events <- projections <- services <- handlers/CLI.

- ``ds_events.events`` imports nothing of ours but itself.
- ``projections`` are pure: no I/O, no clock, no web or MCP, no log, no services.
- ``handlers`` never append to a log directly: they call a service.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROJECTION_FORBIDDEN = {
    "os", "io", "pathlib", "shutil", "subprocess", "socket", "time", "datetime", "random", "sqlite3",
    "aiohttp", "aiofiles", "mcp", "pygit2", "ds_events.log", "ds_events.home", "ds_events.services",
    "ds_events.views", "handlers",
}


def modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def forbidden(names: set[str], banned: set[str]) -> set[str]:
    return {n for n in names for b in banned if n == b or n.startswith(b + ".")}


def test_there_is_something_to_check():
    assert len(modules("projections")) >= 3 and len(modules("handlers")) >= 2


def test_event_types_depend_on_nothing_else_of_ours():
    for path in modules("ds_events/events"):
        ours = {n for n in imports(path) if n.split(".")[0] in {"ds_events", "projections", "handlers"}}
        assert not ours, f"{path.relative_to(REPO)} imports {ours}"


def test_projections_do_no_io_and_read_no_clock():
    for path in modules("projections"):
        bad = forbidden(imports(path), PROJECTION_FORBIDDEN)
        assert not bad, f"{path.relative_to(REPO)} imports {bad}"
        source = path.read_text()
        for call in ("open(", "utc_now(", "new_event_id("):
            assert f" {call}" not in source and f"({call}" not in source, f"{path.relative_to(REPO)} calls {call}"


def test_handlers_never_append_to_a_log_themselves():
    for path in modules("handlers"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "ds_events.log":
                assert all(a.name in {"LogError"} for a in node.names), f"{path.relative_to(REPO)} imports the log"
            if isinstance(node, ast.Attribute) and node.attr in {"append", "append_async"}:
                owner = node.value
                text = ast.unparse(owner)
                assert not text.endswith("log") and "txn" not in text, f"{path.relative_to(REPO)}: {text}.{node.attr}"
