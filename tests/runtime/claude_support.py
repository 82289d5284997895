"""What the real-Claude-Code tests share: the pinned Claude Code CLI (installed on first
use by fixtures/install_agent.sh), the scripted Anthropic Messages server from fixtures/,
the environment that points Claude Code at it, and a DS_HOME config for the claude runner.

Claude Code's tool layouts: with ``ENABLE_TOOL_SEARCH=false`` it offers every MCP tool
in full (*classic*); with ``true`` (and, in 2.1.332, by default) it offers only its
``ToolSearch`` tool and names the MCP tools in a system message, to be loaded by a search
(*deferred*)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ds_events.home import Home

from .agents import FIXTURES, agent_executable, fixture_module

__all__ = ["FIXTURES", "LAYOUTS", "claude_executable", "anthropic_server", "claude_env", "write_claude_config"]

LAYOUTS = {"classic": "false", "deferred": "true"}  # layout -> ENABLE_TOOL_SEARCH


def claude_executable() -> str:
    """The pinned Claude Code CLI (see :func:`agents.agent_executable`)."""
    return agent_executable("claude")


def anthropic_server() -> Any:
    """The ``fixtures/anthropic_server.py`` module."""
    return fixture_module("anthropic_server")


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
