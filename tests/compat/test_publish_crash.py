"""`publish_baseline` writes two logs: the quest's, then the home's baseline registry. A
publisher killed between the two appends leaves the quest with a publication the
registry lacks; the retry completes the missing half, once, and the two agree.

The publisher is a real process, killed with SIGKILL at a hook placed between the two
appends; the retry goes through a real stdio `artifact` server, as a runner's would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from ds_events.home import Home, Quest
from ds_events.services.artifacts.registry import registry_entry
from tests.helpers import domain_events, ds_env
from tests.mcp_support import verify_every_log

from .research_support import artifact_client, ok, refused

pytestmark = pytest.mark.slow

PAYLOAD = {"baseline_id": "rn20", "name": "ResNet-20 (He et al. 2016)", "baseline_path": "baselines/rn20",
           "baseline_variants": [{"variant_id": "paper"}], "source": "paper"}  # fmt: skip

# Publishes PAYLOAD in quest q1, but stops for good between the quest's append and the
# registry's: the hook replaces the registry half, says where it is, and waits for the kill.
PUBLISHER = textwrap.dedent(
    f"""
    import sys, time
    from ds_events.home import Home
    from ds_events.services.artifacts import baselines
    from ds_events.services.artifacts.commands import PublishBaseline

    def hook(quest, published):
        print(published.id, flush=True)
        time.sleep(60)  # holds here until the SIGKILL (not a wait for anything)

    baselines.publish_to_registry = hook  # the registry half, as publish_baseline calls it
    quest = Home().open_quest("q1", actor="publisher")
    baselines.publish_baseline(quest, PublishBaseline(payload={PAYLOAD!r}))
    """
)


def _registry_lines(home: Home) -> list[dict]:
    path = home.root / "baselines" / ".ds" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _kill_between_appends(home: Home) -> str:
    """Run the publisher until the hook, SIGKILL it there; the quest event's id."""
    proc = subprocess.Popen([sys.executable, "-c", PUBLISHER], env=ds_env(home), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        event_id = proc.stdout.readline().strip()
        assert event_id, "the publisher ended before the hook"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    return event_id


async def test_a_publisher_killed_between_the_quest_and_registry_appends_is_completed_by_the_retry(
    home: Home, quest: Quest
) -> None:
    event_id = _kill_between_appends(home)
    # Half done: the quest holds the publication, the registry does not.
    published = [e for e in quest.log.read() if e.type == "artifact.baseline_published"]
    assert [e.id for e in published] == [event_id]
    assert registry_entry(home, "rn20") is None

    async with artifact_client(home) as c:
        retry = await ok(c, "publish_baseline", {"payload": PAYLOAD})
        # The retry completed the registry half: nothing new in the quest, one registry
        # event, under the quest event's id.
        assert retry["recovered"] is True and retry["seq"] == published[0].seq
        assert retry["baseline_registry_entry"]["source_quest"] == "q1"
        assert retry["baseline_registry_entry"]["variant_ids"] == ["paper"]
        assert [e.id for e in quest.log.read() if e.type == "artifact.baseline_published"] == [event_id]
        lines = _registry_lines(home)
        assert [(e["type"], e["id"]) for e in lines] == [("registry.baseline_published", event_id)]
        assert lines[0]["payload"] == published[0].payload

        # Converged: publishing again is an ordinary duplicate, refused, nothing written anywhere.
        before = domain_events(quest)
        again = await refused(c, "publish_baseline", {"payload": PAYLOAD})
        assert again["error"] == "baseline_exists"
        assert domain_events(quest) == before and len(_registry_lines(home)) == 1

    # Another quest of the home now sees the baseline and can attach it.
    other = home.create_quest("Other", quest_id="q2", brief="Reuse the baseline.")
    other.close()
    async with artifact_client(home, "q2") as c2:
        attached = await ok(c2, "attach_baseline", {"baseline_id": "rn20"})
    assert attached["baseline_id"] == "rn20"
    entry = registry_entry(home, "rn20")
    assert entry is not None and entry.publications == 1
    assert verify_every_log(home) == {}


async def test_a_retry_with_another_payload_completes_the_registry_then_is_refused(home: Home, quest: Quest) -> None:
    event_id = _kill_between_appends(home)
    async with artifact_client(home) as c:
        changed = await refused(c, "publish_baseline", {"payload": {**PAYLOAD, "name": "ResNet-20, our numbers"}})
    # The id is published in this quest, so the new payload is refused; the registry now
    # holds the quest's publication as it was made (the two agree).
    assert changed["error"] == "baseline_exists" and "now complete" in changed["message"]
    [line] = _registry_lines(home)
    assert line["id"] == event_id and line["payload"]["title"] == "ResNet-20 (He et al. 2016)"
    assert [e.payload["title"] for e in quest.log.read() if e.type == "artifact.baseline_published"] == [
        "ResNet-20 (He et al. 2016)"
    ]


async def test_an_uninterrupted_publication_writes_each_half_once(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        first = await ok(c, "publish_baseline", {"payload": PAYLOAD})
        assert first["recovered"] is False
        assert (await refused(c, "publish_baseline", {"payload": PAYLOAD}))["error"] == "baseline_exists"
    [quest_event] = [e for e in quest.log.read() if e.type == "artifact.baseline_published"]
    assert [e["id"] for e in _registry_lines(home)] == [quest_event.id]


def test_verify_registry_names_a_half_done_publication_and_repair_registry_completes_it(home: Home, quest: Quest) -> None:
    """Nobody retries: `ds verify --registry` (a real CLI process) names what the
    registry lacks and fails; `ds repair --registry` appends it, once; verify is then ok."""
    from tests.helpers import DS

    def ds(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*DS, *args], env=ds_env(home), capture_output=True, text=True, timeout=120)

    first = _kill_between_appends(home)
    # The first publication of the home: the registry does not even exist yet.
    found = ds("verify", "--registry")
    assert found.returncode == 1 and "quest q1 published baseline rn20" in found.stdout, found.stdout + found.stderr
    assert _registry_lines(home) == []  # verify wrote nothing

    fixed = ds("repair", "--registry")
    assert fixed.returncode == 0 and "1 publication(s) completed" in fixed.stdout, fixed.stdout + fixed.stderr
    assert [(e["type"], e["id"]) for e in _registry_lines(home)] == [("registry.baseline_published", first)]
    again = ds("repair", "--registry")
    assert again.returncode == 0 and "nothing to repair" in again.stdout and len(_registry_lines(home)) == 1

    # A second quest's publisher stops halfway while the registry exists: the JSON report says so.
    other = home.create_quest("Other", quest_id="q2", brief="Its own baseline.")
    other.close()
    script = PUBLISHER.replace('open_quest("q1"', 'open_quest("q2"').replace("'rn20'", "'rn32'")
    proc = subprocess.Popen([sys.executable, "-c", script], env=ds_env(home), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
    report = ds("verify", "--registry", "--json")
    body = json.loads(report.stdout)
    assert report.returncode == 1 and body["ok"] is False
    assert [(u["quest_id"], u["baseline_id"]) for u in body["unregistered"]] == [("q2", "rn32")]
    assert ds("repair", "--registry").returncode == 0
    healed = ds("verify", "--registry", "--json")
    assert healed.returncode == 0 and json.loads(healed.stdout)["unregistered"] == []
    assert {getattr(registry_entry(home, b), "source_quest", None) for b in ("rn20", "rn32")} == {"q1", "q2"}
