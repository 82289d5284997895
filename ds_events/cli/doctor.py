"""``ds doctor``: is this machine ready to run quests? Every check, and the fix of each
failure."""

from __future__ import annotations

import asyncio

import msgspec

from ds_events.home import Home

from .common import cli, emit_json, json_option, out, pass_home

__all__ = ["doctor"]

_MARK = {"ok": "ok  ", "fail": "FAIL", "warn": "warn", "skip": "skip"}
_OK_WIDTH = 110  # a passed check's detail is cut here in the text form (--json has it whole)


@cli.command()
@json_option
@pass_home
def doctor(home: Home, as_json: bool) -> None:
    """Check the config, the store, free disk, git and pygit2, each configured runner's
    agent CLI (found, version in the tested range, provider endpoint reachable through
    HTTPS_PROXY/HTTP_PROXY/NO_PROXY) and that the three MCP servers start and list their
    tools (against a scratch quest in a temporary home: yours is not touched).

    Exits 0 when no check failed: a warning (an untested newer version, low disk) or a
    skipped check does not fail. Each failure says its fix. The text form cuts a passed
    check's long detail (the MCP tool lists); --json has every detail whole.

    Example: ds doctor --json
    """
    from ds_events.doctor import run_doctor  # aiohttp, mcp and the runners: only this command needs them

    report = asyncio.run(run_doctor(home))
    if as_json:
        emit_json(msgspec.to_builtins(report))
    else:
        width = max(len(c.name) for c in report.checks)
        for check in report.checks:
            detail = check.detail if check.status != "ok" or len(check.detail) <= _OK_WIDTH else check.detail[: _OK_WIDTH - 1] + "…"
            out(f"{_MARK[check.status]}  {check.name:<{width}}  {detail}")
            if check.fix and check.status in ("fail", "warn"):
                out(f"{'':<{width + 8}}fix: {check.fix}")
        counts = {s: sum(c.status == s for c in report.checks) for s in _MARK}
        summary = ", ".join(f"{n} {word}" for word, n in (("ok", counts["ok"]), ("failed", counts["fail"]),
                                                          ("warnings", counts["warn"]), ("skipped", counts["skip"])) if n)  # fmt: skip
        out(f"{len(report.checks)} checks: {summary}" + ("" if report.ok else " — fix the failures above"))
    raise SystemExit(0 if report.ok else 1)
