"""Sessions outlive the processes that started them; dead ones are found; replay rebuilds.

These start real processes: ``ds mcp --namespace bash_exec`` over stdio, monitors,
commands, and concurrent reconcilers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import mcp
import pytest

from ds_events.bash import procs
from ds_events.cli import main as ds_main
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering
from tests.helpers import DS, ds_env

from .support import bash_events, call, client_for, group_is_gone, session_of, start, wait_until

RECONCILER = """
import os, sys, time
from pathlib import Path
from ds_events.home import Home
from ds_events.services.bash.sessions import reconcile
gate = Path(sys.argv[1])
with Home().open_quest("q1", actor="racer") as q:
    q.state("bash_sessions")
    (gate.parent / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.001)  # polls the gate file, bounded by the deadline
    reconcile(q)
"""


def stdio_client(home):
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "ds_events", "mcp", "--namespace", "bash_exec"],
        env=ds_env(home, DS_QUEST_ID="q1"),
    )
    return mcp.Client(params)


def parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        raw = f.read()
    return int(raw[raw.rfind(b")") + 2 :].split()[1])


@pytest.mark.slow
async def test_a_session_outlives_the_mcp_server_that_started_it_and_a_new_server_sees_it(home, quest):
    gate = quest.root / "gate"
    async with stdio_client(home) as first:
        waiting = await call(first, command=f"echo started; while [ ! -f {gate} ]; do sleep 0.05; done; echo finished; exit 3")
        sleeper = await call(first, command="echo sleeping; sleep 300")
        server_pid = parent_pid(waiting["session"]["monitor_pid"])
    wait_until(lambda: not procs.is_alive(server_pid), what="the first MCP server to exit")
    for s in (waiting, sleeper):
        assert procs.is_alive(s["session"]["monitor_pid"], s["session"]["monitor_start_time"])
        assert procs.is_alive(s["session"]["pid"], s["session"]["start_time"])

    async with stdio_client(home) as second:
        listed = await call(second, mode="list")
        assert {s["bash_id"] for s in listed["items"]} == {waiting["id"], sleeper["id"]}
        gate.write_text("go")
        done = await call(second, mode="await", id=waiting["id"], wait_timeout_seconds=30)
        killed = await call(second, mode="kill", id=sleeper["id"], wait=True)
    assert (done["status"], done["session"]["exit_code"]) == ("failed", 3)
    assert done["log"].splitlines() == ["started", "finished"]
    assert killed["status"] == "terminated" and group_is_gone(killed["session"]["pgid"])
    assert not any(e.type == "bash.session_lost" for e in bash_events(quest))


@pytest.mark.slow
def test_a_session_whose_monitor_died_unseen_is_marked_lost_exactly_once(home, quest):
    session = start(quest, "trap '' HUP; echo up; exec sleep 300")
    # "up" is printed after the trap is set: from then on, losing the terminal is survivable.
    wait_until(lambda: "up" in (quest.root / session.log_path).read_text(), what="the trap to be set")
    os.kill(session.monitor_pid, signal.SIGKILL)
    wait_until(lambda: not procs.is_alive(session.monitor_pid, session.monitor_start_time), what="the monitor to die")
    assert procs.group_alive(session.pgid)  # nobody supervises it now

    # Three processes reconcile at the same moment (released by a gate file), then two
    # `ds bash list` (which reconcile too) look.
    gate = quest.root / "gate"
    racers = [subprocess.Popen([sys.executable, "-c", RECONCILER, str(gate)], env=ds_env(home)) for _ in range(3)]
    wait_until(lambda: len(list(quest.root.glob("ready-*"))) == 3, timeout=60, what="the reconcilers to be ready")
    gate.write_text("go")
    assert [p.wait(timeout=60) for p in racers] == [0, 0, 0]
    listers = [subprocess.Popen([*DS, "bash", "list", "q1", "--json"], env=ds_env(home), stdout=subprocess.PIPE)
               for _ in range(2)]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in listers]

    lost = [e for e in bash_events(quest, session.id) if e.type in ("bash.session_lost", "bash.session_exited")]
    assert len(lost) == 1 and lost[0].type == "bash.session_lost" and lost[0].group_alive is True
    assert session_of(quest, session.id).status == "lost"
    assert all(o["counts"]["lost"] == 1 and o["sessions"] == [] for o in outputs)
    wait_until(lambda: group_is_gone(session.pgid), what="the orphaned group to be killed and reaped")


def test_a_monitor_not_told_to_go_kills_the_command_and_records_nothing(quest, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "ds_events.bash_monitor"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, start_new_session=True)
    spec = {"quest_root": str(quest.root), "session_id": "bx-nogo", "command": "sleep 300 & sleep 300 & wait", "workdir": str(tmp_path),
            "env": dict(os.environ), "timeout_seconds": None, "grace_seconds": 1, "log_path": str(tmp_path / "o.log")}
    proc.stdin.write(json.dumps(spec).encode() + b"\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    assert answer["ok"] and procs.group_alive(answer["pgid"])
    proc.stdin.close()  # the service "died" before recording the start
    assert proc.wait(timeout=30) == 1
    proc.stdout.close()
    assert group_is_gone(answer["pgid"])  # killed and reaped by the monitor before it exits
    assert bash_events(quest) == []


@pytest.mark.slow
async def test_replay_rebuilds_the_session_list_byte_for_byte(home, quest, capsys):
    async with client_for(quest) as c:
        await call(c, command="echo '__DS_PROGRESS__ {\"pct\": 100}'", mode="await", wait_timeout_seconds=20)
        await call(c, command="exit 2", mode="await", wait_timeout_seconds=20)
        running = await call(c, command="sleep 300", mode="detach")
        await call(c, mode="kill", id=running["id"], wait=True)
        history = await call(c, mode="history")
    sessions_file = quest.root / ".ds" / "bash_exec" / "sessions.json"
    # Files are materialised just after the append that changes them: the monitor that
    # recorded the last exit may still be writing.
    wait_until(lambda: json.loads(sessions_file.read_bytes())["counts"] == history["counts"], what="the file")
    original = sessions_file.read_bytes()
    state = quest.state("bash_sessions")
    assert [s["id"] for s in json.loads(original)["sessions"]][::-1] == [s["id"] for s in history["items"]]
    sessions_file.unlink()
    for snap in (quest.root / ".ds" / "snapshots").glob("*.json"):
        snap.unlink()

    with pytest.raises(SystemExit) as exit_info:
        ds_main(["replay", "q1"])
    assert exit_info.value.code == 0
    assert sessions_file.read_bytes() == original
    with pytest.raises(SystemExit):
        ds_main(["replay", "q1"])
    assert sessions_file.read_bytes() == original
    with home.open_quest("q1") as reopened:
        assert reopened.state("bash_sessions") == state
    assert "sessions.json" in capsys.readouterr().out


@pytest.mark.slow
async def test_pausing_or_stopping_the_quest_kills_its_running_sessions(quest):
    first = start(quest, "sleep 300")
    second = start(quest, "sleep 300")
    steering.control(quest, quest_service.Control(action="pause", reason="review"))
    wait_until(lambda: session_of(quest, first.id).status != "running", what="the first session to end")
    wait_until(lambda: session_of(quest, second.id).status != "running", what="the second session to end")
    for s in (first, second):
        ended = session_of(quest, s.id)
        assert (ended.status, ended.reason) == ("terminated", "quest_pause")
        assert group_is_gone(s.pgid)
    steering.control(quest, quest_service.Control(action="resume"))
    third = start(quest, "sleep 300")
    steering.control(quest, quest_service.Control(action="stop"))
    wait_until(lambda: session_of(quest, third.id).status != "running", what="the third session to end")
    assert session_of(quest, third.id).reason == "quest_stop"


@pytest.mark.slow
async def test_a_new_server_marks_sessions_that_died_while_no_server_ran_before_any_call(quest):
    session = start(quest, "echo up; sleep 300")
    os.kill(session.monitor_pid, signal.SIGKILL)
    wait_until(lambda: not procs.is_alive(session.monitor_pid, session.monitor_start_time), what="the monitor to die")
    assert session_of(quest, session.id).status == "running"  # nobody has looked yet
    async with client_for(quest):
        # The server reconciles as it opens the quest, in the background: no call asks it to.
        wait_until(lambda: any(e.type == "bash.session_lost" for e in bash_events(quest, session.id)),
                   what="the server to mark the session lost")
        lost = [e for e in bash_events(quest, session.id) if e.type == "bash.session_lost"]
    assert len(lost) == 1 and lost[0].actor == "mcp:bash_exec"
    wait_until(lambda: group_is_gone(session.pgid), what="the group to be gone")


def test_a_monitor_told_to_terminate_stops_its_session_and_records_why(quest):
    session = start(quest, "echo up; sleep 300")
    os.kill(session.monitor_pid, signal.SIGTERM)
    wait_until(lambda: session_of(quest, session.id).status != "running", what="the session to end")
    ended = session_of(quest, session.id)
    assert (ended.status, ended.reason, ended.signal) == ("terminated", "monitor_signal", "SIGTERM")
    assert group_is_gone(session.pgid)
