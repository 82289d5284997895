"""The monitor meets a full disk when it records progress or the exit: it keeps running,
says so in monitor.log, and the session still ends right (recorded late, or lost).

The disk is made full at the edge of the monitor process: ``full_disk_site`` (loaded by
the monitor through ``PYTHONPATH``) makes ``os.write`` to the quest log fail with ENOSPC
while a flag file exists. The test process itself writes normally.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ds_events.bash import procs
from ds_events.services import bash as service

from .support import bash_events, session_of, start, wait_until

SITE = Path(__file__).parent / "full_disk_site"


@pytest.fixture
def full_disk(monkeypatch, tmp_path) -> Path:
    """The flag file: while it exists, monitors started from now on cannot append."""
    flag = tmp_path / "disk-full"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SITE), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("DS_TEST_FULL_DISK", str(flag))
    return flag


def _monitor_log(quest, session) -> str:
    return (service.session_dir(quest, session.id) / "monitor.log").read_text()


def test_a_monitor_that_cannot_record_progress_or_the_exit_keeps_running_and_records_them_once_there_is_room(
    home, quest, full_disk
):
    (home.root / "config.yaml").write_text("bash_exec:\n  progress_interval_seconds: 0\n")
    gate = quest.root / "gate"
    full_disk.touch()
    session = start(quest, f"echo '__DS_PROGRESS__ {{\"step\": 1}}'; while [ ! -f {gate} ]; do sleep 0.02; done; echo done")

    wait_until(lambda: "progress of line 1 not recorded" in _monitor_log(quest, session), what="the failed report")
    assert "DiskFull" in _monitor_log(quest, session)
    full_disk.unlink()  # room again: the kept report is retried
    wait_until(lambda: session_of(quest, session.id).progress == {"step": 1}, what="the retried report")
    wait_until(lambda: "progress recorded again" in _monitor_log(quest, session), what="the note of the recovery")

    full_disk.touch()
    gate.touch()  # the command ends while the log cannot take the exit
    wait_until(lambda: "exit not recorded" in _monitor_log(quest, session), what="the failed exit")
    assert session_of(quest, session.id).status == "running"
    assert procs.is_alive(session.monitor_pid, session.monitor_start_time)  # retrying, not dead
    full_disk.unlink()
    wait_until(lambda: session_of(quest, session.id).status == "completed", what="the retried exit")
    wait_until(lambda: "exit recorded after" in _monitor_log(quest, session), what="the note of the late exit")
    assert [e.type for e in bash_events(quest, session.id)] == [
        "bash.session_started", "bash.progress", "bash.session_exited"
    ]
    assert "Traceback" not in _monitor_log(quest, session)


def test_an_exit_that_never_lands_is_given_up_after_the_retry_time_and_the_session_is_reconciled_as_lost(
    home, quest, full_disk
):
    (home.root / "config.yaml").write_text("bash_exec:\n  exit_retry_seconds: 0.5\n")
    full_disk.touch()
    session = start(quest, "echo '__DS_PROGRESS__ {\"step\": 1}'; echo bye")

    wait_until(lambda: "giving up" in _monitor_log(quest, session), what="the monitor to give up")
    wait_until(lambda: not procs.is_alive(session.monitor_pid, session.monitor_start_time), what="the monitor to end")
    log = _monitor_log(quest, session)
    assert "progress of line 1 not recorded" in log and "Traceback" not in log
    assert '"exit_code": 0' in log  # what could not be recorded is at least in monitor.log
    full_disk.unlink()
    service.reconcile(quest, only=[session.id])
    ended = session_of(quest, session.id)
    assert (ended.status, ended.reason) == ("lost", "monitor_gone")
    assert [e.type for e in bash_events(quest, session.id)] == ["bash.session_started", "bash.session_lost"]
