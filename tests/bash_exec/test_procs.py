"""Process and group probes on real processes: a zombie is not alive but still exists."""

from __future__ import annotations

import os
import subprocess
import sys

from ds_events.bash import procs

from .support import process_state, wait_until

THREADS = """
import ctypes, sys, threading, time
threading.Thread(target=time.sleep, args=(300,), daemon=False).start()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)  # the main thread ends, the other one runs on
"""


def test_a_zombie_keeps_its_group_existing_but_not_alive_until_it_is_reaped():
    child = subprocess.Popen(["true"], start_new_session=True)
    wait_until(lambda: process_state(child.pid) == "Z", what="the child to become a zombie")
    assert procs.group_exists(child.pid) and procs.group_members(child.pid) == [child.pid]
    assert not procs.group_alive(child.pid) and not procs.is_alive(child.pid)
    child.wait()
    assert not procs.group_exists(child.pid) and procs.group_members(child.pid) == []


def test_a_process_whose_main_thread_ended_is_alive_though_proc_says_zombie():
    child = subprocess.Popen([sys.executable, "-c", THREADS], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        wait_until(lambda: process_state(child.pid) == "Z", what="the main thread to end")
        assert procs.is_alive(child.pid) and procs.group_alive(child.pid)
    finally:
        os.killpg(child.pid, 9)
        child.wait()
        child.stdout.close()
