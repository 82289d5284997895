"""Shared fixtures: a fresh DS_HOME per test and an open quest in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    root = tmp_path / "home"
    monkeypatch.setenv("DS_HOME", str(root))
    h = Home(root)
    h.init()
    return h


@pytest.fixture
def quest(home: Home) -> Iterator[Quest]:
    q = home.create_quest("Test quest", quest_id="q1", brief="A quest for tests.")
    try:
        yield q
    finally:
        q.close()


@pytest.fixture
def mem(quest: Quest) -> Iterator[MemoryContext]:
    m = MemoryContext(quest=quest, actor="test")
    try:
        yield m
    finally:
        m.close()
from tests.pg import pg_cluster, pg_database, pg_dsn  # noqa: E402, F401 - the PostgreSQL cluster fixtures
