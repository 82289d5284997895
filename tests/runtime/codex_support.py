"""What the codex runner's tests share: the pinned Codex CLI (installed on first use by
fixtures/install_codex.sh), the scripted Responses-API server from fixtures/, and a
DS_HOME config that points the codex runner at it."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ds_events.home import Home

__all__ = ["FIXTURES", "CODEX_FIXTURES", "codex_executable", "responses_server", "write_runner_config", "SCRIPTED_MODEL"]

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"
CODEX_FIXTURES = FIXTURES / "codex"
INSTALL = FIXTURES / "install_codex.sh"
# A model name Codex has no metadata for: it then offers the classic tool layout (each
# MCP server a tool namespace ``mcp__<server>``) and says so in a warning item.
SCRIPTED_MODEL = "ds-scripted-model"


@functools.cache
def _install() -> tuple[str | None, str]:
    try:
        done = subprocess.run([str(INSTALL), "--print"], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{INSTALL} did not run: {exc}"
    if done.returncode != 0:
        return None, f"{INSTALL} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
    return done.stdout.strip().splitlines()[-1], ""


def codex_executable() -> str:
    """The pinned Codex CLI, installed into the cache when missing. Skips the test, loudly,
    only when it cannot be installed (no npm, no registry)."""
    path, why = _install()
    if path is None:
        pytest.skip(f"THE CODEX CLI COULD NOT BE INSTALLED, so the real-Codex test did not run: {why}")
    return path


def responses_server() -> Any:
    """The ``fixtures/responses_server.py`` module."""
    name = "ds_fixture_responses_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "responses_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def write_runner_config(home: Home, *, codex: str, base_url: str, **runner: Any) -> None:
    """``DS_HOME/config.yaml`` with a runner section for the codex runner against the
    scripted endpoint: Codex started with ``--strict-config`` (so a key of ours that this
    Codex does not know fails the turn instead of being ignored), no retries."""
    section = {
        "name": "codex",
        "model": SCRIPTED_MODEL,
        "commands": {"codex": [codex, "--strict-config"]},
        "codex_provider": {"name": "scripted", "base_url": base_url, "request_max_retries": 0, "stream_max_retries": 0},
        "max_attempts": 1,
        "stall_seconds": 120,
        **runner,
    }
    (home.root / "config.yaml").write_text(yaml.safe_dump({"runner": section}), encoding="utf-8")
