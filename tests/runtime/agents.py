"""What every real-agent test shares: the pinned agent CLIs (installed on first use by
fixtures/install_agent.sh into ~/.cache/ds-events), the fixture modules (the scripted
model endpoints are loaded from fixtures/ by path, once), and looking at live processes
in /proc (a process group's members, processes by command line or environment)."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["FIXTURES", "agent_executable", "fixture_module", "group_members", "processes_with"]

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"
INSTALL = FIXTURES / "install_agent.sh"


@functools.cache
def _install(agent: str) -> tuple[str | None, str]:
    try:
        done = subprocess.run([str(INSTALL), agent, "--print"], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{INSTALL} did not run: {exc}"
    if done.returncode != 0:
        return None, f"{INSTALL} {agent} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
    return done.stdout.strip().splitlines()[-1], ""


def agent_executable(agent: str) -> str:
    """The pinned CLI of ``agent`` (codex, claude, codex-acp, claude-agent-acp, gemini),
    installed into the cache when missing. Skips the test, loudly, only when it cannot be
    installed (no npm, no registry)."""
    path, why = _install(agent)
    if path is None:
        pytest.skip(f"THE AGENT {agent!r} COULD NOT BE INSTALLED, so its real-agent test did not run: {why}")
    return path


def fixture_module(name: str) -> Any:
    """The module ``fixtures/<name>.py``, loaded once."""
    key = f"ds_fixture_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, FIXTURES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _live() -> list[tuple[int, Path]]:
    """(pid, /proc/<pid>) of every process, zombies too: the callers tell them apart."""
    return [(int(entry.name), entry) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def group_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes in process group ``pgid``."""
    members = []
    for pid, entry in _live():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(pid)
    return members


def processes_with(needle: bytes, *, where: str = "cmdline") -> list[int]:
    """Pids of live processes whose ``/proc/<pid>/<where>`` (``cmdline`` or ``environ``:
    NUL-separated) holds ``needle``."""
    found = []
    for pid, entry in _live():
        try:
            if needle in (entry / where).read_bytes() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found.append(pid)
        except OSError:
            continue
    return found
