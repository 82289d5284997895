"""``ds acp`` as a real process, driven by the ACP SDK's client side: initialize, a new
session, a prompt (the message lands in the log; updates arrive, including events another
process appends during the turn), load replays the history, cancel pauses."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.stdio import spawn_agent_process

import acp
from acp import schema
from ds_events.home import Home
from projections.acp import from_notification
from tests.helpers import wait_until_async

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)


class Recorder:
    """The client side: keeps every session/update it receives."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        note = schema.SessionNotification(session_id=session_id, update=update)
        self.notes.append({"params": note.model_dump(by_alias=True, exclude_none=True)})

    async def request_permission(self, *_: Any, **__: Any) -> Any:  # pragma: no cover - never asked
        raise acp.RequestError.method_not_found("session/request_permission")

    def on_connect(self, conn: Any) -> None:
        pass

    def events(self) -> list:
        """The events the notifications carry (the agent's closing line carries none)."""
        return [from_notification(n) for n in self.notes if "event" in n["params"]["update"].get("_meta", {}).get("ds_events", {})]


def agent_env(home: Home, quiet: float = 1.0) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "DS_HOME": str(home.root), "DS_ACP_QUIET_SECONDS": str(quiet)}


def ds_acp(client: Any, *args: str, env: dict[str, str]) -> Any:
    """``ds acp ARGS`` as an editor starts it, through the SDK's client side. Its stderr
    goes where the test's goes (captured, shown on a failure): the SDK's default is a pipe
    nobody reads, which a process ended by its shutdown's SIGTERM leaves open for the
    garbage collector to complain of in a later test."""
    return spawn_agent_process(
        client, sys.executable, "-m", "ds_events", "acp", *args, env=env, transport_kwargs={"stderr": None}
    )


async def test_new_session_prompt_streams_the_turn_and_load_replays_history(home: Home, quest) -> None:
    recorder = Recorder()
    async with ds_acp(recorder, "--quest", "q1", "--no-turns", env=agent_env(home, quiet=8.0)) as (conn, _proc):  # fmt: skip
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.agent_capabilities.load_session is True
        session = await conn.new_session(cwd=str(home.root))
        assert session.session_id == "q1"

        # Another process appends during the turn: the stream shows it live.
        async def message_from_elsewhere() -> None:
            # After the prompt's message is in the log, so this one belongs to the turn.
            await wait_until_async(lambda: any(e.type == "conversation.message" for e in quest.log.read()),
                                   what="the prompt's message in the log")  # fmt: skip
            env = agent_env(home)
            await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "ds_events", "message", "q1", "--role", "assistant", "from the side"],
                env=env, check=True, capture_output=True, timeout=60,
            )  # fmt: skip

        side = asyncio.create_task(message_from_elsewhere())
        answer = await conn.prompt(session_id="q1", prompt=[acp.text_block("please check the baseline")])
        await side
        assert answer.stop_reason == "end_turn"  # no turn ran (--no-turns): nothing failed

    log_events = quest.log.read()
    users = [e for e in log_events if e.type == "conversation.message" and e.role == "user"]
    assert [(e.content, e.source) for e in users] == [("please check the baseline", "acp")]
    streamed = recorder.events()
    side_note = next(n for n in recorder.notes if from_notification(n).type == "conversation.message")
    assert side_note["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    assert side_note["params"]["update"]["content"]["text"] == "from the side"
    seqs = [e.seq for e in streamed]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
    assert all(e in log_events for e in streamed)

    # A second client loads the session: the whole history arrives, in order.
    replay = Recorder()
    async with ds_acp(replay, env=agent_env(home)) as (conn, _p):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.load_session(cwd=str(home.root), session_id="q1")
    assert replay.events() == quest.log.read()
    kinds = {n["params"]["update"]["sessionUpdate"] for n in replay.notes}
    assert {"user_message_chunk", "session_info_update"} <= kinds


async def test_cancel_pauses_the_quest_and_ends_the_turn(home: Home, quest) -> None:
    recorder = Recorder()
    env = {**agent_env(home), "DS_ACP_QUIET_SECONDS": "60"}  # only the pause can end this turn
    async with ds_acp(recorder, env=env) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.load_session(cwd=str(home.root), session_id="q1")
        turn = asyncio.create_task(conn.prompt(session_id="q1", prompt=[acp.text_block("go")]))
        await wait_until_async(lambda: any(e.type == "conversation.message" for e in quest.log.read()),
                               what="the prompt's message in the log")  # fmt: skip
        await conn.cancel(session_id="q1")
        answer = await asyncio.wait_for(turn, timeout=120)  # the pause ends the agent's group: seconds, many more under load
    assert answer.stop_reason == "cancelled"
    assert quest.state("status").status == "paused"
    assert any(e.type == "quest.control" and e.action == "pause" for e in recorder.events())


async def test_an_unknown_session_is_refused_with_our_error(home: Home) -> None:
    async with ds_acp(Recorder(), env=agent_env(home)) as (conn, _p):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        with pytest.raises(acp.RequestError) as caught:
            await conn.load_session(cwd=str(home.root), session_id="nope")
    assert caught.value.data["error"] == "unknown_quest"
    assert home.quest_ids() == []


async def test_a_new_session_without_quest_creates_one(home: Home) -> None:
    async with ds_acp(Recorder(), env=agent_env(home)) as (conn, _p):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd="/somewhere/my-project")
    assert home.quest_ids() == [session.session_id]


async def test_a_prompt_runs_a_turn_and_ends_when_the_turn_ends(home: Home, quest, tmp_path: Path) -> None:
    traj = tmp_path / "t.yaml"
    traj.write_text(
        "turns:\n  - steps:\n      - say: 'on it'\n      - call: memory.write\n"
        "        args: {kind: knowledge, title: 'ACP turn note', body: 'written during an editor prompt'}\n"
    )
    recorder = Recorder()
    env = {**agent_env(home), "DS_ACP_QUIET_SECONDS": "120"}  # only the turn's end can end this prompt
    argv = ["--quest", "q1", "--runner", "scripted", "--trajectory", str(traj)]
    async with ds_acp(recorder, *argv, env=env) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.new_session(cwd=str(home.root))
        answer = await asyncio.wait_for(conn.prompt(session_id="q1", prompt=[acp.text_block("scout please")]), 90)
    assert answer.stop_reason == "end_turn"
    types = [e.type for e in recorder.events()]
    assert types.index("runner.turn_started") < types.index("runner.agent_message") < types.index("memory.card_written")
    assert types[-1] == "runner.turn_finished"
    kinds = [n["params"]["update"]["sessionUpdate"] for n in recorder.notes]
    assert "agent_message_chunk" in kinds and "tool_call" in kinds and "tool_call_update" in kinds
    finished = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert [e.outcome for e in finished] == ["completed"]
