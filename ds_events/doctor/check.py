"""One check's answer, and the whole report: the shape ``ds doctor --json`` prints and
``GET /api/doctor`` answers."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Check", "Report", "Status"]

Status = Literal["ok", "fail", "warn", "skip"]


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """``name`` (``runner.codex.version``, ``mcp.memory``, ``disk``), what was found, and
    for a failure (or a warning) the one command or setting that fixes it."""

    name: str
    status: Status
    detail: str
    fix: str | None = None


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """``ok`` is true when no check failed (a warning or a skip does not fail)."""

    ok: bool
    home: str
    checks: list[Check]
