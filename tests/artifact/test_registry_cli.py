"""``ds verify --registry`` and ``ds replay --registry``: the home's baseline registry log
is audited and its files rebuilt like a quest's."""

from __future__ import annotations

import subprocess

from ds_events.home import Home, Quest
from ds_events.services import artifacts
from ds_events.services.artifacts.commands import PublishBaseline
from tests.helpers import DS, ds_env


def ds(home: Home, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DS, *argv], env=ds_env(home), capture_output=True, text=True, timeout=60)


def test_the_registry_is_verified_and_replayed_from_the_cli(home: Home, quest: Quest) -> None:
    none = ds(home, "verify", "--registry")
    # A fresh home has no registry yet: nothing to verify is not a failure (repair agrees).
    assert none.returncode == 0 and "no baseline registry" in none.stdout, none.stdout + none.stderr
    for i in range(3):
        artifacts.publish_baseline(quest, PublishBaseline(payload={"baseline_id": f"b{i}", "name": f"B{i}"}))
    ok = ds(home, "verify", "--registry")
    assert ok.returncode == 0 and ok.stdout.startswith("ok: 3 events"), ok.stdout + ok.stderr
    files = {p: p.read_bytes() for p in (home.root / "baselines").glob("*.json")}
    assert len(files) == 3
    for p in files:
        p.unlink()
    replayed = ds(home, "replay", "--registry")
    assert replayed.returncode == 0 and "3 file(s) differed" in replayed.stdout, replayed.stdout + replayed.stderr
    assert {p: p.read_bytes() for p in files} == files
    # Tampering with the registry's log is caught.
    log = home.root / "baselines" / ".ds" / "events.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"B1"', b'"B9"'))
    bad = ds(home, "verify", "--registry")
    assert bad.returncode == 1 and "problem(s)" in bad.stdout
    both = ds(home, "replay", "q1", "--registry")
    assert both.returncode == 2 and "not both" in both.stderr
    neither = ds(home, "verify")
    assert neither.returncode == 2 and "--registry" in neither.stderr
