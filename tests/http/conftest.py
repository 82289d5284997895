"""An in-process daemon over a fresh home with one quest ``q1`` (aiohttp_client), and a
real ``ds serve`` process shared by a module's tests (``served``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ds_events.home import Home, Quest
from handlers.http import make_app
from handlers.http.server import make_runner

from ..helpers import start_serve


class DaemonTestServer(TestServer):
    """aiohttp's test server with ``ds serve``'s runner (``handlers.http.server``): what
    aiohttp refuses before the app is answered in our JSON shape here too."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)

    async def _make_runner(self, **kwargs: Any) -> web.AppRunner:
        return make_runner(self.app, **kwargs)


@pytest.fixture
async def client(aiohttp_client: Any, home: Home, quest: Quest) -> Any:
    return await aiohttp_client(DaemonTestServer(make_app(home)))


@pytest.fixture
def make_client(aiohttp_client: Any, home: Home, quest: Quest) -> Any:
    """A client over an app built with the given options (token, queue size, ...)."""

    async def build(**options: Any) -> Any:
        return await aiohttp_client(DaemonTestServer(make_app(home, **options)))

    return build


@dataclass
class Served:
    """A real ``ds serve --no-turns --log-level debug`` on a loopback port over its own home
    (quest ``q1``), shared by a module's tests; its output is in ``log``."""

    home: Home
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def last_seq(self, quest_id: str = "q1") -> int:
        with self.home.open_quest(quest_id, actor="test", read_only=True) as q:  # writes nothing
            return q.log.last_seq

    def log_lines(self, level: str) -> list[str]:
        """The server's log lines of ``level`` (ERROR, WARNING, DEBUG ...)."""
        return [line for line in self.log.read_text().splitlines() if f" {level} " in line[:40]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("served")
    home = Home(root / "home")
    home.init()
    home.create_quest("Served quest", quest_id="q1", brief="A quest behind a real daemon.").close()
    proc, port = start_serve(home, "--no-turns", "--log-level", "debug", log=root / "serve.log")
    try:
        yield Served(home=home, port=port, log=root / "serve.log")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
