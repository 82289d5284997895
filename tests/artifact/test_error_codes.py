"""The artifact domain's error catalogue (``ds_events/services/artifacts/errors.py``) and
its raise sites agree: every code raised is catalogued with the status its class gets
(or named in ``ELSEWHERE`` with the catalogue that holds it, which is checked), every
catalogued code is raised somewhere, and every one is asserted by some test here or in a
sibling module; the remaining odd cases live below."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from ds_events.home import Home, Quest
from ds_events.services.artifacts.errors import CODES, ELSEWHERE

from .support import client_for, fails, git_ok

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "ds_events/services/artifacts").glob("*.py"), *(ROOT / "ds_events/artifacts").glob("*.py")])
_STATUS = {"Invalid": 400, "NotFound": 404, "Conflict": 409, "ServiceError": 400}
_RAISE = re.compile(r"\b(Invalid|NotFound|Conflict|ServiceError)\(")


def raise_sites(source: str) -> list[tuple[str, int]]:
    """``(code, status)`` of every ``Invalid(...)``, ``NotFound(...)``, ``Conflict(...)``
    or ``ServiceError(...)`` in ``source`` that spells its code."""
    found = []
    for match in _RAISE.finditer(source):
        depth, end = 1, match.end()
        while depth and end < len(source):  # the call's own parentheses
            depth += {"(": 1, ")": -1}.get(source[end], 0)
            end += 1
        code = re.search(r'code="([a-z_]+)"', source[match.end() : end])
        if code:
            found.append((code.group(1), _STATUS[match.group(1)]))
    return found


def disagreements(sites: list[tuple[str, int]], catalogued: dict[str, int]) -> list[str]:
    """What the raise sites and the catalogue (this domain's, with the entries of the
    codes it leaves to others) disagree on, one line each."""
    raised: dict[str, set[int]] = {}
    for code, status in sites:
        raised.setdefault(code, set()).add(status)
    out = [f"{code} is raised but not catalogued" for code in sorted(set(raised) - set(catalogued))]
    out += [f"{code} is catalogued but never raised" for code in sorted(set(catalogued) - set(raised))]
    out += [
        f"{code} is raised as {sorted(statuses)} but catalogued as {catalogued[code]}"
        for code, statuses in sorted(raised.items())
        if code in catalogued and statuses != {catalogued[code]}
    ]
    return out


def _all_sites() -> list[tuple[str, int]]:
    return [site for src in SOURCES for site in raise_sites(src.read_text())]


# A catalogue ELSEWHERE may name before it exists: the shared vocabulary's (its engineer
# writes it beside this work); its codes are then taken at the status their raise implies.
PENDING = {"ds_events.services.commands"}


def _catalogued() -> dict[str, int]:
    """Code -> status: this catalogue's, and the entries ``ELSEWHERE`` points to."""
    out = {code: entry.status for code, entry in CODES.items()}
    for code, where in ELSEWHERE.items():
        book = getattr(importlib.import_module(where), "CODES", None)
        if book is None:
            assert where in PENDING, f"ELSEWHERE names {where}, which has no catalogue"
            out[code] = next(status for raised, status in _all_sites() if raised == code)
        else:
            out[code] = book[code].status  # KeyError: the code is not there
    return out


def test_the_catalogue_holds_exactly_the_codes_the_domain_raises_with_their_statuses() -> None:
    sites = _all_sites()
    assert len({code for code, _ in sites}) >= 50  # the pattern still finds the codes
    assert disagreements(sites, _catalogued()) == []
    assert set(CODES).isdisjoint(ELSEWHERE)  # one code, one entry
    assert all(entry.meaning.strip().endswith(".") for entry in CODES.values())  # each says what it means


def test_a_planted_uncatalogued_code_or_a_wrong_status_is_reported() -> None:
    planted = 'raise Conflict("x", code="brand_new_code")\nraise NotFound("y", code="invalid_id")\n'
    catalogued = _catalogued()
    found = disagreements(_all_sites() + raise_sites(planted), catalogued)
    assert found == ["brand_new_code is raised but not catalogued", "invalid_id is raised as [400, 404] but catalogued as 400"]
    assert disagreements(_all_sites(), {**catalogued, "never_raised": 409}) == ["never_raised is catalogued but never raised"]


def test_every_error_code_raised_by_the_artifact_domain_is_asserted_by_some_test() -> None:
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name)
    tests += Path(__file__).read_text().split("\n# -- the odd cases", 1)[1]  # this module: its odd cases only
    untested = sorted(code for code in [*CODES, *ELSEWHERE] if f'"{code}"' not in tests)
    assert untested == []


# -- the odd cases -------------------------------------------------------------------------


async def test_a_leftover_directory_where_the_worktree_would_go_is_refused(home: Home, quest: Quest) -> None:
    (quest.root / ".ds/worktrees/run__r9").mkdir(parents=True)
    refs = git_ok(quest.root, "for-each-ref")
    async with client_for(home) as c:
        err = await fails(c, "prepare_branch", "worktree_exists", run_id="r9")
    assert err["worktree"] == ".ds/worktrees/run__r9"
    assert git_ok(quest.root, "for-each-ref") == refs
