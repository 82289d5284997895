"""Several real processes appending to one log, and writers killed with SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ds_events.events import decode_line
from ds_events.log import EventLog
from ds_events.verify import verify_log

WRITER = str(Path(__file__).with_name("log_writer.py"))


def spawn(path: Path, name: str, count: int, policy: str, batch: int = 1, pad: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WRITER, str(path), name, str(count), policy, str(batch), str(pad)],
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_four_processes_appending_5000_events_each_interleave_without_gaps(tmp_path):
    path = tmp_path / "events.jsonl"
    policies = ["group", "always", "never", "never"]
    procs = [spawn(path, f"w{k}", 5000, policies[k]) for k in range(4)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    acked = [line.split() for out in outputs for line in out.splitlines() if line != "ready"]
    assert len(acked) == 20000

    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    events = [decode_line(line) for line in lines[:-1]]
    assert [e.seq for e in events] == list(range(1, 20001))  # every seq exactly once, in order
    assert {e.id for e in events} == {i for _s, i in acked}
    # Each writer's own events keep their order.
    for k in range(4):
        mine = [int(e.content.split("-")[1]) for e in events if e.actor == f"w{k}"]
        assert mine == list(range(5000))
    assert verify_log(str(path)).ok


@pytest.mark.slow
def test_writers_killed_at_random_moments_lose_no_acknowledged_event(tmp_path):
    rng = random.Random(1234)
    path = tmp_path / "events.jsonl"
    acked: dict[int, str] = {}
    trials = 25
    for trial in range(trials):
        # Two writers; one of them dies by SIGKILL mid-stream. Big batches of padded
        # events make the kill land inside write() now and then.
        victim = spawn(path, f"v{trial}", 100_000, rng.choice(["always", "group", "never", "group-async"]), batch=rng.choice([1, 8, 64]), pad=rng.choice([0, 2000, 20000]))
        survivor = spawn(path, f"s{trial}", 40, "group")
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == "ready"
        for _ in range(rng.randint(0, 60)):
            if not victim.stdout.readline():
                break
        os.kill(victim.pid, signal.SIGKILL)
        rest = victim.communicate()[0]
        survivor_out = survivor.communicate(timeout=60)[0]
        assert survivor.returncode == 0
        for out in (rest, survivor_out):
            for line in out.splitlines():
                if line != "ready" and line.strip():
                    seq, event_id = line.split()
                    acked[int(seq)] = event_id
        # The log opens cleanly (recovering a torn tail if the kill left one) ...
        with EventLog(path, quest_id="q") as log:
            stored = {e.seq: e.id for e in log.read()}
        # ... and every acknowledged event is there, under its seq.
        missing = {s: i for s, i in acked.items() if stored.get(s) != i}
        assert not missing, f"trial {trial}: lost acknowledged events {sorted(missing)[:5]}"
        report = verify_log(str(path))
        assert report.ok, f"trial {trial}: {report.problems[:3]}"
    assert len(acked) > trials * 40


@pytest.mark.slow
def test_an_asyncio_writer_and_a_thread_writer_in_other_processes_interleave_without_gaps(tmp_path):
    path = tmp_path / "events.jsonl"
    procs = [spawn(path, "a", 4000, "group-async", batch=3), spawn(path, "t", 4000, "group")]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    acked = {seq_id.split()[1] for out in outputs for seq_id in out.splitlines() if seq_id != "ready"}
    assert len(acked) == 8000

    with EventLog(path) as log:
        events = log.read()
    assert [e.seq for e in events] == list(range(1, 8001))
    assert {e.id for e in events} == acked
    # Each asyncio task's messages keep their order, and so do the thread writer's.
    for k in range(8):
        mine = [int(e.content.rsplit("-", 1)[1]) for e in events if e.content.startswith(f"a-{k}-")]
        assert mine == list(range(500))
    assert [int(e.content.split("-")[1]) for e in events if e.actor == "t"] == list(range(4000))
    assert verify_log(str(path)).ok
