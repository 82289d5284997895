"""Honest retries with the scripted runner: real agent processes, real MCP servers,
real shell sessions, the real log. A refused call is not retried blindly (the quest is
``failed`` and waits for the user); a transient failure is retried without repeating
what the failed attempt finished (the shell job it started, the calls it made); the
retry's prompt says what that attempt did."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from ds_events.home import Home, Quest
from ds_events.runners import scheduler_for
from ds_events.services import bash as bash_service, quest as quest_service
from ds_events.services.bash.commands import KillSession
from tests.helpers import DS, ds_env

pytestmark = pytest.mark.slow

REFUSED_RECORD = {"call": "artifact.record", "args": {"payload": {"kind": "no-such-kind", "title": "x"}}}


def trajectory(path: Path, *turn_steps: list[dict]) -> str:
    path.write_text(yaml.safe_dump({"turns": [{"steps": steps} for steps in turn_steps]}))
    return str(path)


def configure(home: Home, **runner: object) -> None:
    home.config_path.write_text(yaml.safe_dump({"runner": {"backoff_seconds": 0.2, **runner}}))


def run(quest: Quest, traj: str) -> list:
    return asyncio.run(scheduler_for(quest, runner="scripted", trajectory=traj).run_until_idle())


def events(quest: Quest, kind: str) -> list:
    return [e for e in quest.log.read() if e.type == kind]


def ds_json(home: Home, *args: str) -> dict:
    done = subprocess.run([*DS, *args, "--json"], env=ds_env(home), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(autouse=True)
def _no_session_outlives_its_test(home: Home):
    yield
    for quest_id in home.quest_ids():
        with home.open_quest(quest_id, actor="test-cleanup") as quest:
            for session in quest.state("bash_sessions").sessions.values():
                if session.status == "running":
                    bash_service.kill(quest, KillSession(id=session.id, force=True, reason="test_cleanup"))


def test_a_refused_call_is_held_for_the_user_not_retried_and_resume_runs_it_again(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, max_attempts=3)
    path = tmp_path / "trajectory.yaml"
    traj = trajectory(path, [{"say": "recording the idea"}, REFUSED_RECORD, {"say": "recorded"}])
    quest_service.post_message(quest, quest_service.PostMessage(text="go"))
    finished = run(quest, traj)
    assert [f.outcome for f in finished] == ["failed"]  # one attempt: no blind retry
    assert events(quest, "runner.turn_retry_scheduled") == []
    (held,) = events(quest, "runner.turn_held")
    f = held.failure
    assert (f.failure_class, f.cause, f.tool, f.call_id) == ("deterministic", "refused_call", "artifact.record", "call-2")
    assert f.error  # our server's error code for the refusal
    health = ds_json(quest.home, "quest", "show", quest.id)["health"]
    assert health["state"] == "failed" and health["failure"]["tool"] == "artifact.record"
    assert health["summary"].startswith(f"failed: attempt 1 of 3 — artifact.record refused ({f.error})")
    assert run(quest, traj) == []  # nothing runs again by itself
    # The user fixes what was wrong (here: the script) and resumes: the held turn runs again.
    trajectory(path, [{"say": "recording the idea"}, {**REFUSED_RECORD, "expect": "any"}, {"say": "recorded"}])
    subprocess.run([*DS, "control", quest.id, "resume"], env=ds_env(quest.home), check=True, capture_output=True, timeout=120)
    again = run(quest, traj)
    assert [f.outcome for f in again] == ["completed"]
    second = events(quest, "runner.turn_started")[-1]
    assert (second.retry_of, second.attempt) == (finished[0].run_id, 1)
    # It resumed after the step the failed attempt completed: "recording the idea" once.
    said = [e.text for e in events(quest, "runner.agent_message")]
    assert said == ["recording the idea", "recorded"]
    assert ds_json(quest.home, "quest", "show", quest.id)["health"]["state"] == "idle"


def test_a_message_to_a_held_turn_runs_it_again_with_the_message(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, max_attempts=3)
    traj = trajectory(tmp_path / "t.yaml", [REFUSED_RECORD])
    quest_service.post_message(quest, quest_service.PostMessage(text="first"))
    run(quest, traj)
    assert len(events(quest, "runner.turn_held")) == 1
    quest_service.post_message(quest, quest_service.PostMessage(text="use kind idea"))
    run(quest, traj)
    first, second = events(quest, "runner.turn_started")
    assert second.retry_of == first.run_id and len(second.message_ids) == 2  # the old message and the new one
    assert len(events(quest, "runner.turn_held")) == 2  # the script still fails: held again, not retried


def test_a_transient_failure_after_a_shell_job_is_retried_without_starting_the_job_again(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, max_attempts=3)
    traj = trajectory(
        tmp_path / "t.yaml",
        [{"say": "starting the job"},
         {"call": "bash_exec.bash_exec", "args": {"command": "echo epoch 1 done", "mode": "await", "idempotency_key": "train",
                                                   "wait_timeout_seconds": 30}, "save": "job"},
         {"fail": "stream disconnected before completion: error sending request", "attempts": 1},
         {"call": "bash_exec.bash_exec", "args": {"mode": "read", "id": "{{job.bash_id}}"}, "save": "out"},
         {"say": "job {{job.bash_id}} said: {{out.log}}"}],
    )  # fmt: skip
    quest_service.post_message(quest, quest_service.PostMessage(text="train"))
    finished = run(quest, traj)
    assert [f.outcome for f in finished] == ["failed", "completed"]
    (retry,) = events(quest, "runner.turn_retry_scheduled")
    assert retry.failure is not None and (retry.failure.failure_class, retry.failure.cause) == ("transient", "provider_unreachable")
    sessions = quest.state("bash_sessions").sessions
    assert len(sessions) == 1  # the retry did not start a second session
    (session,) = sessions.values()
    said = [e.text for e in events(quest, "runner.agent_message")]
    assert said == ["starting the job", f"job {session.id} said: epoch 1 done"]
    # The retry's prompt told the agent what the failed attempt did.
    started = events(quest, "runner.turn_started")[1]
    prompt = (quest.root / started.prompt_path).read_text()
    assert f"attempt 2 of a turn whose previous attempt ({finished[0].run_id}) ended failed" in prompt
    assert "`bash_exec.bash_exec` (call-2) ok" in prompt
    assert f"started bash session `{session.id}` (completed, exit 0)" in prompt


def test_a_retry_that_runs_the_same_start_again_gets_the_existing_session(quest: Quest, tmp_path: Path) -> None:
    """Without the resume (a real agent redoes its step), the idempotency key is what keeps
    the job from running twice: the same start returns the session the first attempt made."""
    configure(quest.home, max_attempts=3)
    start = {"call": "bash_exec.bash_exec", "args": {"command": "echo once", "mode": "detach", "idempotency_key": "job-1"},
             "save": "job"}  # fmt: skip
    traj = trajectory(tmp_path / "t.yaml", [{"say": "go"}, start, {"fail": "503 Service Unavailable", "attempts": 1}])
    quest_service.post_message(quest, quest_service.PostMessage(text="go"))
    run(quest, traj)
    with quest.home.open_quest(quest.id, actor="agent-redo") as q:  # the redone step, as the agent's server gets it
        from ds_events.services.bash.commands import BashExec
        from ds_events.services.bash.tool import bash_exec

        redo = asyncio.run(bash_exec(q, BashExec(command="echo once", mode="detach", idempotency_key="job-1")))
    assert redo.reused is True and len(quest.state("bash_sessions").sessions) == 1
