"""Every stable error code the artifact domain can raise is exercised by a test here or in
a sibling module; the remaining odd cases live below."""

from __future__ import annotations

import re
from pathlib import Path

from ds_events.home import Home, Quest

from .support import client_for, fails, git_ok

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    ROOT / "ds_events/artifacts/validate.py",
    ROOT / "ds_events/services/artifacts/arxiv.py",
    ROOT / "ds_events/artifacts/git.py",
    ROOT / "ds_events/services/artifacts/records.py",
    ROOT / "ds_events/services/artifacts/checkpoints.py",
]


def test_every_error_code_raised_by_the_artifact_domain_is_asserted_by_some_test() -> None:
    raised = {code for src in SOURCES for code in re.findall(r'code="([a-z_]+)"', src.read_text())}
    tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    untested = sorted(code for code in raised if f'"{code}"' not in tests)
    assert len(raised) >= 40  # the pattern still finds the codes
    assert untested == []


async def test_a_leftover_directory_where_the_worktree_would_go_is_refused(home: Home, quest: Quest) -> None:
    (quest.root / ".ds/worktrees/run__r9").mkdir(parents=True)
    refs = git_ok(quest.root, "for-each-ref")
    async with client_for(home) as c:
        err = await fails(c, "prepare_branch", "worktree_exists", run_id="r9")
    assert err["worktree"] == ".ds/worktrees/run__r9"
    assert git_ok(quest.root, "for-each-ref") == refs
