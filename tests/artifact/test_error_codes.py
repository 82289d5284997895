"""Every code of the artifact domain's catalogue (``ds_events/services/artifacts/errors.py``)
is asserted by some test here or in a sibling module (that catalogue and the raise sites
agree: ``tests/test_error_catalogue.py``); the remaining odd cases live below."""

from __future__ import annotations

from pathlib import Path

from ds_events.home import Home, Quest
from ds_events.services.artifacts.errors import CODES

from .support import client_for, fails, git_ok


def test_every_error_code_raised_by_the_artifact_domain_is_asserted_by_some_test() -> None:
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name)
    tests += Path(__file__).read_text().split("\n# -- the odd cases", 1)[1]  # this module: its odd cases only
    untested = sorted(code for code in CODES if f'"{code}"' not in tests)
    assert untested == []


# -- the odd cases -------------------------------------------------------------------------


async def test_a_leftover_directory_where_the_worktree_would_go_is_refused(home: Home, quest: Quest) -> None:
    (quest.root / ".ds/worktrees/run__r9").mkdir(parents=True)
    refs = git_ok(quest.root, "for-each-ref")
    async with client_for(home) as c:
        err = await fails(c, "prepare_branch", "worktree_exists", run_id="r9")
    assert err["worktree"] == ".ds/worktrees/run__r9"
    assert git_ok(quest.root, "for-each-ref") == refs
