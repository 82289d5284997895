"""What the real-Claude-Code tests share: the pinned Claude Code CLI (installed on first
use by fixtures/install_agent.sh), the scripted Anthropic Messages server from fixtures/,
the environment that points Claude Code at it, and a DS_HOME config for the claude runner.

Claude Code's tool layouts: with ``ENABLE_TOOL_SEARCH=false`` it offers every MCP tool
in full (*classic*); with ``true`` (and, in 2.1.332, by default) it offers only its
``ToolSearch`` tool and names the MCP tools in a system message, to be loaded by a search
(*deferred*)."""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ds_events.home import Home

__all__ = ["FIXTURES", "LAYOUTS", "claude_executable", "anthropic_server", "claude_env", "write_claude_config"]

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"
INSTALL = FIXTURES / "install_agent.sh"
LAYOUTS = {"classic": "false", "deferred": "true"}  # layout -> ENABLE_TOOL_SEARCH


@functools.cache
def _install() -> tuple[str | None, str]:
    try:
        done = subprocess.run([str(INSTALL), "claude", "--print"], capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{INSTALL} did not run: {exc}"
    if done.returncode != 0:
        return None, f"{INSTALL} claude failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
    return done.stdout.strip().splitlines()[-1], ""


def claude_executable() -> str:
    """The pinned Claude Code CLI, installed into the cache when missing. Skips the test,
    loudly, only when it cannot be installed (no npm, no registry)."""
    path, why = _install()
    if path is None:
        pytest.skip(f"CLAUDE CODE COULD NOT BE INSTALLED, so the real-Claude-Code test did not run: {why}")
    return path


def anthropic_server() -> Any:
    """The ``fixtures/anthropic_server.py`` module."""
    name = "ds_fixture_anthropic_server"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "anthropic_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def claude_env(base_url: str, config_dir: Path, layout: str) -> dict[str, str]:
    """The variables that point Claude Code at the scripted endpoint, offline, with a
    config directory of its own (never the user's ``~/.claude``) and the tool layout."""
    env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "ENABLE_TOOL_SEARCH": LAYOUTS[layout],
    }
    if os.geteuid() == 0:
        # As root Claude Code refuses bypassPermissions unless told it runs in a sandbox.
        env["IS_SANDBOX"] = "1"
    return env


def write_claude_config(home: Home, *, claude: str, **runner: Any) -> None:
    """``DS_HOME/config.yaml`` with a runner section for the claude runner: the pinned
    CLI, one attempt per turn."""
    section = {"name": "claude", "commands": {"claude": [claude]}, "max_attempts": 1, "stall_seconds": 300, **runner}
    (home.root / "config.yaml").write_text(yaml.safe_dump({"runner": section}), encoding="utf-8")
