"""The Fleet (``ds serve``'s turn host) and a quest deleted under it: the daemon's delete
lets go of the quest's scheduler first, so nothing of it runs on a closed handle, and a
quest made again under the same id gets a scheduler of its own."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ds_events.errors import Conflict
from ds_events.home import Home, Quest
from ds_events.runners.fleet import Fleet
from ds_events.services import quest as quest_service
from ds_events.services.runtime import removal
from handlers.http.hub import Hub
from tests.helpers import wait_until_async

from .test_scheduler import trajectory

pytestmark = pytest.mark.slow


def finished(hub: Hub, quest_id: str) -> list[Any]:
    return [e for e in hub.quest(quest_id).log.read() if e.type == "runner.turn_finished"]


def post(hub: Hub, quest_id: str, text: str) -> None:
    quest_service.post_message(hub.quest(quest_id), quest_service.PostMessage(text=text))


async def delete(hub: Hub, quest_id: str) -> None:
    """What ``DELETE /api/quests/{id}`` does with ``confirm``."""

    def work() -> None:
        removal.delete_quest(hub.quest(quest_id), confirm=True)
        hub.forget(quest_id)

    async with hub.letting_go(quest_id):
        await asyncio.to_thread(work)


@pytest.fixture
async def hosted(home: Home, quest: Quest, tmp_path) -> Any:
    """A Hub and a Fleet on it as ``ds serve`` wires them; the Fleet never scans on its
    own (an hour between scans), so each test says when a scan happens."""
    quest.close()
    traj = trajectory(tmp_path, [{"say": "hello"}], [{"sleep": 30}])
    hub = Hub(home)
    fleet = Fleet(home, runner="scripted", trajectory=traj, opener=hub.quest, scan_seconds=3600)
    hub.hosts.append(fleet)
    task = asyncio.create_task(fleet.run())
    try:
        yield hub, fleet
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await hub.close()


async def test_a_deleted_quest_made_again_gets_a_scheduler_of_its_own_and_nothing_is_said(
    hosted: tuple[Hub, Fleet], home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    hub, fleet = hosted
    post(hub, "q1", "hi")
    await wait_until_async(lambda: finished(hub, "q1"), timeout=120, what="the first turn")
    old = fleet.tasks["q1"]
    await delete(hub, "q1")
    assert old.done() and "q1" not in fleet.tasks and "q1" not in fleet.quests  # let go of before it went
    home.create_quest("Again", quest_id="q1").close()  # made again before any scan
    assert "q1" not in fleet.tasks  # a scan picks it up, as it does any new quest
    fleet.scan()
    post(hub, "q1", "hi again")
    [end] = await wait_until_async(lambda: finished(hub, "q1"), timeout=120, what="a turn of the quest made again")
    assert end.outcome == "completed"
    assert fleet.tasks["q1"] is not old
    assert "scheduler q1" not in capsys.readouterr().err


async def test_a_quest_in_a_turn_is_not_let_go_of_and_its_deletion_is_refused(
    hosted: tuple[Hub, Fleet], capsys: pytest.CaptureFixture[str]
) -> None:
    hub, fleet = hosted
    post(hub, "q1", "hi")
    await wait_until_async(lambda: finished(hub, "q1"), timeout=120, what="the first turn")
    post(hub, "q1", "sleep now")  # turn 2 sleeps 30 s
    await wait_until_async(lambda: hub.quest("q1").state("turns").running, timeout=120, what="the second turn to run")
    task = fleet.tasks["q1"]
    assert await fleet.let_go("q1") is False  # a scheduler in a turn is left running
    assert "q1" not in fleet.held
    with pytest.raises(Conflict) as refused:
        await delete(hub, "q1")
    assert refused.value.code == "turn_running"
    assert fleet.tasks["q1"] is task and not task.done()  # still hosting its turn
    assert hub.quest("q1").state("turns").running is not None
    assert "scheduler q1" not in capsys.readouterr().err
