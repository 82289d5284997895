"""The monitor starts the command having imported only what starting it needs.

Every session pays the monitor's start before its command runs, so until "go" the
monitor must not load the quest, the log or any third-party package: those come after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# What starting a command may add to a bare interpreter's imports: the monitor and its
# package, the spec codec, process probes, the terminal, and the subreaper call.
ALLOWED_BEFORE_GO = {
    "runpy", "ds_events", "ds_events.bash", "ds_events.bash.procs", "ds_events.bash.child",
    "json", "json.decoder", "json.scanner", "json.encoder", "_json",
    "signal", "pty", "tty", "termios", "select", "fcntl", "struct", "_struct",
    "ctypes", "_ctypes", "ctypes._endian",
}


def _imported(argv: list[str], stdin: bytes = b"") -> set[str]:
    """Modules ``argv`` imports (``-X importtime``), given ``stdin``."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], input=stdin, capture_output=True, timeout=60)
    return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")}


def test_before_go_the_monitor_imports_only_what_starting_the_command_needs(quest, tmp_path):
    spec = {"quest_root": str(quest.root), "session_id": "bx-imports", "command": "true", "workdir": str(tmp_path),
            "env": dict(os.environ), "timeout_seconds": None, "grace_seconds": 1, "log_path": str(tmp_path / "o.log")}
    # No "go": the monitor answers, then kills the command and exits having done
    # nothing else, so what it imported is exactly what the start needed.
    monitor = _imported(["-m", "ds_events.bash_monitor"], json.dumps(spec).encode() + b"\n")
    bare = _imported(["-c", "pass"])
    assert "ds_events.bash.procs" in monitor  # the probe sees the monitor's imports
    assert monitor - bare - ALLOWED_BEFORE_GO == set()
