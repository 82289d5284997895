"""Start ``ds serve`` as a real process for the daemon benchmarks."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _start_env import child_env

__all__ = ["start_serve", "served_bench_quest"]


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


@contextlib.contextmanager
def served_bench_quest() -> Iterator[tuple[Path, Path, int]]:
    """A temporary home holding the quest ``bench``, served by ``ds serve --no-turns``;
    yields (the temporary directory, the home's root, the port)."""
    with tempfile.TemporaryDirectory() as tmp:
        from ds_events.home import Home

        home = Home(Path(tmp) / "home")
        home.init()
        home.create_quest("Bench", quest_id="bench").close()
        proc, port = start_serve(home.root, Path(tmp))
        try:
            yield Path(tmp), home.root, port
        finally:
            proc.terminate()
            proc.wait()
