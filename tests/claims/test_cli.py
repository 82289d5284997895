"""``ds audit-paper`` through a real ``ds`` process: each number with line:column and
what it resolves to, exit 0 when all resolve and 1 when any does not; ``--json``; the
manuscript confined to the quest, a missing one refused, and nothing written either way."""

from __future__ import annotations

import json
import subprocess

from ds_events.home import Home, Quest
from tests.claims.support import build_quest, write_manuscript
from tests.claims.test_audit import CORRECT
from tests.helpers import DS, ds_env


def _ds(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *argv], env=ds_env(home), capture_output=True, text=True, timeout=120)


async def test_audit_paper_prints_each_number_where_it_is_and_what_it_resolves_to(home: Home, quest: Quest) -> None:
    built = await build_quest(home)
    write_manuscript(quest, CORRECT)
    done = _ds(home, "audit-paper", "q1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("paper/manuscript.md: 10 numbers: 10 resolved, 0 superseded, 0 unresolved (")
    (r1,) = [line for line in lines if line.lstrip().startswith("5:20 ")]
    sha = built["r1"]["head_sha"][:12]
    assert f"91.2%      resolved    main run r1 top1 @ {sha}: 0.9123 x 100 rounded to 1 decimal = 91.2% [seq {built['r1']['seq']}]" in r1
    assert lines[-1].startswith("skipped: 4.1 at 3:4 (a heading's section number)")


async def test_audit_paper_exits_1_and_names_the_line_of_a_number_that_matches_nothing(home: Home, quest: Quest) -> None:
    await build_quest(home)
    write_manuscript(quest, "# Draft\n\nr2 reaches 91.87%.\nIt reaches 93.7% on the new split.\n", "paper/main.md")
    done = _ds(home, "audit-paper", "q1")
    assert done.returncode == 1, (done.stdout, done.stderr)
    (bad,) = [line for line in done.stdout.splitlines() if "UNRESOLVED" in line]
    assert bad.split()[:3] == ["4:12", "93.7%", "UNRESOLVED"]
    assert "no recorded metric value rounds to 93.7%; nearest: main run r2 top1 = 0.9187" in bad
    as_json = _ds(home, "audit-paper", "q1", "--json")
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["ok"] is False and report["manuscript_path"] == "paper/main.md"
    assert [(c["mention"]["text"], c["mention"]["line"], c["status"]) for c in report["claims"]] == [
        ("91.87%", 3, "resolved"),
        ("93.7%", 4, "unresolved"),
    ]
    assert report["claims"][0]["sources"][0]["events"][0]["key"] == "run:r2"


async def test_audit_paper_confines_the_manuscript_to_the_quest_and_writes_nothing(home: Home, quest: Quest, tmp_path) -> None:
    await build_quest(home)
    log = quest.root / ".ds" / "events.jsonl"
    before = log.read_bytes()
    outside = tmp_path / "outside.md"
    outside.write_text("91.2%\n")
    for path in (str(outside), "../outside.md", ".ds/events.jsonl"):
        done = _ds(home, "audit-paper", "q1", "--manuscript", path)
        assert done.returncode == 1 and done.stdout == "", (path, done.stdout)
        assert "path_outside_quest" in done.stderr or "path_not_allowed" in done.stderr, (path, done.stderr)
    missing = _ds(home, "audit-paper", "q1")
    assert missing.returncode == 1 and "no_manuscript" in missing.stderr and "--manuscript PATH" in missing.stderr
    named = _ds(home, "audit-paper", "q1", "--manuscript", "paper/nope.md")
    assert named.returncode == 1 and "no_manuscript: no manuscript at paper/nope.md" in named.stderr
    assert log.read_bytes() == before
