"""``GET /api/doctor``: the report ``ds doctor --json`` prints, from a real ``ds serve``
process and from the app on a loopback test server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from handlers.http import make_app
from tests.helpers import start_serve

from ..http.conftest import DaemonTestServer
from .test_doctor import EVERY_CHECK, World, world  # noqa: F401 - the fixture
from .world import closed_port, run_doctor_json, write_config

pytestmark = pytest.mark.slow


async def test_a_real_daemon_answers_the_report_the_cli_prints(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(world.home, world.runner(codex_provider={"base_url": f"http://127.0.0.1:{closed_port()}/v1"}))
    env = world.env()
    _use(monkeypatch, env)  # start_serve passes on this process's environment
    proc, port = start_serve(world.home, "--no-turns", log=tmp_path / "serve.log")
    try:
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/api/doctor") as answer:
            assert (answer.status, answer.content_type) == (200, "application/json")
            served = await answer.json()
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    code, printed, _ = run_doctor_json(env)
    assert code == 1 and served["ok"] is False
    assert set(served) == set(printed) == {"ok", "home", "checks"}
    assert _shape(served) == _shape(printed)
    assert {c["name"] for c in served["checks"]} == EVERY_CHECK
    failed = [c for c in served["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in failed] == ["runner.codex.provider"] and failed[0]["fix"]


async def test_the_app_shares_one_run_between_requests(aiohttp_client: Any, world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(world.home, world.runner())
    _use(monkeypatch, world.env())  # the app runs in this process
    client = await aiohttp_client(DaemonTestServer(make_app(world.home)))
    first, second = [await (await client.get("/api/doctor")).json() for _ in range(2)]
    assert first == second and first["ok"] is True, [c for c in first["checks"] if c["status"] == "fail"]
    # One run: each provider asked once, however many requests.
    assert sorted(line.split()[1] for line in world.provider.requests) == ["/", "/v1"]


def _use(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "DS_STORE"):
        if name not in env:
            monkeypatch.delenv(name, raising=False)


def _shape(report: dict[str, Any]) -> list[tuple[str, str, bool]]:
    return [(c["name"], c["status"], c["fix"] is not None) for c in report["checks"]]
