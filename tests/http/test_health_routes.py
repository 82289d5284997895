"""``health`` on the HTTP quest routes (``GET /api/quests``, ``GET /api/quests/{id}``) and
in ``ds quest list/show`` (a real ``ds`` subprocess): one object, the same on every
surface, and a failed quest stands out."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from ds_events.events.runner import TurnFailure, TurnFinished, TurnHeld, TurnStarted
from ds_events.home import Home, Quest
from tests.helpers import DS, ds_env

KEYS = {"state", "summary", "since", "since_seq", "run_id", "attempt", "max_attempts", "next_attempt_at", "reason", "failure"}
FAILURE = {"class": "deterministic", "cause": "refused_call", "tool": "artifact.record", "call_id": "call-3", "error": "invalid_metrics"}


def hold(quest: Quest) -> TurnHeld:
    """Record a turn that failed on a refused call and is held for the user."""
    quest.emit(TurnStarted(run_id="run-1", runner="scripted", skill="scout", actor="scheduler"))
    quest.emit(TurnFinished(run_id="run-1", outcome="failed", reason="exit 1", actor="scheduler"))
    failure = TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record", call_id="call-3",
                          error="invalid_metrics")  # fmt: skip
    return quest.emit(TurnHeld(run_id="run-1", attempt=1, max_attempts=3, reason="artifact.record refused", failure=failure))


async def test_the_quest_routes_carry_health_and_a_held_turn_is_failed(client: Any, quest: Quest) -> None:
    listed = await (await client.get("/api/quests")).json()
    (row,) = listed["quests"]
    assert set(row["health"]) == KEYS and row["health"]["state"] == "new"
    held = hold(quest)
    row = (await (await client.get("/api/quests")).json())["quests"][0]
    shown = await (await client.get("/api/quests/q1")).json()
    for health in (row["health"], shown["health"]):
        assert health["state"] == "failed" and health["failure"] == FAILURE
        assert (health["since_seq"], health["run_id"], health["attempt"], health["max_attempts"]) == (held.seq, "run-1", 1, 3)
        assert health["summary"].startswith("failed: attempt 1 of 3 — artifact.record refused (invalid_metrics)")
    assert row["health"] == shown["health"]


def ds(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*DS, *args], env=ds_env(home), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_ds_quest_list_and_show_say_the_health_and_a_failed_quest_stands_out(home: Home, quest: Quest) -> None:
    with home.create_quest("Calm", quest_id="calm"):
        pass
    held = hold(quest)
    listed = ds(home, "quest", "list").stdout.splitlines()
    failed_line = next(i for i, line in enumerate(listed) if line.startswith("q1 "))
    assert " FAILED " in listed[failed_line]
    assert listed[failed_line + 1].startswith("  ! failed: attempt 1 of 3 — artifact.record refused (invalid_metrics)")
    calm = next(line for line in listed if line.startswith("calm "))
    assert " new " in calm and "FAILED" not in calm
    rows = {r["quest_id"]: r for r in json.loads(ds(home, "quest", "list", "--json").stdout)}
    assert rows["q1"]["health"]["failure"] == FAILURE and rows["q1"]["health"]["since_seq"] == held.seq
    assert rows["calm"]["health"]["state"] == "new" and set(rows["calm"]["health"]) == KEYS
    shown = json.loads(ds(home, "quest", "show", "q1", "--json").stdout)
    assert shown["health"] == rows["q1"]["health"]
    text = ds(home, "quest", "show", "q1").stdout
    assert "health:  failed: attempt 1 of 3" in text
    assert "failure: deterministic refused_call in artifact.record call call-3: invalid_metrics" in text
