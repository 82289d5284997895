"""The scheduler with the scripted runner: real agent processes (their own process
groups), the real MCP servers (served by the host over HTTP, the default transport),
the real log. What a user of ``ds run`` / ``ds serve`` relies on: one turn at a time,
messages delivered once, pause/stop/stall/crash end a turn once with the right outcome,
failed turns retried with a bound."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from ds_events.bash import procs
from ds_events.errors import Invalid
from ds_events.home import Home, Quest
from ds_events.runners import make_runner, scheduler_for
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering, turns as turns
from ds_events.services.runtime.commands import Action
from projections import interactions as mailbox
from tests.helpers import DS, ds_env, wait_until

pytestmark = pytest.mark.slow


def trajectory(tmp_path: Path, *turn_steps: list[dict]) -> str:
    path = tmp_path / "trajectory.yaml"
    path.write_text(yaml.safe_dump({"turns": [{"steps": steps} for steps in turn_steps]}))
    return str(path)


def configure(home: Home, **runner: object) -> None:
    home.config_path.write_text(yaml.safe_dump({"runner": runner}))


def message(quest: Quest, text: str) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text=text))


def run(quest: Quest, traj: str, **kw: object) -> list:
    return asyncio.run(scheduler_for(quest, runner="scripted", trajectory=traj).run_until_idle(**kw))


def turn_events(quest: Quest) -> list:
    return [e for e in quest.log.read() if e.type.startswith("runner.")]


def test_a_message_starts_a_turn_that_delivers_it_once(quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(
        tmp_path,
        [{"say": "hello"}, {"call": "artifact.interact", "args": {"message": "working"}, "save": "r"},
         {"say": "new: {{r.recent_inbound_messages}}"}],
    )  # fmt: skip
    message(quest, "please scout")
    finished = run(quest, traj)
    assert [f.outcome for f in finished] == ["completed"]
    events = turn_events(quest)
    started = next(e for e in events if e.type == "runner.turn_started")
    assert started.skill == "scout" and len(started.message_ids) == 1
    # The turn's prompt carried the message; interact then had nothing new to give.
    said = [e.text for e in events if e.type == "runner.agent_message"]
    assert said == ["hello", "new: []"]
    assert mailbox.pending_items(quest.state("interactions")) == []
    prompt = (quest.root / started.prompt_path).read_text()
    assert "please scout" in prompt
    import hashlib

    assert hashlib.sha256(prompt.encode()).hexdigest() == started.prompt_sha256
    # What the agent's MCP servers appended belongs to the turn.
    own = [e for e in quest.log.read() if e.actor == "mcp:artifact"]
    assert own and all(e.run_id == started.run_id for e in own)
    shown = subprocess.run([*DS, "quest", "show", quest.id], env=ds_env(quest.home), capture_output=True, text=True)
    assert "turns:   1 (1 completed)" in shown.stdout, shown.stdout + shown.stderr
    # Idle now: another run starts nothing.
    assert run(quest, traj) == []


def test_a_message_while_a_turn_runs_is_queued_and_reaches_the_agent_through_interact(
    quest: Quest, tmp_path: Path
) -> None:
    traj = trajectory(
        tmp_path,
        [{"call": "artifact.interact", "args": {"message": "started"}},
         {"sleep": 1.5},
         {"call": "artifact.interact", "args": {"message": "anything new?"}, "save": "r"},
         {"say": "got {{r.recent_inbound_messages}}"}],
    )  # fmt: skip
    message(quest, "first")

    def later() -> None:
        q = Quest(quest.home, quest.id)
        try:
            # After the agent's first interact, during its sleep.
            wait_until(lambda: any(e.type == "interaction.sent" for e in q.log.read()), what="first interact")
            message(q, "second, mid-turn")
        finally:
            q.close()

    t = threading.Thread(target=later)
    t.start()
    finished = run(quest, traj)
    t.join()
    assert [f.outcome for f in finished] == ["completed"], "one turn only: the mid-turn message did not start a second"
    said = [e.text for e in turn_events(quest) if e.type == "runner.agent_message"]
    assert len(said) == 1 and "second, mid-turn" in said[0]
    deliveries = [e for e in quest.log.read() if e.type == "mailbox.delivered"]
    assert [d.consumer.split(":")[0] for d in deliveries] == ["turn", "mcp"]  # once each: the turn, then interact
    assert mailbox.pending_items(quest.state("interactions")) == []


def test_two_hosts_never_run_two_turns_at_once(quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(tmp_path, [{"sleep": 0.8}, {"say": "done"}])
    message(quest, "go")

    async def both() -> list:
        other = Quest(quest.home, quest.id, actor="scheduler")
        try:
            a = scheduler_for(quest, runner="scripted", trajectory=traj)
            b = scheduler_for(other, runner="scripted", trajectory=traj)
            return await asyncio.gather(a.run_until_idle(), b.run_until_idle())
        finally:
            other.close()

    results = asyncio.run(both())
    assert sorted(len(r) for r in results) == [0, 1]
    started = [e for e in quest.log.read() if e.type == "runner.turn_started"]
    assert len(started) == 1


def _bash_step(marker: Path) -> dict:
    return {"call": "bash_exec.bash_exec", "args": {"command": f"touch {marker}; sleep 300", "mode": "detach"}}


@pytest.mark.parametrize(("action", "outcome"), [("pause", "interrupted"), ("stop", "cancelled")])
def test_pause_and_stop_end_the_runner_group_and_the_bash_sessions(
    quest: Quest, tmp_path: Path, action: str, outcome: str
) -> None:
    marker = tmp_path / "started"
    traj = trajectory(tmp_path, [_bash_step(marker), {"sleep": 300}], [{"say": "continuing"}])
    configure(quest.home, kill_grace_seconds=1)
    message(quest, "run an experiment")

    def control() -> None:
        q = Quest(quest.home, quest.id)
        try:
            wait_until(lambda: marker.exists() and q.state("bash_sessions").sessions, what="bash session running")
            steering.control(q, quest_service.Control(action=action, reason="by the test"))
        finally:
            q.close()

    t = threading.Thread(target=control)
    t.start()
    finished = run(quest, traj)
    t.join()
    assert [(f.outcome, f.reason) for f in finished] == [(outcome, "paused" if action == "pause" else "stopped")]
    record = quest.state("turns").turns[finished[0].run_id]
    assert record.pgid is not None and not procs.group_exists(record.pgid)
    # The sessions were told to end (TERM, then KILL); their monitors record the ends.
    wait_until(lambda: all(s.status != "running" for s in quest.state("bash_sessions").sessions.values()),
               what="the quest's bash sessions ended")  # fmt: skip
    sessions = quest.state("bash_sessions").sessions.values()
    assert sessions and all(s.kill_reason == f"quest_{action}" for s in sessions)
    for s in sessions:
        assert not procs.group_exists(s.pgid)
    # Resume: a paused turn is continued without a new message; a stopped one is not.
    steering.control(quest, quest_service.Control(action="resume"))
    after = run(quest, traj)
    if action == "pause":
        assert [f.outcome for f in after] == ["completed"]
        prompt = Path(quest.root / quest.state("turns").turns[after[0].run_id].prompt_path).read_text()
        assert "cut off" in prompt and "No new message" in prompt
    else:
        assert after == []


def test_a_silent_runner_is_ended_as_stalled_and_retried_with_a_bound(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, stall_seconds=1, max_attempts=2, backoff_seconds=0.2, kill_grace_seconds=1)
    traj = trajectory(tmp_path, [{"say": "thinking hard"}, {"sleep": 300}])
    message(quest, "go")
    finished = run(quest, traj)
    assert [f.outcome for f in finished] == ["stalled", "stalled"]
    retries = [e for e in quest.log.read() if e.type == "runner.turn_retry_scheduled"]
    assert [(r.attempt, r.delay_s) for r in retries] == [(2, 0.2)]  # bounded: 2 attempts in all
    state = quest.state("turns")
    second = state.turns[finished[1].run_id]
    assert second.attempt == 2 and second.retry_of == finished[0].run_id
    assert second.message_ids == state.turns[finished[0].run_id].message_ids  # the retry carries the message
    for f in finished:
        assert not procs.group_exists(state.turns[f.run_id].pgid)


class SlowStart:
    """The scripted runner with a start slower than the stall watch (a loaded machine, a
    host starting its MCP listener first): it starts its agent only once it has been
    asked to stop."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.asked = asyncio.Event()

    async def run(self, spec: Any, recorder: Any) -> Any:
        await self.asked.wait()
        return await self.inner.run(spec, recorder)

    async def interrupt(self) -> None:
        self.asked.set()
        await self.inner.interrupt()


def test_a_stall_that_comes_while_the_agent_is_still_starting_ends_the_agent_once_it_runs(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, stall_seconds=0.2, max_attempts=1, kill_grace_seconds=1)
    traj = trajectory(tmp_path, [{"say": "thinking hard"}, {"sleep": 300}])
    message(quest, "go")
    scheduler = scheduler_for(quest, runner="scripted", trajectory=traj)
    build = scheduler.make_runner
    scheduler.make_runner = lambda name: SlowStart(build(name))
    # Without the second signal the agent sleeps its 300 s out; 120 s bounds the wait.
    finished = asyncio.run(asyncio.wait_for(scheduler.run_until_idle(), timeout=120))
    assert [f.outcome for f in finished] == ["stalled"]
    record = quest.state("turns").turns[finished[0].run_id]
    assert record.pgid is not None and not procs.group_exists(record.pgid)


def test_a_failed_turn_is_retried_after_a_backoff_and_then_succeeds(quest: Quest, tmp_path: Path) -> None:
    configure(quest.home, max_attempts=3, backoff_seconds=0.3)
    traj = trajectory(tmp_path, [{"say": "trying"}, {"fail": "model API down", "attempts": 1}, {"say": "worked"}])
    message(quest, "go")
    finished = run(quest, traj)
    assert [f.outcome for f in finished] == ["failed", "completed"]
    assert "model API down" in finished[0].reason and finished[0].exit_code == 1
    events = quest.log.read()
    retry = next(e for e in events if e.type == "runner.turn_retry_scheduled")
    second_start = [e for e in events if e.type == "runner.turn_started"][1]
    assert second_start.attempt == 2 and second_start.seq > retry.seq


def test_a_turn_cut_off_by_a_crash_is_recorded_interrupted_once(quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(tmp_path, [{"say": "working"}, {"sleep": 300}], [{"say": "fresh turn"}])
    env = ds_env(quest.home)
    host = subprocess.Popen(
        [*DS, "run", quest.id, "--runner", "scripted", "--trajectory", traj, "--message", "go"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(
            lambda: quest.state("turns").turns and quest.state("turns").turns[quest.state("turns").running or ""].pgid, what="agent started"
        )
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    record = turns.view.running_turn(quest.state("turns"))
    assert record is not None and procs.group_alive(record.pgid), "the agent outlives its killed host"
    # Two processes recover at once: one interrupted record, the orphan agent killed.
    results: list = []

    def recover() -> None:
        with Quest(quest.home, quest.id, actor="scheduler") as q:
            results.append(turns.recover_turns(q, grace_seconds=1))

    threads = [threading.Thread(target=recover) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    interrupted = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert [(e.outcome, e.reason) for e in interrupted] == [("interrupted", "host_died")]
    assert sorted(len(r) for r in results) == [0, 1]
    # Nothing of the agent runs (its zombie, if any, is init's to reap: we are not its parent).
    assert not procs.group_alive(record.pgid)
    # The next message starts a fresh turn (a restarted `ds run`).
    message(quest, "next")
    out = subprocess.run(
        [*DS, "run", quest.id, "--runner", "scripted", "--trajectory", traj], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    finished = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert [e.outcome for e in finished] == ["interrupted", "completed"]
    assert len([e for e in quest.log.read() if e.type == "runner.turn_started"]) == 2


def test_a_live_hosts_turn_is_not_recovered(quest: Quest) -> None:
    message(quest, "go")
    spec = turns.claim_turn(
        quest, runner="scripted", model="", host=turns.Host.this_process(),
        build_prompt=lambda q, r: "prompt", action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    assert turns.recover_turns(quest) == []
    assert quest.state("turns").running == spec.run_id
    # A finished turn is finished once.
    assert turns.finish_turn(quest, spec.run_id, outcome="completed") is not None
    assert turns.finish_turn(quest, spec.run_id, outcome="failed") is None
    assert [e.outcome for e in quest.log.read() if e.type == "runner.turn_finished"] == ["completed"]


@pytest.mark.parametrize(
    ("anchor", "reply_to_blocking", "skill"),
    [
        ("scout", False, "scout"),
        ("experiment", False, "experiment"),
        ("analysis-campaign", False, "analysis-campaign"),
        ("decision", False, "decision"),
        ("experiment", True, "decision"),
    ],
)
def test_the_turn_uses_the_selected_skill(quest: Quest, anchor: str, reply_to_blocking: bool, skill: str) -> None:
    from ds_events.services.interactions import mailbox as inter

    quest_service.change_anchor(quest, quest_service.ChangeAnchor(anchor=anchor))
    if reply_to_blocking:
        sent = inter.interact(quest, inter.Interact(message="A or B?", kind="decision_request",
                                                    options=[{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]))
        inter.reply(quest, inter.Reply(interaction_id=sent.interaction_id, text="A"))
    else:
        message(quest, "carry on")
    spec = turns.claim_turn(
        quest, runner="scripted", model="", host=turns.Host.this_process(), build_prompt=turns.turn_prompt,
        action=Action(kind="start"),
    )  # fmt: skip
    chosen = spec.skill
    assert f"skill for this turn: `{skill}`" in Path(spec.prompt_path).read_text()
    assert chosen == skill


def test_bad_runner_and_bad_trajectory_are_refused_before_anything_runs(quest: Quest, tmp_path: Path) -> None:
    message(quest, "go")
    before = len(quest.log.read())
    with pytest.raises(Invalid) as err:
        scheduler_for(quest, runner="nope")
    assert err.value.code == "unknown_runner"
    bad = tmp_path / "bad.yaml"
    bad.write_text("turns: [{steps: [{say: hi, sleep: 1}]}]")
    with pytest.raises(Invalid) as err:
        scheduler_for(quest, runner="scripted", trajectory=str(bad))
    assert err.value.code == "bad_trajectory"
    with pytest.raises(Invalid) as err:
        make_runner("scripted", quest.home.config().runner, trajectory=str(tmp_path / "missing.yaml"))
    assert err.value.code == "bad_trajectory"
    assert len(quest.log.read()) == before
    out = subprocess.run([*DS, "run", quest.id, "--runner", "nope"], env=ds_env(quest.home), capture_output=True, text=True)
    assert out.returncode == 1 and "unknown runner 'nope'" in out.stderr
    with pytest.raises(Invalid) as err:
        turns.run_dir(quest, "../../etc")
    assert err.value.code == "invalid_run_id"


def test_the_quests_own_runner_and_model_run_its_turns(quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(tmp_path, [{"say": "scripted by the quest's setting"}])
    configure(quest.home, name="codex", trajectory=traj)  # the home says codex ...
    scheduler = scheduler_for(quest)
    quest_service.set_runner(quest, quest_service.SetRunner(runner="scripted", model="m-7"))  # ... the quest says scripted
    message(quest, "go")
    finished = asyncio.run(scheduler.run_until_idle())
    assert [f.outcome for f in finished] == ["completed"]
    started = next(e for e in quest.log.read() if e.type == "runner.turn_started")
    assert (started.runner, started.model) == ("scripted", "m-7")
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        quest_service.set_runner(quest, quest_service.SetRunner(runner="gpt"))
    assert err.value.code == "unknown_runner" and quest.log.last_seq == before
    out = subprocess.run([*DS, "quest", "set-runner", quest.id, "--runner", "gpt"], env=ds_env(quest.home), capture_output=True, text=True)
    assert out.returncode == 1 and "unknown runner 'gpt'" in out.stderr
