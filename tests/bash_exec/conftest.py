"""Every test here starts real processes: none may outlive its test, even a failing one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ds_events.home import Home
from ds_events.services import bash as service
from ds_events.services.bash.commands import KillSession


@pytest.fixture(autouse=True)
def _no_session_outlives_its_test(home: Home) -> Iterator[None]:
    yield
    for quest_id in home.quest_ids():
        with home.open_quest(quest_id, actor="test-cleanup") as quest:
            for session in quest.state("bash_sessions").sessions.values():
                if session.status == "running":
                    service.kill(quest, KillSession(id=session.id, force=True, reason="test_cleanup"))
