"""Starting a detached bash_exec session vs a plain ``subprocess.Popen`` of the same command.

A session start is: validate, spawn the monitor (a fresh Python process), start the
command under a PTY in its own group, handshake, append ``bash.session_started``
durably, tell the monitor to go. ``Popen`` only forks and execs. Both are timed until
the call returns with the command running.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time

from _util import verdict

from ds_events.home import Home
from ds_events.services import bash_exec as service

N = 20
COMMAND = "sleep 0.2"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DS_HOME"] = tmp
        home = Home(tmp)
        home.init()
        with home.create_quest("bench", quest_id="bench") as quest:
            popen, session = [], []
            procs = []
            started = []
            for _ in range(N):  # interleaved, so both see the same machine load
                t0 = time.perf_counter()
                procs.append(subprocess.Popen(["bash", "-c", COMMAND], start_new_session=True))
                popen.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                started.append(service.start(quest, COMMAND))
                session.append(time.perf_counter() - t0)
            for p in procs:
                p.wait()
            deadline = time.monotonic() + 60
            while any(service.get_session(quest, s.id).status == "running" for s in started):
                if time.monotonic() > deadline:
                    raise SystemExit("sessions did not end")
                time.sleep(0.05)
            assert all(service.get_session(quest, s.id).status == "completed" for s in started)
    p_med, s_med = statistics.median(popen), statistics.median(session)
    print(f"subprocess.Popen (raw baseline): median {p_med * 1e3:.2f} ms over {N}")
    print(f"bash_exec detached start:        median {s_med * 1e3:.2f} ms over {N} (p90 {sorted(session)[int(N * 0.9)] * 1e3:.1f} ms)")
    ratio = s_med / p_med
    print(f"ratio session/Popen: {ratio:.1f}x  ({verdict(ratio, 100.0, higher_is_better=False)})")


if __name__ == "__main__":
    main()
