"""An in-process daemon over a fresh home with one quest ``q1`` (aiohttp_client)."""

from __future__ import annotations

from typing import Any

import pytest

from ds_events.home import Home, Quest
from handlers.http import make_app


@pytest.fixture
async def client(aiohttp_client: Any, home: Home, quest: Quest) -> Any:
    return await aiohttp_client(make_app(home))


@pytest.fixture
def make_client(aiohttp_client: Any, home: Home, quest: Quest) -> Any:
    """A client over an app built with the given options (token, queue size, ...)."""

    async def build(**options: Any) -> Any:
        return await aiohttp_client(make_app(home, **options))

    return build
