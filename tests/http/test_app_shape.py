"""The app in aiohttp's shape: module-level handlers that read ``request.app[KEY]``, typed
settings, and a hub that lives exactly from the app's startup to its cleanup."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from ds_events.errors import LogError
from ds_events.home import Home, Quest
from ds_events.services.quest import PostMessage, post_message
from handlers.http import make_app
from handlers.http.app import HUB, SETTINGS, running_hub
from handlers.http.settings import Settings, StreamSettings

from .conftest import DaemonTestServer

HTTP = Path(__file__).resolve().parents[2] / "handlers" / "http"
SSE = {"Accept": "text/event-stream"}


async def test_the_hub_is_made_at_startup_and_closed_at_cleanup(home: Home, quest: Quest) -> None:
    app = make_app(home)
    assert HUB not in app
    with pytest.raises(RuntimeError, match="has not started"):
        running_hub(app)
    client = TestClient(DaemonTestServer(app))
    await client.start_server()
    try:
        hub = running_hub(app)
        assert app[HUB] is hub and hub.home is home
        assert (await client.get("/api/quests/q1")).status == 200
        opened = hub.quest("q1")
    finally:
        await client.close()
    # Cleanup closed it: no worker takes a call any more, and the quest it held is closed.
    assert app[HUB] is hub
    with pytest.raises(LogError, match="shutting down"):
        await hub.run(lambda: None)
    with pytest.raises(LogError, match="closed"):
        post_message(opened, PostMessage(text="after the cleanup"))


async def test_each_app_has_its_own_hub(home: Home, quest: Quest) -> None:
    first, second = DaemonTestServer(make_app(home)), DaemonTestServer(make_app(home))
    await first.start_server()
    await second.start_server()
    try:
        assert running_hub(first.app) is not running_hub(second.app)
    finally:
        await first.close()
        await second.close()


async def test_shutdown_without_a_started_hub_is_quiet(home: Home) -> None:
    """A startup that failed before the hub was made still shuts down (on_shutdown finds
    no hub and has nothing to end)."""
    app = make_app(home)
    app.freeze()
    await app.shutdown()
    assert HUB not in app


def test_the_knobs_are_one_frozen_settings_value(home: Home) -> None:
    app = make_app(home, token="t", host="ds.lab.example", max_body=1024, queue_size=5, keepalive=3.0, retry_ms=10, workers=2)
    assert app[SETTINGS] == Settings(
        token="t", host="ds.lab.example", max_body=1024, workers=2,
        stream=StreamSettings(keepalive=3.0, retry_ms=10, queue_size=5),
    )  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        app[SETTINGS].stream.keepalive = 1.0  # type: ignore[misc]
    assert make_app(home)[SETTINGS] == Settings()


@pytest.mark.parametrize(
    "knob", [{"workers": 0}, {"max_body": 0}, {"queue_size": 0}, {"keepalive": 0.0}, {"poll_interval": -1.0}, {"retry_ms": -1}]
)
def test_a_knob_out_of_range_is_refused_when_the_app_is_built(home: Home, knob: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(knob))):
        make_app(home, **knob)


async def test_a_stream_reads_its_settings_from_the_app(make_client: Any, quest: Quest) -> None:
    client = await make_client(retry_ms=1234)
    async with client.get("/api/quests/q1/events", headers=SSE) as resp:
        first = await asyncio.wait_for(resp.content.readline(), 15)
    assert first == b"retry: 1234\n"


def test_every_route_is_a_module_level_function_of_the_http_package(home: Home) -> None:
    app = make_app(home)
    handlers = {route.handler for route in app.router.routes()}
    assert len(handlers) >= 20
    misplaced = sorted(
        f"{h.__module__}.{h.__qualname__}" for h in handlers
        if not h.__module__.startswith("handlers.http.") or "<locals>" in h.__qualname__
    )  # fmt: skip
    assert misplaced == []


def projection_imports(source: str) -> list[str]:
    """The modules of ``projections`` that ``source`` imports (anywhere in it)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name == "projections" or name.startswith("projections.")]


def test_no_module_of_the_http_edge_reads_a_projection_itself() -> None:
    """A view's shape is its domain's business: the edge calls the domain's queries."""
    reading = {p.name: projection_imports(p.read_text()) for p in sorted(HTTP.glob("*.py"))}
    assert {name: mods for name, mods in reading.items() if mods} == {}


def test_the_projection_import_check_sees_a_planted_one() -> None:
    planted = (
        "from projections import interactions as view\nimport projections.status\n\n"
        "def f():\n    from projections.artifacts import newest_records\n"
    )
    assert sorted(projection_imports(planted)) == ["projections", "projections.artifacts", "projections.status"]
    assert projection_imports("from ds_events.services.artifacts import listing\nimport json\n") == []
