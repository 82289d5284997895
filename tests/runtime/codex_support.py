"""What the codex runner's tests share: the pinned Codex CLI (installed on first use by
fixtures/install_agent.sh), the scripted Responses-API server from fixtures/, and a
DS_HOME config that points the codex runner at it."""

from __future__ import annotations

from typing import Any

import yaml

from ds_events.home import Home

from .agents import FIXTURES, agent_executable, fixture_module

__all__ = ["FIXTURES", "CODEX_FIXTURES", "codex_executable", "responses_server", "write_runner_config", "SCRIPTED_MODEL"]

CODEX_FIXTURES = FIXTURES / "codex"
# A model name Codex has no metadata for: it then offers the classic tool layout (each
# MCP server a tool namespace ``mcp__<server>``) and says so in a warning item.
SCRIPTED_MODEL = "ds-scripted-model"


def codex_executable() -> str:
    """The pinned Codex CLI (see :func:`agents.agent_executable`)."""
    return agent_executable("codex")


def responses_server() -> Any:
    """The ``fixtures/responses_server.py`` module."""
    return fixture_module("responses_server")


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
