"""A session recorded as ended has no process left in its group, zombie or not.

The monitor is a child subreaper: the command and every orphaned descendant end up as
its children, so every zombie of the group is the monitor's to reap, and it must have
reaped them all before it records the end. These tests build the two situations that
used to break that rule, deterministically, with real processes.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest

from .support import bash_events, group_is_gone, process_state, session_of, start, wait_until, waits_on_a_lock


def _ended(quest, session_id):
    return any(e.type in ("bash.session_exited", "bash.session_lost") for e in bash_events(quest, session_id))


@pytest.mark.slow
def test_a_member_that_dies_while_the_monitor_waits_on_the_log_is_reaped_before_the_end_is_recorded(home, quest):
    # The member ignores TERM (the monitor's first stop) and HUP (sent when the leader,
    # which controls the terminal, exits). The second progress report is due 2 s after
    # the first: by then the leader has exited and been reaped, and the monitor blocks on the log's lock (which
    # this test holds) between reaping and deciding the session is over. The last member
    # of the group dies while it waits, and is a zombie when the monitor goes on.
    (home.root / "config.yaml").write_text("bash_exec:\n  progress_interval_seconds: 2\n  kill_grace_seconds: 30\n")
    gate = quest.root / "gate"
    command = (
        "trap '' TERM HUP; sleep 300 >/dev/null 2>&1 </dev/null & echo \"member $!\"; "
        "echo '__DS_PROGRESS__ {\"n\": 1}'; "
        f"while [ ! -f {gate} ]; do sleep 0.01; done; echo '__DS_PROGRESS__ {{\"n\": 2}}'"
    )
    session = start(quest, command)
    wait_until(lambda: session_of(quest, session.id).progress == {"n": 1}, what="the first report")
    member = int((quest.root / session.log_path).read_text().split("member ")[1].split()[0])
    with quest.transaction():
        gate.write_text("go")
        wait_until(lambda: waits_on_a_lock(session.monitor_pid), what="the monitor to wait on the log")
        os.kill(member, signal.SIGKILL)
        wait_until(lambda: process_state(member) == "Z", what="the member to become a zombie")
    wait_until(lambda: _ended(quest, session.id), poll=0.001, what="the end to be recorded")
    assert group_is_gone(session.pgid)
    assert session_of(quest, session.id).status == "completed"


def test_a_process_whose_main_thread_exited_is_not_taken_for_a_zombie(quest, tmp_path):
    # /proc shows such a process as "Z" while its other threads run on: the session is
    # not over until it is stopped and reaped too.
    script = tmp_path / "threads.py"
    script.write_text(
        "import ctypes, signal, threading, time\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)  # outlive the leader's terminal\n"
        "threading.Thread(target=time.sleep, args=(300,)).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)\n"
    )
    # The leader exits once /proc shows its child as "Z": only that process is left.
    session = start(
        quest,
        f"{sys.executable} {script} & "
        "while [ \"$(cut -d' ' -f3 /proc/$!/stat)\" != Z ]; do sleep 0.01; done; echo \"member $!\"",
    )
    wait_until(lambda: _ended(quest, session.id), timeout=30, poll=0.001, what="the end to be recorded")
    member = int((quest.root / session.log_path).read_text().split("member ")[1].split()[0])
    assert group_is_gone(session.pgid)
    assert process_state(member) is None


FOREIGN_PARENT = """
import os, sys, time
child = os.fork()
if child == 0:
    os._exit(0)  # a zombie in the session's group, which only its parent may reap
os.setpgid(0, 0)  # the parent leaves the group and never reaps it
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child}")
os.replace(sys.argv[1] + ".tmp", sys.argv[1])  # seen whole or not at all
time.sleep(300)
"""


@pytest.mark.slow
def test_a_zombie_only_its_parent_outside_the_group_may_reap_does_not_hold_the_end_for_ever(quest, tmp_path):
    script = tmp_path / "foreign.py"
    script.write_text(FOREIGN_PARENT)
    pids = tmp_path / "pids"
    # The leader exits once the parent has left the group: only the zombie is left in it.
    session = start(quest, f"{sys.executable} {script} {pids} & while [ ! -s {pids} ]; do sleep 0.01; done")
    wait_until(pids.exists, what="the parent to leave the group")
    parent, zombie = map(int, pids.read_text().split())
    try:
        wait_until(lambda: _ended(quest, session.id), timeout=30, what="the end to be recorded")
        assert session_of(quest, session.id).status == "completed"
        monitor_log = (quest.root / ".ds" / "bash_exec" / session.id / "monitor.log").read_text()
        assert "zombies of other parents" in monitor_log and str(zombie) in monitor_log
    finally:
        os.kill(parent, signal.SIGKILL)
