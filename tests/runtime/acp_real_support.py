"""What the real-ACP-agent tests share: the pinned agents (installed on first use by
fixtures/install_agent.sh), a turn run by the daemon (``ds serve``) whose ACP-format SSE
stream is read as it goes, and the checks every agent's whole turn must pass."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from acp.schema import SessionNotification

from ds_events.bash import procs
from ds_events.home import Home, Quest
from tests.helpers import start_serve, wait_until
from tests.http.sse import frames

from .agents import agent_executable, processes_with

__all__ = [
    "agent_executable", "write_acp_config", "serve_one_turn", "check_whole_turn", "processes_with_env",
    "wait_for_no_processes", "BASH_ID", "TURN_TOOLS",
]  # fmt: skip

BASH_ID = re.compile(r"bx-[0-9a-f]{8}")
# The calls of every real agent's turn, in order: it reads memory, records an artifact,
# starts a shell job detached and awaits it, then answers.
TURN_TOOLS = ["memory.search", "artifact.record", "bash_exec.bash_exec", "bash_exec.bash_exec"]


def write_acp_config(home: Home, argv: list[str], **runner: Any) -> None:
    """``DS_HOME/config.yaml``: the acp runner with ``argv`` as the agent, one attempt."""
    section = {"name": "acp", "commands": {"acp": argv}, "max_attempts": 1, "stall_seconds": 300,
               "kill_grace_seconds": 5, **runner}  # fmt: skip
    (home.root / "config.yaml").write_text(yaml.safe_dump({"runner": section}), encoding="utf-8")


async def serve_one_turn(home: Home, quest: Quest, text: str, log: Path, *, timeout: float = 300) -> list[dict[str, Any]]:
    """``ds serve`` over ``home``; a message posted over HTTP starts a turn; the quest's
    ACP-format SSE stream is read from before the message until the turn's
    ``runner.turn_finished``. The frames' ``data`` (JSON-RPC notifications), in order."""
    start = quest.log.last_seq
    proc, port = start_serve(home, log=log)
    base = f"http://127.0.0.1:{port}/api/quests/{quest.id}"
    seen: list[dict[str, Any]] = []
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/events?stream=1&format=acp&after={start}") as stream:
                assert stream.status == 200, await stream.text()
                async with session.post(f"{base}/messages", json={"text": text}) as resp:
                    assert resp.status in (200, 201), await resp.text()
                async for frame in frames(stream, timeout=timeout):
                    assert frame["event"] == "acp", frame
                    seen.append(frame["data"])
                    if _meta(frame["data"])["type"] == "runner.turn_finished":
                        break
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return seen


def _meta(note: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = note["params"]["update"]["_meta"]["ds_events"]
    return meta


def check_whole_turn(quest: Quest, notes: list[dict[str, Any]], *, runner_command: list[str]) -> Any:
    """What every real agent's turn shows (the calls of :data:`TURN_TOOLS`): returns the
    turn's ``runner.turn_finished`` event."""
    # Every frame is a session/update an ACP client accepts, one per event, in log order.
    for note in notes:
        assert note["jsonrpc"] == "2.0" and note["method"] == "session/update"
        SessionNotification.model_validate(note["params"])
    seqs = [_meta(n)["seq"] for n in notes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    end = next(e for e in reversed(quest.log.read()) if e.type == "runner.turn_finished")
    assert (end.outcome, end.reason) == ("completed", ""), end
    run_id = end.run_id
    log = [e for e in quest.log.read() if e.run_id == run_id or e.type == "bash.session_exited"]
    assert seqs[-1] == end.seq and {e.seq for e in log if e.run_id == run_id} <= set(seqs)

    runner_events = [e for e in log if e.type.startswith("runner.")]
    kinds = [e.type for e in runner_events]
    assert kinds[:2] == ["runner.turn_started", "runner.process_started"] and kinds[-1] == "runner.turn_finished"
    started, process = runner_events[0], runner_events[1]
    assert started.runner == "acp" and process.command == runner_command
    calls = [e for e in runner_events if e.type == "runner.tool_call" and e.server]
    assert [c.tool for c in calls] == TURN_TOOLS, [(c.tool, c.server) for c in calls]
    assert [c.server for c in calls] == [t.split(".")[0] for t in TURN_TOOLS]
    results = {e.call_id: e for e in runner_events if e.type == "runner.tool_result"}
    assert all(results[c.call_id].status == "ok" for c in calls), [results[c.call_id] for c in calls]
    search, record, detach, wait = calls
    assert search.arguments["query"] and record.arguments["payload"]["kind"] == "idea"
    assert detach.arguments["mode"] == "detach" and wait.arguments["mode"] == "await"
    # The agent's view of each result is our server's answer, decoded.
    assert results[search.call_id].output["count"] == 1
    bash_id = results[detach.call_id].output["id"]
    assert BASH_ID.fullmatch(bash_id) and wait.arguments["id"] == bash_id  # the model read the id
    waited = results[wait.call_id].output
    assert (waited["id"], waited["status"], waited["done"]) == (bash_id, "completed", True)
    assert "warmup=500" in waited["log"]
    said = [e.text for e in runner_events if e.type == "runner.agent_message"]
    assert said and said[-1].startswith("Done")

    # Our servers' own records carry the turn's run id, and precede the agent's report.
    seq = {e.id: e.seq for e in log}
    finished = [e for e in log if e.type == "tool.call_finished"]
    assert [(f.namespace, f.tool, f.status) for f in finished] == [
        ("memory", "search", "ok"), ("artifact", "record", "ok"), ("bash_exec", "bash_exec", "ok"),
        ("bash_exec", "bash_exec", "ok"),
    ]  # fmt: skip
    for call, record_of in zip(calls, finished, strict=True):
        assert seq[call.id] < seq[results[call.call_id].id] and record_of.seq < seq[results[call.call_id].id]
    recorded = next(e for e in log if e.type == "artifact.recorded")
    assert recorded.run_id == run_id and recorded.kind == "idea"
    started_job = next(e for e in log if e.type == "bash.session_started")
    assert started_job.run_id == run_id and started_job.session_id == bash_id
    assert any(e.type == "bash.session_exited" and e.session_id == bash_id and e.exit_code == 0 for e in log)

    # The ACP stream shows each call as one card: the agent's view and our record folded.
    cards: dict[str, list[dict[str, Any]]] = {}
    for note in notes:
        update = note["params"]["update"]
        if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
            cards.setdefault(update["toolCallId"], []).append(update)
    ours = {k: v for k, v in cards.items() if v[0].get("title", "").split(".")[0] in ("memory", "artifact", "bash_exec")}
    assert sorted(v[0]["title"] for v in ours.values()) == sorted(TURN_TOOLS), {
        k: [(u.get("title"), u["_meta"]["ds_events"]["type"]) for u in v] for k, v in cards.items()
    }
    for card in ours.values():
        assert [u["sessionUpdate"] for u in card] == ["tool_call"] + ["tool_call_update"] * (len(card) - 1)
        types = {u["_meta"]["ds_events"]["type"] for u in card}
        assert {"runner.tool_call", "runner.tool_result", "tool.call_finished"} <= types, types
        assert card[-1]["status"] == "completed"

    assert end.tool_calls >= len(TURN_TOOLS) and end.messages >= 1
    assert not procs.group_alive(process.pgid)
    wait_for_no_processes(f"DS_RUN_ID={run_id}")  # the agent's MCP servers too
    return end


def processes_with_env(entry: str) -> list[int]:
    """Pids of live processes whose environment holds ``entry`` (``NAME=value``)."""
    return processes_with(entry.encode() + b"\x00", where="environ")


def wait_for_no_processes(entry: str, timeout: float = 30) -> None:
    wait_until(lambda: not processes_with_env(entry), timeout=timeout, what=f"no process with {entry}")
