"""Starting a session's monitor: the spec, the process, the handshake.

The monitor (:mod:`ds_events.bash_monitor`) is a fresh Python process in its own OS
session, so signals to the starter's terminal or process group never reach it. It gets
the spec as one JSON line on stdin, answers with the command's pids on stdout, and waits
for "go" (sent once the start is in the log) or anything else (abort: it kills the
command).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Required, TypedDict

from ds_events.errors import ServiceError

__all__ = ["StartSpec", "MonitorSpec", "Handshake", "MonitorHandle", "spawn_monitor", "HANDSHAKE_TIMEOUT"]

HANDSHAKE_TIMEOUT = 60.0

# The monitor runs the very code this server runs: the directory that holds this
# package goes first on its path (not in PYTHONPATH, which the command would inherit),
# so it works from a plain checkout and never picks up another installed copy.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
_MONITOR_BOOT = (
    f"import sys; sys.path.insert(0, {_PACKAGE_PARENT!r}); "
    "from ds_events.bash_monitor import main; sys.exit(main())"
)


@dataclass
class StartSpec:
    """A validated request to start a session (nothing has run yet)."""

    session_id: str
    command: str
    workdir: Path
    workdir_recorded: str
    env: dict[str, str]
    timeout_seconds: float | None
    grace_seconds: float
    progress_interval: float
    started_by: str
    quest_root: Path
    env_keys: list[str]
    exit_retry_seconds: float = 60.0  # how long the monitor retries recording the exit
    idempotency_key: str | None = None  # recorded with the start (the service checks it)
    kind: str = "exec"  # recorded with the start: exec | terminal (a label; both run alike)

    @property
    def dir(self) -> Path:
        return self.quest_root / ".ds" / "bash_exec" / self.session_id

    @property
    def log_rel(self) -> str:
        return f".ds/bash_exec/{self.session_id}/output.log"


class MonitorSpec(TypedDict):
    """The JSON line a monitor reads on its stdin: what to run, where, and its limits."""

    quest_root: str
    session_id: str
    command: str
    workdir: str  # the real directory
    env: dict[str, str]  # the command's whole environment
    timeout_seconds: float | None
    grace_seconds: float
    progress_interval: float
    exit_retry_seconds: float
    log_path: str  # the line log, absolute


class Handshake(TypedDict, total=False):
    """The monitor's one-line answer: the command's processes (``ok``), or why it could
    not start them (``error``). Start times and the boot id tell these processes from
    later ones that reuse their pids (:mod:`ds_events.bash.procs`)."""

    ok: Required[bool]
    error: str
    pid: int
    pgid: int
    monitor_pid: int
    start_time: int | None
    monitor_start_time: int | None
    boot_id: str
    pty: bool  # False: the command's output comes through pipes (no terminal was available)


class MonitorHandle:
    """A monitor that has started the command and waits for "go"."""

    def __init__(self, proc: subprocess.Popen[bytes], info: Handshake) -> None:
        self.proc = proc
        self.info = info

    def go(self) -> None:
        self._send(b"go\n")

    def abort(self) -> None:
        self._send(b"abort\n")

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass


def spawn_monitor(spec: StartSpec) -> MonitorHandle:
    """Start the monitor in its own OS session and wait for its handshake."""
    spec.dir.mkdir(parents=True, exist_ok=True)
    (spec.dir / "output.log").touch()  # readable (empty) from the first instant
    payload: MonitorSpec = {
        "quest_root": str(spec.quest_root),
        "session_id": spec.session_id,
        "command": spec.command,
        "workdir": str(spec.workdir),
        "env": spec.env,
        "timeout_seconds": spec.timeout_seconds,
        "grace_seconds": spec.grace_seconds,
        "progress_interval": spec.progress_interval,
        "exit_retry_seconds": spec.exit_retry_seconds,
        "log_path": str(spec.dir / "output.log"),
    }
    with open(spec.dir / "monitor.log", "ab") as monitor_log:
        proc = subprocess.Popen(
            [sys.executable, "-c", _MONITOR_BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=monitor_log,
            cwd=str(spec.quest_root),
            env=_monitor_env(spec),
            start_new_session=True,
        )
    # Reap the monitor when it ends, so it never lingers as our zombie.
    threading.Thread(target=proc.wait, name=f"reap-{spec.session_id}", daemon=True).start()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(payload).encode() + b"\n")
        proc.stdin.flush()
        line = _read_line(proc.stdout, HANDSHAKE_TIMEOUT)
    except (BrokenPipeError, OSError) as exc:
        line = json.dumps({"ok": False, "error": f"monitor died: {exc}"}).encode()
    finally:
        proc.stdout.close()
    info: Handshake
    try:
        info = json.loads(line) if line else {"ok": False, "error": "the monitor did not answer"}
    except ValueError:
        info = {"ok": False, "error": f"bad handshake {line[:200]!r}"}
    if not info.get("ok"):
        handle = MonitorHandle(proc, info)
        handle.abort()
        raise ServiceError(
            f"could not start the session: {info.get('error')} (see .ds/bash_exec/{spec.session_id}/monitor.log)",
            code="start_failed",
        )
    return MonitorHandle(proc, info)


_IDENTITY = ("DS_HOME", "DS_QUEST_ID", "DS_RUN_ID")  # a command's names the monitor shares


def _monitor_env(spec: StartSpec) -> dict[str, str]:
    """The starter's environment, plus the quest's and the turn's names from the
    command's: a monitor is found by ``DS_RUN_ID`` as its command is, whether a turn's
    own stdio server started it (whose environment has them) or the host serving the
    turn over HTTP (whose environment does not)."""
    env = dict(os.environ)
    env.update({k: spec.env[k] for k in _IDENTITY if k in spec.env})
    return env


def _read_line(stream: IO[bytes], timeout: float) -> bytes:
    fd = stream.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf.split(b"\n", 1)[0]
