"""``ds acp`` as a real process hosting scripted turns, driven by the ACP SDK's client:
one tool-call card per call (the agent's view and our server's record folded, with the
result), and the stop reason a prompt ends with for each way its turn ends — completed
(``end_turn``), failed with no retry left (``refusal``, the reason in the last message),
failed once then retried to completion (waits, ``end_turn``), cancelled (``cancelled``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import acp
from ds_events.home import Home, Quest
from tests.helpers import wait_until_async

from .test_agent_process import Recorder, agent_env, ds_acp

pytestmark = pytest.mark.timeout(180)


def trajectory(tmp_path: Path, *steps: dict[str, Any]) -> Path:
    path = tmp_path / "trajectory.yaml"
    path.write_text(yaml.safe_dump({"turns": [{"steps": list(steps)}]}), encoding="utf-8")
    return path


def retries(home: Home, max_attempts: int) -> None:
    """Attempts per turn, and a short backoff (the default waits seconds between them)."""
    runner = {"name": "scripted", "max_attempts": max_attempts, "backoff_seconds": 0.2, "backoff_max_seconds": 0.2}
    (home.root / "config.yaml").write_text(yaml.safe_dump({"runner": runner}), encoding="utf-8")


async def prompt_once(home: Home, traj: Path, text: str, recorder: Recorder, *, during: Any = None) -> Any:
    """One prompt to ``ds acp --runner scripted`` on quest q1; ``during(conn)`` runs beside it."""
    env = {**agent_env(home), "DS_ACP_QUIET_SECONDS": "120"}  # only the turns can end the prompt
    argv = ["--quest", "q1", "--runner", "scripted", "--trajectory", str(traj)]
    async with ds_acp(recorder, *argv, env=env) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await conn.new_session(cwd=str(home.root))
        turn = asyncio.create_task(conn.prompt(session_id="q1", prompt=[acp.text_block(text)]))
        if during is not None:
            await during(conn)
        return await asyncio.wait_for(turn, 150)


def updates(recorder: Recorder) -> list[dict[str, Any]]:
    return [n["params"]["update"] for n in recorder.notes]


def last_message(recorder: Recorder) -> dict[str, Any]:
    """The last notification: the agent's closing line (no event; its stop reason in _meta)."""
    last = updates(recorder)[-1]
    assert last["sessionUpdate"] == "agent_message_chunk", last
    assert "event" not in last["_meta"]["ds_events"] and last["_meta"]["ds_events"]["stop_reason"]
    return last


async def test_each_tool_call_of_a_real_turn_is_one_card_with_its_result(home: Home, quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(
        tmp_path,
        {"say": "writing it down"},
        {"call": "memory.write", "args": {"kind": "knowledge", "title": "Cards fold", "body": "one per call"}},
        {"call": "memory.write", "args": {"kind": "knowledge", "title": ""}, "expect": "error"},
        {"call": "bash_exec.bash_exec", "args": {"command": "echo card-$((6*7))", "mode": "await",
                                                "wait_timeout_seconds": 60}},
    )  # fmt: skip
    recorder = Recorder()
    answer = await prompt_once(home, traj, "note it", recorder)
    assert answer.stop_reason == "end_turn"

    log = quest.log.read()
    runner_calls = [e for e in log if e.type == "runner.tool_call"]
    records = [e for e in log if e.type.startswith("tool.call_")]
    assert len(runner_calls) == 3 and {e.call_id for e in records} and len({e.call_id for e in records}) == 3
    cards: dict[str, list[dict[str, Any]]] = {}
    for u in updates(recorder):
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(u["toolCallId"], []).append(u)
    # Three calls, three cards (the bash session the awaited call started is on its card).
    assert len(cards) == 3, {k: [(u["sessionUpdate"], u["_meta"]["ds_events"]["type"]) for u in v] for k, v in cards.items()}
    for card in cards.values():
        assert [u["sessionUpdate"] for u in card].count("tool_call") == 1 and card[0]["sessionUpdate"] == "tool_call"
        types = {u["_meta"]["ds_events"]["type"] for u in card}
        assert {"runner.tool_call", "runner.tool_result", "tool.call_finished"} <= types, types
    by_title = {card[0]["title"]: card for card in cards.values() if card[0]["title"] != "memory.write"}
    writes = [card for card in cards.values() if card[0]["title"] == "memory.write"]
    assert sorted(card[-1]["status"] for card in writes) == ["completed", "failed"]
    ok = next(card for card in writes if card[-1]["status"] == "completed")
    assert any("written" in c["content"]["text"] for u in ok for c in u.get("content", []))
    refused = next(card for card in writes if card[-1]["status"] == "failed")
    assert any("missing_title" in c["content"]["text"] or "title" in c["content"]["text"]
               for u in refused for c in u.get("content", []))  # fmt: skip
    (bash,) = by_title.values()
    assert {"bash.session_started", "bash.session_exited"} <= {u["_meta"]["ds_events"]["type"] for u in bash}
    assert bash[-1]["status"] == "completed"


async def test_a_turn_that_fails_with_no_retry_left_ends_in_refusal_saying_why(
    home: Home, quest: Quest, tmp_path: Path
) -> None:
    retries(home, max_attempts=2)
    traj = trajectory(tmp_path, {"say": "trying"}, {"fail": "the model API is down"})
    recorder = Recorder()
    answer = await prompt_once(home, traj, "go", recorder)
    assert answer.stop_reason == "refusal"
    finished = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert [e.outcome for e in finished] == ["failed", "failed"]  # the prompt waited for the retry
    said = last_message(recorder)["content"]["text"]
    assert said.startswith("The turn failed: exit 1: the model API is down") and "attempt 2" in said, said
    assert "quest health: failed: attempt 2 of 2" in said, said  # projections.health.derive's summary
    assert answer.field_meta["ds_events"]["run_id"] == finished[-1].run_id
    assert [e.type for e in recorder.events()].count("runner.turn_started") == 2


async def test_a_turn_that_fails_once_waits_for_its_retry_and_ends_with_its_outcome(
    home: Home, quest: Quest, tmp_path: Path
) -> None:
    retries(home, max_attempts=3)
    traj = trajectory(tmp_path, {"fail": "the model API is down", "attempts": 1}, {"say": "done on the retry"})
    recorder = Recorder()
    answer = await prompt_once(home, traj, "go", recorder)
    assert answer.stop_reason == "end_turn"
    finished = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert [e.outcome for e in finished] == ["failed", "completed"]
    types = [e.type for e in recorder.events()]
    assert types.index("runner.turn_retry_scheduled") < types.index("runner.agent_message")
    closing = [u for u in updates(recorder) if "stop_reason" in u.get("_meta", {}).get("ds_events", {})]
    assert closing == []  # a completed turn needs no closing line


async def test_a_cancelled_turn_ends_cancelled(home: Home, quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(tmp_path, {"say": "a long one"}, {"sleep": 60}, {"say": "never said"})

    async def cancel_once_running(conn: Any) -> None:
        await wait_until_async(lambda: any(e.type == "runner.agent_message" for e in quest.log.read()),
                               what="the turn under way", timeout=120)  # fmt: skip
        await conn.cancel(session_id="q1")

    recorder = Recorder()
    answer = await prompt_once(home, traj, "go", recorder, during=cancel_once_running)
    assert answer.stop_reason == "cancelled"
    (finished,) = [e for e in quest.log.read() if e.type == "runner.turn_finished"]
    assert (finished.outcome, finished.reason) == ("interrupted", "paused")


async def test_a_turn_paused_by_someone_else_ends_cancelled_saying_so(home: Home, quest: Quest, tmp_path: Path) -> None:
    traj = trajectory(tmp_path, {"say": "a long one"}, {"sleep": 60})

    async def pause_from_the_cli(conn: Any) -> None:
        await wait_until_async(lambda: any(e.type == "runner.agent_message" for e in quest.log.read()),
                               what="the turn under way", timeout=120)  # fmt: skip
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "ds_events", "control", "q1", "pause"],
            env=agent_env(home), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    recorder = Recorder()
    answer = await prompt_once(home, traj, "go", recorder, during=pause_from_the_cli)
    assert answer.stop_reason == "cancelled"
    said = last_message(recorder)["content"]["text"]
    assert said.startswith("The turn was paused") and "ds control q1 resume" in said, said
