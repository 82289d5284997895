"""Starting a bash_exec session, against raw baselines measured in the same run.

Two comparisons, each interleaved round by round so both sides see the same load:

1. The monitor's start: spawn ``python -m ds_events.bash_monitor``, send the spec, and
   read its handshake (the command is then running under a PTY in its own group),
   against a bare ``python3 -c pass`` run to completion. Target: within 3x.
2. A whole detached start (``bash_exec.start``: validate, spawn the monitor, handshake,
   append ``bash.session_started`` durably, tell the monitor to go) against a plain
   ``subprocess.Popen`` of the same command.

Every figure is the median of ``--rounds`` rounds (default 20) with its spread (min and
max, and the 10th-90th percentiles). Run from the repository root:

    PYTHONPATH=$PWD python3 bench/bash_start.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _util import verdict

from ds_events.bash.spawn import spawn_monitor
from ds_events.home import Home
from ds_events.services import bash as service
from ds_events.services.bash.commands import GetSession, StartSession

COMMAND = "sleep 0.2"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        os.environ["DS_HOME"] = tmp
        home = Home(tmp)
        home.init()
        with home.create_quest("bench", quest_id="bench") as quest:
            monitor, bare = _monitor_vs_bare_python(quest, rounds)
            session, popen = _session_vs_popen(quest, rounds)
    print(f"rounds: {rounds} (medians; spread as [min | p10-p90 | max])")
    _line("python3 -c pass (raw baseline)", bare)
    _line("monitor start (spawn to handshake)", monitor)
    ratios = [m / b for m, b in zip(monitor, bare, strict=False)]
    ratio = statistics.median(monitor) / statistics.median(bare)
    print(f"  ratio monitor / python3 -c pass: {ratio:.2f}x, per round {_spread(ratios, 'x', 1.0)}"
          f"  ({verdict(ratio, 3.0, higher_is_better=False)})")
    _line("subprocess.Popen (raw baseline)", popen)
    _line("bash_exec detached start", session)
    ratios = [s / p for s, p in zip(session, popen, strict=False)]
    ratio = statistics.median(session) / statistics.median(popen)
    print(f"  ratio session / Popen: {ratio:.1f}x, per round {_spread(ratios, 'x', 1.0)}")


def _monitor_vs_bare_python(quest, rounds: int) -> tuple[list[float], list[float]]:
    monitor, bare = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append(time.perf_counter() - t0)
        spec = service.prepare_start(quest, StartSession(command=COMMAND))  # validation is not the monitor's cost
        t0 = time.perf_counter()
        handle = spawn_monitor(spec)
        monitor.append(time.perf_counter() - t0)
        handle.abort()  # nothing was recorded: the monitor kills the command and exits
        handle.proc.wait(timeout=30)
    return monitor, bare


def _session_vs_popen(quest, rounds: int) -> tuple[list[float], list[float]]:
    session, popen, procs, started = [], [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        procs.append(subprocess.Popen(["bash", "-c", COMMAND], start_new_session=True))
        popen.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        started.append(service.start(quest, StartSession(command=COMMAND)))
        session.append(time.perf_counter() - t0)
    for p in procs:
        p.wait()
    deadline = time.monotonic() + 60
    while any(service.get_session(quest, GetSession(id=s.id)).status == "running" for s in started):
        if time.monotonic() > deadline:
            raise SystemExit("sessions did not end")
        time.sleep(0.05)
    assert all(service.get_session(quest, GetSession(id=s.id)).status == "completed" for s in started)
    return session, popen


def _line(label: str, seconds: list[float]) -> None:
    print(f"{label:38s} median {statistics.median(seconds) * 1e3:8.2f} ms  {_spread(seconds, ' ms', 1e3)}")


def _spread(values: list[float], unit: str, scale: float) -> str:
    ordered = sorted(values)
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] * scale

    return f"[{ordered[0] * scale:.2f} | {at(0.1):.2f}-{at(0.9):.2f} | {ordered[-1] * scale:.2f}]{unit}"


if __name__ == "__main__":
    main()
