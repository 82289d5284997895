"""An ACP agent over stdio that attaches an editor (any ACP client) to a quest.

- ``initialize``: protocol version and capabilities (``loadSession``).
- ``session/new``: the session *is* a quest; its id is the quest id. With ``--quest Q``
  the session picks Q (creating it when it does not exist yet), else a new quest is made.
- ``session/load``: replays the quest's whole history as ``session/update``s
  (:mod:`projections.acp` maps each event; nothing is dropped).
- ``session/prompt``: queues the text as a user message (``services.quests.post_message``,
  the same service as ``ds message``), then streams every event appended after it, by
  any process, until the turn ends. There is no runner yet (issue 13), so "the turn
  ends" means: the quest completed, was paused or stopped (``end_turn``; ``cancelled`` if
  this client asked), or it went quiet — no new event for ``quiet_seconds``.
- ``session/cancel``: pauses the quest (``services.quests.control``).

Writes go through the services, in a worker thread (an append syncs to disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

import acp
from acp import schema

from ds_events.errors import ServiceError
from ds_events.events import Event
from ds_events.home import Home, Quest
from ds_events.services import quests as quest_service
from projections.acp import to_notification

__all__ = ["QuestAgent", "serve", "DEFAULT_QUIET_SECONDS"]

DEFAULT_QUIET_SECONDS = 2.0
_TURN_ENDERS = {"quest.completed"}
_PAUSES = {"pause", "stop"}


class QuestAgent:
    """One ACP connection's agent: sessions are quests of one home."""

    def __init__(self, home: Home, *, quest_id: str | None = None, quiet_seconds: float = DEFAULT_QUIET_SECONDS) -> None:
        self.home = home
        self.quest_id = quest_id
        self.quiet_seconds = quiet_seconds
        self.conn: Any = None
        self._quests: dict[str, Quest] = {}
        self._cancelled: set[str] = set()

    # -- the SDK's Agent interface --------------------------------------------------

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(load_session=True),
            agent_info=schema.Implementation(name="ds-events", title="ds-events quest", version=_version()),
        )

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        quest = await asyncio.to_thread(self._pick_or_create, cwd)
        return schema.NewSessionResponse(session_id=quest.id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> schema.LoadSessionResponse:
        quest = await self._quest(session_id)
        for event in await asyncio.to_thread(quest.log.read):
            await self._send(session_id, event)
        return schema.LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        quest = await self._quest(session_id)
        text = "\n".join(block.text for block in prompt if getattr(block, "type", "") == "text")
        self._cancelled.discard(session_id)
        message = await self._call(
            quest_service.post_message, quest, quest_service.PostMessage(text=text), source="acp"
        )
        stop = await self._stream_turn(quest, session_id, after_seq=message.seq)
        return schema.PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **_: Any) -> None:
        quest = await self._quest(session_id)
        self._cancelled.add(session_id)
        with contextlib.suppress(ServiceError):  # already completed: nothing to pause
            await self._call(quest_service.control, quest, quest_service.Control(action="pause", reason="acp cancel"))

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None

    def close(self) -> None:
        for quest in self._quests.values():
            quest.close()
        self._quests.clear()

    # -- private helpers ------------------------------------------------------------

    async def _stream_turn(self, quest: Quest, session_id: str, *, after_seq: int) -> str:
        """Send every event after ``after_seq`` until the quest completes, pauses or goes
        quiet; the stop reason for the prompt's answer."""
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def follow() -> None:
            async for event in quest.log.follow(after_seq=after_seq):
                queue.put_nowait(event)

        follower = asyncio.create_task(follow())
        try:
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), timeout=self.quiet_seconds)
                except asyncio.TimeoutError:
                    return "cancelled" if session_id in self._cancelled else "end_turn"
                await self._send(session_id, event)
                if event.type in _TURN_ENDERS:
                    return "end_turn"
                if event.type == "quest.control" and getattr(event, "action", "") in _PAUSES:
                    return "cancelled" if session_id in self._cancelled else "end_turn"
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower

    async def _send(self, session_id: str, event: Event) -> None:
        note = to_notification(event, session_id)
        parsed = schema.SessionNotification.model_validate(note["params"])
        await self.conn.session_update(session_id=session_id, update=parsed.update)

    async def _quest(self, session_id: str) -> Quest:
        if session_id not in self._quests:
            try:
                self._quests[session_id] = await asyncio.to_thread(self.home.open_quest, session_id, actor="acp")
            except ServiceError as exc:
                raise acp.RequestError.invalid_params({"error": exc.code, "message": exc.message}) from None
        return self._quests[session_id]

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except ServiceError as exc:
            raise acp.RequestError.invalid_params({"error": exc.code, "message": exc.message}) from None

    def _pick_or_create(self, cwd: str) -> Quest:
        if self.quest_id is not None:
            if self.quest_id in self.home.quest_ids():
                quest = self.home.open_quest(self.quest_id, actor="acp")
            else:
                quest = self.home.create_quest(self.quest_id, quest_id=self.quest_id, actor="acp")
        else:
            name = os.path.basename(os.path.normpath(cwd)) or "editor"
            quest = self.home.create_quest(
                f"ACP session in {name}", quest_id=f"acp-{os.urandom(4).hex()}", actor="acp"
            )
        self._quests.setdefault(quest.id, quest)
        return self._quests[quest.id]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ds-events")
    except PackageNotFoundError:  # run from a source tree
        return "0"


async def serve(home: Home, *, quest_id: str | None = None, quiet_seconds: float = DEFAULT_QUIET_SECONDS) -> None:
    """Run the agent on this process's stdin/stdout until the client disconnects."""
    agent = QuestAgent(home, quest_id=quest_id, quiet_seconds=quiet_seconds)
    try:
        await acp.run_agent(agent)
    finally:
        agent.close()
