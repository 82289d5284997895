"""Crash points: every registered point is reached by a call in the source and every call
names a registered point; the hook kills with SIGKILL exactly where (and when) the
environment names it, and does nothing otherwise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ds_events.crashpoints import POINTS

REPO = Path(__file__).resolve().parent.parent
CALL = re.compile(r"""\bcrashpoint\(\s*["']([^"']+)["']""")

# A process that passes two points three times each, saying where it is after each.
PROGRAM = """
from ds_events.crashpoints import crashpoint
for i in range(1, 4):
    crashpoint("host.claim.before_append")
    print("a", i, flush=True)
    crashpoint("host.claim.after_append", when=i != 2)
    print("b", i, flush=True)
"""


def _calls() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in ("ds_events", "handlers", "projections"):
        for path in (REPO / package).rglob("*.py"):
            if path.name == "crashpoints.py":
                continue
            for name in CALL.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, []).append(str(path.relative_to(REPO)))
    return found


def test_every_registered_point_is_called_once_in_the_source_and_every_call_is_registered() -> None:
    calls = _calls()
    assert sorted(set(calls) - set(POINTS)) == [], "crashpoint() names a point POINTS does not register"
    assert sorted(set(POINTS) - set(calls)) == [], "POINTS registers a point no code reaches"
    # The bash service starts a session on two paths (sync and async): the same points.
    twice = {n: where for n, where in calls.items() if len(where) > 1 and not n.startswith("mcp.bash.")}
    assert twice == {}
    assert all(n.startswith(("host.", "mcp.")) for n in POINTS)  # each says which process dies


def _run(at: str | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "DS_CRASH_MARK": str(tmp_path / "mark")}
    if at is not None:
        env["DS_CRASH_AT"] = at
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60)


def test_an_unset_hook_does_nothing(tmp_path: Path) -> None:
    done = _run(None, tmp_path)
    assert done.returncode == 0 and done.stdout.split("\n")[-2] == "b 3"
    assert not (tmp_path / "mark").exists()


def test_the_hook_kills_with_sigkill_at_the_named_point_and_marks_it(tmp_path: Path) -> None:
    done = _run("host.claim.after_append", tmp_path)
    assert done.returncode == -9
    assert done.stdout == "a 1\n"  # killed before "b 1": nothing after the point ran
    assert (tmp_path / "mark").read_text().split()[0] == "host.claim.after_append"


def test_name_n_kills_at_the_nth_reach_and_when_false_does_not_count(tmp_path: Path) -> None:
    assert _run("host.claim.before_append:2", tmp_path).stdout == "a 1\nb 1\n"
    # the second pass skips after_append (when=False): its 2nd reach is the third pass
    assert _run("host.claim.after_append:2", tmp_path).stdout == "a 1\nb 1\na 2\nb 2\na 3\n"


def test_a_name_that_is_only_a_prefix_does_not_match(tmp_path: Path) -> None:
    assert _run("host.claim", tmp_path).returncode == 0
