"""Helpers shared by tests: parsing MCP tool errors, running ``ds`` as a subprocess,
bounded waiting."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from ds_events.home import Home

__all__ = ["tool_error", "ds_env", "DS", "wait_until"]


def tool_error(result: object) -> dict:
    """The JSON payload of an MCP tool error result (``{"error": code, ...}``)."""
    assert getattr(result, "is_error", False), f"expected a tool error, got {result!r}"
    text = result.content[0].text  # type: ignore[attr-defined]
    return json.loads(text[text.index("{") :])


def ds_env(home: Home, **extra: str) -> dict[str, str]:
    """Environment for running ``ds`` (or a stdio MCP server) as a subprocess."""
    env = dict(os.environ)
    env["DS_HOME"] = str(home.root)
    env.update(extra)
    return env


DS = [sys.executable, "-m", "ds_events"]


def wait_until(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition", poll: float = 0.02) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)
