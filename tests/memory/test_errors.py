"""The memory domain's error catalogue and the code it raises are one list: every code
raised in the memory services and their low helpers is catalogued (or is the command
vocabulary's), every catalogued code is raised there, with the status of its class; the
statuses of a write that wrote nothing are the ones the write answers with."""

from __future__ import annotations

import ast
from pathlib import Path

from ds_events.errors import ErrorCode
from ds_events.services.commands import CODES as SHARED
from ds_events.services.memory.errors import CODES, STATUSES
from tests.conftest import REPO

AREA = [REPO / "ds_events/services/memory", REPO / "ds_events/memory", REPO / "projections/memory.py"]
# The HTTP status the daemon answers each class with (handlers/http/errors.status_of).
STATUS_OF_CLASS = {"Invalid": 400, "NotFound": 404, "Conflict": 409, "ServiceError": 400}


def raised_codes(paths: list[Path]) -> dict[str, set[tuple[str, str]]]:
    """``code -> {(class, "file:line")}`` for every Invalid/NotFound/Conflict/ServiceError
    built in ``paths``; a call without a literal ``code=`` is reported as ``<no code>``."""
    found: dict[str, set[tuple[str, str]]] = {}
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name not in STATUS_OF_CLASS:
                continue
            code = next((k.value for k in node.keywords if k.arg == "code"), None)
            key = code.value if isinstance(code, ast.Constant) and isinstance(code.value, str) else "<no code>"
            found.setdefault(key, set()).add((name, f"{path.relative_to(REPO)}:{node.lineno}"))
    return found


def check_catalogue(catalogue: dict[str, ErrorCode], raised: dict[str, set[tuple[str, str]]], shared: set[str]) -> list[str]:
    """What is wrong between a catalogue and the codes raised in its area, one line each."""
    problems = [f"{code} raised without a literal code at {sorted(w for _, w in where)}" for code, where in raised.items()
                if code == "<no code>"]  # fmt: skip
    problems += [f"{code} is raised ({sorted(w for _, w in where)}) but not catalogued" for code, where in raised.items()
                 if code not in catalogue and code not in shared and code != "<no code>"]  # fmt: skip
    problems += [f"{code} is catalogued but raised nowhere in the area" for code in catalogue if code not in raised]
    for code, entry in catalogue.items():
        classes = {cls for cls, _ in raised.get(code, ())}
        if len(classes) > 1:
            problems.append(f"{code} is raised as {sorted(classes)}: one class per code")
        problems += [f"{code}: status {entry.status}, but {cls} is answered with {STATUS_OF_CLASS[cls]}"
                     for cls in classes if STATUS_OF_CLASS[cls] != entry.status]  # fmt: skip
        if not entry.meaning.strip() or entry.code != code:
            problems.append(f"{code}: an entry needs its code and a meaning for the caller")
    return problems


def test_every_code_the_memory_area_raises_is_catalogued_and_every_catalogued_code_is_raised() -> None:
    raised = raised_codes(AREA)
    assert len(raised) > 20, "the scan should find the memory area's raise sites"  # not a vacuous check
    assert check_catalogue(CODES, raised, set(SHARED)) == []


def test_the_catalogue_check_names_a_code_raised_but_not_catalogued_and_one_catalogued_but_never_raised() -> None:
    raised = {
        "unknown_card": {("NotFound", "a.py:1")},
        "new_code": {("Invalid", "a.py:2")},
        "dup": {("Invalid", "a.py:3"), ("Conflict", "a.py:4")},
    }
    catalogue = {"unknown_card": CODES["unknown_card"], "gone": ErrorCode("gone", 400, "never raised"),
                 "dup": ErrorCode("dup", 400, "raised with two classes")}  # fmt: skip
    problems = check_catalogue(catalogue, raised, set())
    assert any(p.startswith("new_code is raised") for p in problems)
    assert any(p.startswith("gone is catalogued but raised nowhere") for p in problems)
    assert any(p.startswith("dup is raised as ['Conflict', 'Invalid']") for p in problems)
    assert any(p.startswith("dup: status 400, but Conflict is answered with 409") for p in problems)


def test_the_write_statuses_that_write_nothing_are_the_ones_a_write_answers_with() -> None:
    source = (REPO / "ds_events/services/memory/cards.py").read_text()
    answered = {
        node.value.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.keyword) and node.arg == "status" and isinstance(node.value, ast.Constant)
    }
    assert set(STATUSES) == answered - {"written", "promoted", "configured"}
    assert not set(STATUSES) & set(CODES)
