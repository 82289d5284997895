"""Start ``ds serve`` as a real process for the daemon benchmarks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _start_env import child_env

__all__ = ["start_serve"]


def start_serve(home: Path, tmp: Path) -> tuple[subprocess.Popen[str], int]:
    """A ``ds serve --port 0 --no-turns`` over ``home``; returns it and the port it bound.

    The daemon benches measure the API and the stream: a queued message must not start
    a turn of the configured agent meanwhile (``scheduler_turn.py`` measures turns)."""
    env = child_env(tmp) | {"DS_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ds_events", "serve", "--port", "0", "--no-turns"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("serving"):
        proc.kill()
        raise SystemExit(f"ds serve did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1].split()[0])
