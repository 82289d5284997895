"""The error catalogues of the research, quest and views domains agree with their raise
sites: every code raised in a domain's package is catalogued there, with the status its
class answers (400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``), and every code
catalogued is raised there. Raise sites are read from the source (``ast``), so a code
added anywhere in the package is seen."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

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


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_code_raised_is_catalogued_with_its_status_and_every_catalogued_code_is_raised(domain: str) -> None:
    catalogue: dict[str, ErrorCode] = importlib.import_module(f"ds_events.services.{domain}.errors").CODES
    raised = raised_codes(ROOT / "ds_events" / "services" / domain)
    assert sorted(set(raised) - set(catalogue)) == [], f"raised in {domain} but not in its catalogue"
    assert sorted(set(catalogue) - set(raised)) == [], f"catalogued in {domain} but raised nowhere there"
    for code, sites in raised.items():
        classes = {cls for cls, _where in sites}
        assert len(classes) == 1, f"{code} is raised as {sorted(sites)}: one class per code"
        assert catalogue[code].status == STATUS[classes.pop()], f"{code}: the catalogue's status is not its class's"
    for entry in catalogue.values():
        assert entry.code == entry.code.lower() and " " not in entry.code and entry.meaning.strip()


def test_a_code_two_domains_share_has_one_meaning() -> None:
    entries = [e for d in DOMAINS for e in importlib.import_module(f"ds_events.services.{d}.errors").CODES.values()]
    by_code: dict[str, set[ErrorCode]] = {}
    for entry in entries:
        by_code.setdefault(entry.code, set()).add(entry)
    assert {c: v for c, v in by_code.items() if len(v) > 1} == {}
