"""Raise sites of error codes in source files, to hold a domain's catalogue
(``ds_events/services/<domain>/errors.py``) and its code equal.

A raise site is a call of one of the domain error classes with a literal ``code="..."``.
:func:`catalogue_problems` lists what disagrees: a code raised but not catalogued, a
code catalogued but raised nowhere (no raise site and no string literal of it in the
sources, which covers a code chosen by a helper's argument), and a code raised with a
class whose HTTP status is not the catalogued one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from ds_events.errors import ErrorCode

__all__ = ["RaiseSite", "raise_sites", "catalogue_problems", "STATUS_OF_CLASS"]

# The status the daemon answers each class with (handlers.http.errors.status_of).
STATUS_OF_CLASS = {"Invalid": 400, "NotFound": 404, "Conflict": 409, "ServiceError": 400}


class RaiseSite(NamedTuple):
    where: str  # path:line
    error_class: str
    code: str


def raise_sites(paths: Iterable[Path]) -> list[RaiseSite]:
    """Every ``Invalid/NotFound/Conflict/ServiceError(..., code="literal")`` call."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in STATUS_OF_CLASS):
                continue
            for kw in node.keywords:
                if kw.arg == "code" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    found.append(RaiseSite(f"{path}:{node.lineno}", node.func.id, kw.value.value))
    return found


def catalogue_problems(codes: Mapping[str, ErrorCode], paths: Iterable[Path]) -> list[str]:
    paths = [p for p in paths if p.name != "errors.py"]
    sites = raise_sites(paths)
    literals = {
        node.value
        for path in paths
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    problems = [f"{s.where}: {s.code!r} is raised but not catalogued" for s in sites if s.code not in codes]
    problems += [f"{code!r} is catalogued but raised nowhere" for code in codes if code not in literals]
    problems += [
        f"{s.where}: {s.code!r} is raised as {s.error_class} ({STATUS_OF_CLASS[s.error_class]}), "
        f"catalogued as {codes[s.code].status}"
        for s in sites
        if s.code in codes and STATUS_OF_CLASS[s.error_class] != codes[s.code].status
    ]
    return problems
