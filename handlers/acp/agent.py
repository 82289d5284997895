"""An ACP agent over stdio that attaches an editor (any ACP client) to a quest.

- ``initialize``: protocol version and capabilities (``loadSession``, ``session/list``).
- ``session/new``: the session *is* a quest; its id is the quest id. With ``--quest Q``
  the session picks Q (creating it when it does not exist yet), else a new quest is made.
- ``session/list``: every quest of the home as a session (title, the quest's directory
  as ``cwd``, its last event's time as ``updatedAt``), most recently updated first; a
  ``cwd`` lists the quests whose directory is that path or under it.
- ``session/load``: replays the quest's whole history as ``session/update``s
  (:mod:`projections.acp` maps each event; nothing is dropped).
- ``session/prompt``: queues the text as a user message (``services.quests.post_message``,
  the same service as ``ds message``), then streams every event appended after it, by
  any process, until the turn it starts ends and the quest has nothing more to run, or
  the quest completed. A failed turn with a retry scheduled keeps the prompt waiting for
  the retry's turn. The stop reason says how the last turn ended
  (:mod:`projections.acp_stop` has the table: ``end_turn``, ``refusal`` for a failure with
  no retry left, ``cancelled``, ``max_tokens``, ``max_turn_requests``), and for every
  outcome but a completed turn the agent's last message says why. The agent hosts the
  session's quest turns itself (a :class:`~ds_events.runners.fleet.Fleet` with the
  configured runner; ``ds serve`` hosting them too is harmless: a turn is claimed once).
  When no turn starts within ``quiet_seconds`` of the last event (no runner could start
  one), the prompt ends.
- ``session/cancel``: pauses the quest (``services.quests.control``).

Tool calls stream as one card per call (:class:`projections.acp.Notifier`): the agent's
view of a call and our MCP server's record of it share one ``toolCallId``.

Writes go through the services, in a worker thread (an append syncs to disk).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from typing import Any

import acp
from acp import schema
from ds_events.errors import ServiceError
from ds_events.events import Event
from ds_events.home import Home, Quest
from ds_events.runners.fleet import Fleet
from ds_events.services import quest as quest_service
from ds_events.services.quest.event_pages import prime_cards
from ds_events.services.runtime import steering
from ds_events.services.runtime.turns import next_action
from projections.acp import META_KEY, Notifier
from projections.acp_stop import PromptEnd, prompt_end, waits_for_retry

from .sessions import list_sessions

__all__ = ["QuestAgent", "serve", "DEFAULT_QUIET_SECONDS"]

DEFAULT_QUIET_SECONDS = 2.0
_TURN_ENDERS = {"quest.completed"}
_PAUSES = {"pause", "stop"}


class QuestAgent:
    """One ACP connection's agent: sessions are quests of one home."""

    def __init__(
        self,
        home: Home,
        *,
        quest_id: str | None = None,
        quiet_seconds: float = DEFAULT_QUIET_SECONDS,
        turns: Mapping[str, Any] | None = None,
    ) -> None:
        """``turns``: host the sessions' turns with these Fleet options (runner, model,
        trajectory); None hosts none (another process does)."""
        self.home = home
        self.fleet = Fleet(home, quest_ids=[], **turns) if turns is not None else None
        self.quest_id = quest_id
        self.quiet_seconds = quiet_seconds
        self.conn: Any = None
        self._quests: dict[str, Quest] = {}
        self._cancelled: set[str] = set()
        self._notifiers: dict[str, Notifier] = {}  # per session: its tool-call cards

    # -- the SDK's Agent interface --------------------------------------------------

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities()),
            ),
            agent_info=schema.Implementation(name="ds-events", title="ds-events quest", version=_version()),
        )

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        quest = await asyncio.to_thread(self._pick_or_create, cwd)
        return schema.NewSessionResponse(session_id=quest.id)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> schema.ListSessionsResponse:
        listed: schema.ListSessionsResponse = await self._call(list_sessions, self.home, cwd=cwd, cursor=cursor)
        return listed

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> schema.LoadSessionResponse:
        quest = await self._quest(session_id)
        self._notifiers[session_id] = Notifier(session_id)  # the whole history: fresh cards
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
        if self.fleet is not None:
            self.fleet.add(quest.id)
        await asyncio.to_thread(self._prime, quest, session_id, message.seq)
        end = await self._stream_turn(quest, session_id, after_seq=message.seq)
        if end.message:
            await self._say(session_id, end)
        meta = {META_KEY: {"run_id": end.run_id, "outcome": end.outcome, "message": end.message}}
        return schema.PromptResponse(stop_reason=end.stop_reason, field_meta=meta)

    async def cancel(self, session_id: str, **_: Any) -> None:
        quest = await self._quest(session_id)
        self._cancelled.add(session_id)
        with contextlib.suppress(ServiceError):  # already completed: nothing to pause
            await self._call(steering.control, quest, quest_service.Control(action="pause", reason="acp cancel"))

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None

    async def aclose(self) -> None:
        if self.fleet is not None:
            await self.fleet.close()
        self.close()

    def close(self) -> None:
        for quest in self._quests.values():
            quest.close()
        self._quests.clear()

    # -- private helpers ------------------------------------------------------------

    async def _stream_turn(self, quest: Quest, session_id: str, *, after_seq: int) -> PromptEnd:
        """Send every event after ``after_seq`` until the quest completes, pauses, goes
        quiet or has nothing more to run; then how the prompt ends."""
        queue: asyncio.Queue[Event] = asyncio.Queue()

        async def follow() -> None:
            async for event in quest.log.follow(after_seq=after_seq):
                queue.put_nowait(event)

        follower = asyncio.create_task(follow())
        running = False  # a turn of the quest runs: no quiet timeout then
        sent = after_seq
        try:
            while True:
                try:
                    timeout = None if running else self.quiet_seconds
                    event = await asyncio.wait_for(queue.get(), timeout=timeout)
                except TimeoutError:
                    if self._has_work(quest):
                        continue  # a retry or a queued turn is coming: keep streaming
                    break
                if event.seq <= sent:
                    continue  # already sent by the catch-up below
                await self._send(session_id, event)
                sent = event.seq
                if event.type == "runner.turn_started":
                    running = True
                elif event.type == "runner.turn_finished":
                    running = quest.state("turns").running is not None
                    if not running and self._nothing_to_run(quest):
                        break
                elif event.type in _TURN_ENDERS:
                    break
                elif event.type == "quest.control" and getattr(event, "action", "") in _PAUSES and not running:
                    break
            # What the log already holds past the last event sent (a retry or hold
            # appended with the turn's end) goes out before the answer.
            for event in await asyncio.to_thread(quest.log.read, sent):
                await self._send(session_id, event)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        turns = await asyncio.to_thread(quest.state, "turns")
        health = await asyncio.to_thread(quest_service.quest_health, quest)
        return prompt_end(
            turns, since_seq=after_seq, cancelled=session_id in self._cancelled, quest_id=quest.id,
            health=health.summary if health.state == "failed" else "",
        )  # fmt: skip

    @staticmethod
    def _nothing_to_run(quest: Quest) -> bool:
        """The quest is idle, or only a retry the prompt does not wait for is due."""
        status, turns, inbox = quest.state("status"), quest.state("turns"), quest.state("interactions")
        action = next_action(status.status, turns, inbox, archived=status.archived)
        return action.kind == "idle" or (action.kind == "retry" and not waits_for_retry(turns))

    @staticmethod
    def _has_work(quest: Quest) -> bool:
        """Whether a turn runs or a retry the prompt waits for is scheduled (then no quiet
        timeout ends the prompt; a queued message with no runner to take it does not count)."""
        state = quest.state("turns")
        if state.running is not None:
            return True
        return state.retry is not None and quest.state("status").status == "active" and waits_for_retry(state)

    def _prime(self, quest: Quest, session_id: str, until_seq: int) -> None:
        """Fold into the session's cards what it has not seen of a turn still running at
        ``until_seq`` (its later halves then find their cards)."""
        prime_cards(quest, self._notifiers.setdefault(session_id, Notifier(session_id)), until_seq=until_seq)

    async def _say(self, session_id: str, end: PromptEnd) -> None:
        """The agent's last message: why the prompt ends (no event of the log; its
        ``_meta`` says which turn it is about)."""
        update = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": end.message},
            "_meta": {META_KEY: {"stop_reason": end.stop_reason, "run_id": end.run_id, "outcome": end.outcome}},
        }
        parsed = schema.SessionNotification.model_validate({"sessionId": session_id, "update": update})
        await self.conn.session_update(session_id=session_id, update=parsed.update)

    async def _send(self, session_id: str, event: Event) -> None:
        note = self._notifiers.setdefault(session_id, Notifier(session_id)).notification(event)
        parsed = schema.SessionNotification.model_validate(note["params"])
        await self.conn.session_update(session_id=session_id, update=parsed.update)

    async def _quest(self, session_id: str) -> Quest:
        if session_id not in self._quests:
            try:
                self._quests[session_id] = await asyncio.to_thread(self.home.open_quest, session_id, actor="acp")
            except ServiceError as exc:
                raise acp.RequestError.invalid_params(exc.to_dict()) from None
        return self._quests[session_id]

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except ServiceError as exc:
            raise acp.RequestError.invalid_params(exc.to_dict()) from None

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


async def serve(
    home: Home,
    *,
    quest_id: str | None = None,
    quiet_seconds: float = DEFAULT_QUIET_SECONDS,
    turns: Mapping[str, Any] | None = None,
) -> None:
    """Run the agent on this process's stdin/stdout until the client disconnects."""
    agent = QuestAgent(home, quest_id=quest_id, quiet_seconds=quiet_seconds, turns=turns)
    try:
        # The SDK dispatches by getattr (a method the agent lacks answers method_not_found);
        # its Agent protocol lists every method, of which this agent implements a subset.
        await acp.run_agent(agent)  # type: ignore[arg-type]
    finally:
        await agent.aclose()
