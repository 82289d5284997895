"""The error catalogues of the research, quest and views domains agree with their raise
sites: every code raised in a domain's package is in its catalogue (``CODES``) or named
in ``ELSEWHERE`` with the catalogue that holds it (another domain's, which is checked to
hold it); no code is in both or in two of these catalogues; every catalogued code
is raised in its package, with the status its class answers (400 ``Invalid``, 404
``NotFound``, 409 ``Conflict``). Raise sites are read from the source (``ast``), so a code
added anywhere in a package is seen."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

from ds_events.errors import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
STATUS = {"Invalid": 400, "NotFound": 404, "Conflict": 409}
DOMAINS = ("research", "quest", "views")


def raised_codes(package: Path) -> dict[str, set[tuple[str, str]]]:
    """code -> {(class, where)} for every ``raise Invalid/NotFound/Conflict(..., code="...")``."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            name = getattr(node.exc.func, "id", None) or getattr(node.exc.func, "attr", None)
            if name not in STATUS:
                continue
            codes = [k.value for k in node.exc.keywords if k.arg == "code"]
            assert codes and isinstance(codes[0], ast.Constant), f"{path.name}:{node.lineno} raises {name} without a literal code"
            found.setdefault(codes[0].value, set()).add((name, f"{path.name}:{node.lineno}"))
    return found


def _errors(domain: str) -> ModuleType:
    return importlib.import_module(f"ds_events.services.{domain}.errors")


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_code_raised_is_catalogued_once_with_its_status_and_every_catalogued_code_is_raised(domain: str) -> None:
    module = _errors(domain)
    catalogue: dict[str, ErrorCode] = module.CODES
    elsewhere: dict[str, str] = module.ELSEWHERE
    raised = raised_codes(ROOT / "ds_events" / "services" / domain)
    assert sorted(set(raised) - set(catalogue) - set(elsewhere)) == [], f"raised in {domain}, catalogued nowhere"
    assert sorted(set(catalogue) - set(raised)) == [], f"catalogued in {domain} but raised nowhere there"
    assert sorted(set(elsewhere) - set(raised)) == [], f"{domain} says it raises these, and does not"
    assert sorted(set(catalogue) & set(elsewhere)) == [], "a code is catalogued here and said to be elsewhere"
    for code, sites in raised.items():
        classes = {cls for cls, _where in sites}
        assert len(classes) == 1, f"{code} is raised as {sorted(sites)}: one class per code"
        if code in catalogue:
            assert catalogue[code].status == STATUS[classes.pop()], f"{code}: the catalogue's status is not its class's"
    for entry in catalogue.values():
        assert entry.code == entry.code.lower() and " " not in entry.code and entry.meaning.strip()


# The catalogue another engineer writes beside this work (the artifacts domain's); until it
# is merged, the codes left to it are checked by tests/test_error_catalogue.py once it is.
PENDING = {"ds_events.services.artifacts.errors"}


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_code_left_to_another_catalogue_is_in_it(domain: str) -> None:
    wrong, pending = {}, set()
    for code, where in _errors(domain).ELSEWHERE.items():
        try:
            book = importlib.import_module(where).CODES
        except (ModuleNotFoundError, AttributeError):
            pending.add(where)
            continue
        if code not in book:
            wrong[code] = where
    assert wrong == {}
    assert pending <= PENDING, f"ELSEWHERE names catalogues that do not exist: {sorted(pending - PENDING)}"


def test_no_code_is_in_two_of_these_catalogues() -> None:
    seen: dict[str, list[str]] = {}
    for domain in DOMAINS:
        for code in _errors(domain).CODES:
            seen.setdefault(code, []).append(domain)
    assert {c: where for c, where in seen.items() if len(where) > 1} == {}
