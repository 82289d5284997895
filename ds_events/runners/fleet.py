"""Host the turns of every quest in a home: one scheduler task per quest.

``ds serve`` runs a :class:`Fleet` beside the HTTP API (and ``ds acp`` one for the quest
it serves): each quest's :class:`~ds_events.services.runtime.scheduler.QuestScheduler` waits for
its log to move and runs a turn when the quest needs one. New quests are picked up by a
scan of the home every ``scan_seconds``. A scheduler that fails (a runner that cannot be
built from the config, a bug) is reported on stderr and started again after a pause, so
one broken quest never stops the others.

A quest about to be deleted is let go first (:meth:`Fleet.let_go`: its scheduler is
cancelled and awaited, unless it is in a turn), so nothing of it touches the quest while
it goes, and a quest made again under the same id gets a scheduler of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any

from ds_events.errors import ServiceError
from ds_events.home import Home, Quest
from ds_events.services.runtime.scheduler import QuestScheduler

from . import scheduler_for
from .base import close_mcp_host

__all__ = ["Fleet"]


class Fleet:
    def __init__(
        self,
        home: Home,
        *,
        runner: str | None = None,
        model: str | None = None,
        trajectory: str | None = None,
        quest_ids: list[str] | None = None,
        scan_seconds: float = 2.0,
        restart_seconds: float = 5.0,
        opener: Callable[[str], Quest] | None = None,
    ) -> None:
        """``opener``: where to get an open quest (``ds serve`` passes its HTTP hub's,
        so the daemon opens each quest once and a message posted over HTTP wakes the
        scheduler at once); the quests it gives are its to close. None: the Fleet
        opens and closes its own."""
        self.home = home
        self.opener = opener
        self.options: dict[str, Any] = {"runner": runner, "model": model, "trajectory": trajectory}
        self.only = quest_ids
        self.scan_seconds = scan_seconds
        self.restart_seconds = restart_seconds
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.quests: dict[str, Quest] = {}
        self.schedulers: dict[str, QuestScheduler] = {}
        self.held: set[str] = set()  # let go of (being deleted): not hosted until taken back

    async def run(self) -> None:
        """Keep a scheduler running for every quest, forever (cancel to stop)."""
        try:
            while True:
                self.scan()
                await asyncio.sleep(self.scan_seconds)
        finally:
            await self.close()

    def add(self, quest_id: str) -> None:
        """Host ``quest_id`` too (``ds acp`` hosts the quests its sessions open)."""
        if self.only is not None and quest_id not in self.only:
            self.only.append(quest_id)
        self.scan()

    async def let_go(self, quest_id: str) -> bool:
        """Stop hosting ``quest_id`` before it is deleted: its scheduler is cancelled and
        awaited, and scans leave the quest alone until :meth:`take_back`. A scheduler in a
        turn is left running (False): the deletion refuses a quest whose turn runs. One
        claiming a turn or winding one up (its files, its retry) is waited for."""
        scheduler = self.schedulers.get(quest_id)
        while scheduler is not None and scheduler.in_turn:
            if scheduler.quest.state("turns").running is not None:
                return False
            await asyncio.sleep(0.05)
        self.held.add(quest_id)
        task = self.tasks.pop(quest_id, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._drop(quest_id)
        return True

    def take_back(self, quest_id: str) -> None:
        """Host ``quest_id`` again if it is (still, or again) there."""
        self.held.discard(quest_id)
        self.scan()

    def scan(self) -> None:
        present = self.home.quest_ids()
        for quest_id in [q for q in self.tasks if q not in present]:  # deleted (ds quest delete): stop hosting it
            self.tasks.pop(quest_id).cancel()
            self._drop(quest_id)
        for quest_id in self.only if self.only is not None else present:
            if quest_id not in self.tasks and quest_id in present and quest_id not in self.held:
                self.tasks[quest_id] = asyncio.create_task(self._host(quest_id), name=f"scheduler:{quest_id}")

    async def _host(self, quest_id: str) -> None:
        last_error, pause = "", self.restart_seconds
        while True:
            try:
                if quest_id not in self.quests:
                    self.quests[quest_id] = await asyncio.to_thread(self._open, quest_id)
                scheduler = self.schedulers[quest_id] = scheduler_for(self.quests[quest_id], **self.options)
                await scheduler.serve()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep the other quests running
                if quest_id not in self.home.quest_ids():  # deleted under it: nothing to host, nothing to say
                    self._drop(quest_id)
                    self.tasks.pop(quest_id, None)
                    return
                # Open the quest afresh on the next try: the failure may be its handle's
                # (deleted by another process and made again between two scans).
                stale = self.quests.get(quest_id)
                self._drop(quest_id)
                if stale is not None and stale.closed:  # closed under it (deleted): no fault of its own
                    continue
                error = f"{exc.code}: {exc.message}" if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
                if error != last_error:  # say it once, not on every restart
                    print(f"scheduler {quest_id}: {error}", file=sys.stderr, flush=True)
                last_error = error
            await asyncio.sleep(pause)
            pause = min(pause * 2, 60.0)

    def _drop(self, quest_id: str) -> None:
        """Forget the quest's scheduler and handle (closing the handle if it is ours)."""
        self.schedulers.pop(quest_id, None)
        quest = self.quests.pop(quest_id, None)
        if quest is not None and self.opener is None:
            with contextlib.suppress(Exception):
                quest.close()

    def _open(self, quest_id: str) -> Quest:
        if self.opener is not None:
            return self.opener(quest_id)
        return self.home.open_quest(quest_id, actor="scheduler")

    async def close(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
        await close_mcp_host()  # the turns are over: so is the listener that served them
        for quest_id in list(self.quests):
            self._drop(quest_id)
