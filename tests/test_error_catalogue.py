"""Every error code is catalogued once, where it is raised, with the status the daemon
answers it with; every catalogued code is raised somewhere; ``docs/errors.md`` lists
them all.

Raise sites are found in the source: a ``code="..."`` argument to any call (``Invalid``,
``NotFound``, ``Conflict``, ``LogError`` subclasses, helpers that build one), a
``code = "..."`` class attribute of an error class, the edges' own
``error_response(status, "code", ...)`` and answers built by hand (``{"error": "code"}``). Which catalogue holds a code follows from where
it is raised (``AREAS``): a domain's low helpers are the domain's. Codes that several
areas raise (``invalid_limit``, a query parameter out of range) belong to the shared
vocabulary (``ds_events/services/commands.py``).

A change to a catalogue regenerates the page:

    DS_REGEN_ERRORS=1 python3 -m pytest tests/test_error_catalogue.py
"""

from __future__ import annotations

import ast
import importlib
import os
import re
from pathlib import Path

from ds_events.errors import ErrorCode

from .test_architecture import DOMAINS, REPO, module_name, our_modules

PAGE = REPO / "docs" / "errors.md"
VOCABULARY = "ds_events.services.commands"
CORE = "ds_events.errors"
# Longest prefix wins: module prefix -> the catalogue module of its area.
AREAS: dict[str, str] = {
    "ds_events": CORE,
    VOCABULARY: VOCABULARY,
    "ds_events.services.tool_calls": VOCABULARY,
    **{f"ds_events.services.{d}": f"ds_events.services.{d}.errors" for d in DOMAINS},
    "ds_events.memory": "ds_events.services.memory.errors",
    "ds_events.bash": "ds_events.services.bash.errors",
    "ds_events.bash_monitor": "ds_events.services.bash.errors",
    "ds_events.artifacts": "ds_events.services.artifacts.errors",
    "ds_events.runners": "ds_events.services.runtime.errors",
    "handlers.connectors": "ds_events.services.interactions.errors",
    "handlers.http": "handlers.http.errors",
    "handlers.acp": "handlers.http.errors",
    "handlers.mcp": "handlers.mcp.errors",
    "ds_events.cli": "ds_events.cli.errors",
    "projections": CORE,
}
STATUS_OF = {"Invalid": 400, "NotFound": 404, "Conflict": 409}
_CODE = re.compile(r"[a-z][a-z0-9_]*")  # a code, not a message kept under "error"


def area_of(module: str) -> str:
    best = max((p for p in AREAS if module == p or module.startswith(p + ".")), key=len)
    return AREAS[best]


def raise_sites(root: Path = REPO) -> list[tuple[str, int, str, int | None]]:
    """``(module, line, code, status implied by the raise, if any)`` for every site."""
    sites: list[tuple[str, int, str, int | None]] = []
    for path in our_modules(root):
        me = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                for kw in node.keywords:
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        sites.append((me, node.lineno, kw.value.value, STATUS_OF.get(name)))
                if name == "error_response" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                    status = node.args[0].value if isinstance(node.args[0], ast.Constant) else None
                    sites.append((me, node.lineno, str(node.args[1].value), status))
            elif isinstance(node, ast.Dict):  # an answer built by hand: {"error": "code", ...}
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant) and key.value == "error" and isinstance(value, ast.Constant)
                        and isinstance(value.value, str) and _CODE.fullmatch(value.value)
                    ):
                        sites.append((me, node.lineno, str(value.value), None))
            elif isinstance(node, ast.ClassDef):
                for stmt in node.body:
                    if (
                        isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["code"]
                        and isinstance(stmt.value, ast.Constant)
                    ):
                        sites.append((me, stmt.lineno, str(stmt.value.value), None))
    return sites


def catalogues() -> dict[str, dict[str, ErrorCode]]:
    """Catalogue module -> its ``CODES`` (every area's that exists)."""
    found: dict[str, dict[str, ErrorCode]] = {}
    for module in sorted(set(AREAS.values())):
        try:
            found[module] = importlib.import_module(module).CODES
        except ModuleNotFoundError:
            found[module] = {}
    return found


# The base classes' own defaults: every raise names its code, so they are never shown.
_CLASS_DEFAULTS = {"error", "invalid", "not_found", "conflict"}


def test_every_raised_code_is_catalogued_in_its_area_or_the_shared_ones():
    books = catalogues()
    owner = {code: module for module, book in books.items() for code in book}
    missing = sorted(
        f"{module}:{line} raises {code!r}, catalogued nowhere (add it to {area_of(module)})"
        for module, line, code, _ in raise_sites() if code not in owner and code not in _CLASS_DEFAULTS
    )
    assert missing == []


def test_no_code_is_catalogued_twice():
    seen: dict[str, list[str]] = {}
    for module, book in catalogues().items():
        for code in book:
            seen.setdefault(code, []).append(module)
    assert {code: where for code, where in seen.items() if len(where) > 1} == {}


def test_every_catalogued_code_is_raised_in_its_own_area():
    sites = raise_sites()
    raised_in: dict[str, set[str]] = {}
    for module, _, code, _ in sites:
        raised_in.setdefault(code, set()).add(area_of(module))
    unused = []
    for module, book in catalogues().items():
        for code in book:
            areas = raised_in.get(code, set())
            if not areas or (module not in (VOCABULARY, CORE) and module not in areas):
                unused.append(f"{module}: {code!r} is raised {'only in ' + ', '.join(sorted(areas)) if areas else 'nowhere'}")
    assert unused == []


def test_each_code_has_one_status_and_it_agrees_with_every_raise():
    books = catalogues()
    status = {code: entry.status for book in books.values() for code, entry in book.items()}
    wrong = sorted(
        f"{module}:{line} raises {code!r} as {implied}, catalogued {status[code]}"
        for module, line, code, implied in raise_sites()
        if implied is not None and code in status and status[code] != implied
    )
    assert wrong == []
    for book in books.values():
        for code, entry in book.items():
            assert entry.code == code and entry.meaning.strip() and 400 <= entry.status < 600, entry


def render_page() -> str:
    lines = [
        "# Error codes",
        "",
        "Every refusal answers `{\"error\": code, \"message\": ...}` (plus details) with the same code on",
        "every edge: an MCP tool error, the HTTP status below, one line and exit code 1 from the CLI.",
        "Generated from the catalogues by `tests/test_error_catalogue.py`; do not edit by hand.",
    ]
    for module, book in catalogues().items():
        if not book:
            continue
        lines += ["", f"## `{module}`", "", "| code | HTTP | meaning |", "|---|---|---|"]
        lines += [f"| `{e.code}` | {e.status} | {e.meaning} |" for e in sorted(book.values())]
    return "\n".join(lines) + "\n"


def test_the_error_page_lists_every_catalogued_code():
    page = render_page()
    if os.environ.get("DS_REGEN_ERRORS") == "1":
        PAGE.write_text(page)
    assert PAGE.read_text() == page, "docs/errors.md is stale: regenerate it (see this module's docstring)"


def test_the_checks_catch_an_uncatalogued_and_a_misclassified_code(tmp_path):
    pkg = tmp_path / "ds_events" / "services" / "memory"
    pkg.mkdir(parents=True)
    for d in ("ds_events", "ds_events/services", "projections", "handlers"):
        (tmp_path / d).mkdir(exist_ok=True)
        (tmp_path / d / "__init__.py").touch()
    (pkg / "__init__.py").touch()
    (pkg / "cards.py").write_text('def f():\n    raise NotFound("x", code="no_such_card")\nclass E(Exception):\n    code = "own"\n')
    assert sorted(raise_sites(tmp_path)) == [
        ("ds_events.services.memory.cards", 2, "no_such_card", 404),
        ("ds_events.services.memory.cards", 4, "own", None),
    ]
    assert area_of("ds_events.services.memory.cards") == "ds_events.services.memory.errors"
    assert area_of("ds_events.memory.index") == "ds_events.services.memory.errors"
    assert area_of("ds_events.home") == CORE
