"""Browser tests: fixtures over ``harness.py`` (one demo home and one daemon per kind per
session, one browser for the package; a new browser context, guarded, per test).

- ``demo``: (home, quest_id) of a home holding the demo quest (``ds demo``, ~30 s, once).
- ``server``: ``ds serve --no-turns`` over it, no token. ``token_server``: the same home
  served by a second daemon that requires ``TOKEN``. Tests that change a quest (messages,
  pause) should create their own quest through ``server.api("/api/quests", "POST", ...)``
  so the demo quest stays as ``ds demo`` left it for the others.
- ``open_page(server, fragment="/", width=1280, height=860, color_scheme="light")``: a new
  context and page at ``server.page_url(fragment)``, watched by a :class:`Guard`; at the
  end of the test each page is screenshotted to ``test-output/web/<test>[-n].png`` and
  the guard fails the test on any 5xx, uncaught page error or console error.
- ``page``: ``open_page(server)`` for the common case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ds_events.home import Home

from .harness import Guard, Server, build_demo, launch, screenshot_path, serve

TOKEN = "web-test-token"


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Home, str]:
    return build_demo(tmp_path_factory.mktemp("web") / "home")


@pytest.fixture(scope="session")
def server(demo: tuple[Home, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(demo[0], "--no-turns", log=tmp_path_factory.mktemp("serve") / "serve.log") as s:
        yield s


@pytest.fixture(scope="session")
def token_server(demo: tuple[Home, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(demo[0], "--no-turns", token=TOKEN, log=tmp_path_factory.mktemp("serve") / "serve.log") as s:
        yield s


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    # Package scope: one browser for all of tests/web, closed when its last test ends. The
    # sync API keeps an event loop running on this thread while it is open, and any async
    # test after it (pytest-asyncio) would then fail to start its own.
    from playwright.sync_api import expect

    # An assertion on the page waits as long as an action does: 5 s (playwright's default)
    # is too short for a live turn's next card on a loaded 2-core machine.
    expect.set_options(timeout=30_000)
    with launch() as b:
        yield b


@pytest.fixture
def open_page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    opened: list[tuple[Any, Any, Guard]] = []

    def open_(server: Server, fragment: str = "/", *, width: int = 1280, height: int = 860, color_scheme: str = "light") -> Any:
        context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=color_scheme)
        context.set_default_timeout(15_000)
        page = context.new_page()
        guard = Guard()
        guard.watch(page)
        opened.append((context, page, guard))
        page.goto(server.page_url(fragment))
        return page

    yield open_
    name = request.node.name
    try:
        for n, (_context, page, guard) in enumerate(opened):
            page.screenshot(path=str(screenshot_path(name if n == 0 else f"{name}-{n}")), full_page=True)
            guard.check()
    finally:
        for context, _, _ in opened:
            context.close()


@pytest.fixture
def page(open_page: Callable[..., Any], server: Server) -> Any:
    return open_page(server)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.slow)  # a real browser and daemon: seconds each
            # one worker under xdist: the session's demo home (~30 s) and daemons, and the
            # package's browser, are made once
            item.add_marker(pytest.mark.xdist_group("web"))
