"""Real ACP agents through the ``acp`` runner and the real scheduler, each pinned by
fixtures/install_agent.sh and run against a scripted model endpoint on loopback: Zed's
``codex-acp`` against the Responses-API server (fixtures/responses_server.py; it reads
its model provider from ``$CODEX_HOME/config.toml``, as Codex does), Gemini CLI's ACP
mode against fixtures/gemini_server.py, and Zed's ``claude-agent-acp`` against the
Anthropic Messages server (fixtures/anthropic_server.py; it runs Claude Code, which
takes the endpoint from the environment). Our three MCP servers reach each agent in
``session/new``.

Each turn is one short script that plays the model as a model would play it: it reads
memory (``memory.search`` finds the card the test wrote), records an idea
(``artifact.record``), starts a shell job detached and awaits it by the id it was given
(``bash_exec``), and answers."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from ds_events.bash import procs
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.runners import scheduler_for
from ds_events.services import quest as quest_service
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.commands import WriteCard
from ds_events.services.runtime import steering
from tests.helpers import wait_until_async

from .acp_real_support import (
    BASH_ID,
    agent_executable,
    check_whole_turn,
    processes_with_env,
    serve_one_turn,
    wait_for_no_processes,
    write_acp_config,
)  # fmt: skip
from .agents import fixture_module
from .claude_support import anthropic_server, claude_env
from .codex_support import SCRIPTED_MODEL, responses_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


# -- codex-acp --------------------------------------------------------------------------


def codex_acp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_url: str) -> Path:
    """A ``CODEX_HOME`` whose config.toml points codex-acp at the scripted endpoint (no
    retries, nothing sent anywhere else); the agent gets it through the environment."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "{SCRIPTED_MODEL}"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n"
        "\n[model_providers.scripted]\n"
        f'name = "scripted"\nbase_url = "{base_url}"\nwire_api = "responses"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n"
        "\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n"
        '\n[history]\npersistence = "none"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def whole_turn_script(command: str, *, answer: bool = True) -> list[dict[str, Any]]:
    """search, record, detach ``command``, await it (its id filled in by :func:`reads_the_bash_id`), answer."""
    script = [
        {"items": [{"think": "See what the quest already knows."},
                   {"call": "mcp__memory__search", "call_id": "call_search", "arguments": {"query": "warmup divergence"}}],
         "usage": {"input_tokens": 300, "output_tokens": 20}},
        {"items": [{"call": "mcp__artifact__record", "call_id": "call_record",
                    "arguments": {"payload": {"kind": "idea", "title": "Longer warmup for the small model"}}}],
         "usage": {"input_tokens": 400, "output_tokens": 20}},
        {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "call_detach",
                    "arguments": {"command": command, "mode": "detach"}}],
         "usage": {"input_tokens": 500, "output_tokens": 20}},
        {"items": [{"call": "mcp__bash_exec__bash_exec", "call_id": "call_await",
                    "arguments": {"mode": "await", "id": "", "wait_timeout_seconds": 600}}],
         "usage": {"input_tokens": 600, "output_tokens": 20}},
    ]  # fmt: skip
    if answer:
        script.append({"items": [{"say": "Done: the warmup card read, the idea recorded, the job ran."}],
                       "usage": {"input_tokens": 700, "output_tokens": 15}})  # fmt: skip
    return script


def reads_the_bash_id(server: Any, outputs: Any = None) -> Any:
    """The scripted model's await names the session id that the detach call returned to it
    (from the call outputs the agent sent back: ``outputs(body)``, by call id; Codex's
    ``function_call_output`` by default), as a model would."""
    outputs = outputs or responses_server().function_outputs

    def hook(n: int, body: dict[str, Any]) -> None:
        output = outputs(body).get("call_detach")
        if output is None or not server.script:
            return
        for item in server.script[0].get("items", []):
            if item.get("call_id") == "call_await" and not item["arguments"]["id"]:
                found = BASH_ID.search(json.dumps(output))
                assert found, output
                item["arguments"]["id"] = found.group()

    return hook


def traffic(quest: Quest, run_id: str, way: str = "") -> list[dict[str, Any]]:
    """The turn's JSON-RPC messages as the runner kept them: both ways, or only ``way``
    (``in``: from the agent, ``out``: to it)."""
    text = (quest.root / ".ds" / "runs" / run_id / "acp.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    return [line["msg"] for line in lines if way in ("", line["dir"])]


def check_session_traffic(quest: Quest, run_id: str) -> None:
    """The JSON-RPC traffic of a turn with an agent that offers session/close: our servers
    in session/new, every permission asked for allowed, the session closed after the prompt."""
    rpc = traffic(quest, run_id)
    new = next(m for m in rpc if m.get("method") == "session/new")
    assert sorted(s["name"] for s in new["params"]["mcpServers"]) == ["artifact", "bash_exec", "memory"]
    # Request ids are per sender: the agent's requests are answered by what we sent.
    asked = [m for m in traffic(quest, run_id, "in") if m.get("method") == "session/request_permission"]
    answers = {m["id"]: m["result"] for m in traffic(quest, run_id, "out") if "result" in m and any(a["id"] == m["id"] for a in asked)}
    assert asked and all(a["outcome"]["outcome"] == "selected" for a in answers.values()) and len(answers) == len(asked)
    assert [m.get("method") for m in rpc if m.get("method") in ("session/prompt", "session/close")] == [
        "session/prompt", "session/close",
    ]  # fmt: skip


def seed_memory(quest: Quest) -> None:
    mem = MemoryContext(quest=quest, actor="test")
    try:
        memory_service.write(mem, WriteCard(kind="knowledge", title="Warmup avoids early divergence",
                                            body="500 warmup steps kept the loss finite."))  # fmt: skip
    finally:
        mem.close()


async def test_codex_acp_runs_a_whole_turn_through_the_daemon_and_its_acp_stream_validates(
    home: Home, quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("codex-acp")
    seed_memory(quest)
    server_module = responses_server()
    async with server_module.ResponsesServer(whole_turn_script("echo warmup=500")) as server:
        server.on_request = reads_the_bash_id(server)
        codex_acp_home(tmp_path, monkeypatch, server.base_url)
        write_acp_config(home, [exe])
        notes = await serve_one_turn(home, quest, "Record the warmup idea and run the check.", tmp_path / "serve.log")
    end = check_whole_turn(quest, notes, runner_command=[exe])
    assert end.exit_code is None  # codex-acp does not exit at EOF: signalled after session/close

    # The model saw our three servers as tool namespaces and got every call's output back.
    assert len(server.requests) == 5 and server.exhausted == 0 and server.unoffered == [], server.other_requests
    offered = server_module.offered_tools(server.requests[0])
    assert {"mcp__memory__search", "mcp__artifact__record", "mcp__bash_exec__bash_exec"} <= set(offered)
    outputs = server_module.function_outputs(server.requests[-1])
    assert set(outputs) == {"call_search", "call_record", "call_detach", "call_await"}
    assert "Warmup avoids early divergence" in json.dumps(outputs["call_search"])

    check_session_traffic(quest, end.run_id)


async def test_pausing_codex_acp_while_a_bash_await_runs_ends_its_process_group(
    quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("codex-acp")
    seed_memory(quest)
    seconds = f"300.{random.randrange(10**6):06d}"  # a sleep no other process runs
    quest_service.post_message(quest, quest_service.PostMessage(text="Run the long check."), source="cli")
    async with responses_server().ResponsesServer(whole_turn_script(f"sleep {seconds}", answer=False)) as server:
        server.on_request = reads_the_bash_id(server)
        codex_acp_home(tmp_path, monkeypatch, server.base_url)
        write_acp_config(quest.home, [exe])
        await pause_while_awaiting(quest)
    assert len(server.requests) == 4  # the model never heard back from the await


async def pause_while_awaiting(quest: Quest) -> None:
    """Run the quest's turn with the real scheduler; once the agent's ``bash_exec`` await
    is running in our server, pause the quest (as ``ds control`` does): the turn ends
    interrupted, and the agent's process group, its MCP servers and the job are gone."""
    task = asyncio.create_task(scheduler_for(quest).run_until_idle())

    def awaiting() -> Any:
        return next((e for e in quest.log.read() if e.type == "tool.call_started" and e.namespace == "bash_exec"), None)

    started = await wait_until_async(awaiting, timeout=300, what="the agent's bash_exec await to be running")
    process = next(e for e in quest.log.read() if e.type == "runner.process_started")
    assert procs.group_alive(process.pgid) and processes_with_env(f"DS_RUN_ID={started.run_id}")
    await asyncio.to_thread(steering.control, quest, quest_service.Control(action="pause", reason="test"))
    finished = await asyncio.wait_for(task, timeout=120)
    assert [(f.outcome, f.reason) for f in finished] == [("interrupted", "paused")]
    assert not procs.group_alive(process.pgid)
    wait_for_no_processes(f"DS_RUN_ID={started.run_id}")  # the agent, its MCP servers, the job
    log = quest.log.read()
    job = next(e for e in log if e.type == "bash.session_started")
    assert any(e.type == "bash.session_exited" and e.session_id == job.session_id and e.status == "terminated" for e in log)
    # The pause's TERM reached the group (ds control signals it, whichever process runs
    # the turn): the prompt never ended by itself.
    rpc = traffic(quest, started.run_id)
    assert not any((m.get("result") or {}).get("stopReason") == "end_turn" for m in rpc)


# -- Gemini CLI -------------------------------------------------------------------------


def gemini_server() -> Any:
    """The ``fixtures/gemini_server.py`` module."""
    return fixture_module("gemini_server")


def gemini_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """Point the Gemini CLI at the scripted endpoint: ``GOOGLE_GEMINI_BASE_URL`` (it then
    authenticates as a gateway, no key), a home of its own, the quest trusted (an untrusted
    folder gets no MCP servers), and a fixed model (``auto`` first asks a router model to
    score the prompt)."""
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", base_url)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    monkeypatch.setenv("GEMINI_MODEL", "gemini-2.5-pro")


def gemini_script(command: str, *, answer: bool = True) -> list[dict[str, Any]]:
    """:func:`whole_turn_script` in the Gemini server's terms (tools named ``server.tool``)."""
    script = [
        {"items": [{"think": "See what the quest already knows."},
                   {"call": "memory.search", "arguments": {"query": "warmup divergence"}}],
         "usage": {"input_tokens": 300, "output_tokens": 20}},
        {"items": [{"call": "artifact.record", "arguments": {"payload": {"kind": "idea", "title": "Longer warmup for the small model"}}}],
         "usage": {"input_tokens": 400, "output_tokens": 20}},
        {"items": [{"call": "bash_exec.bash_exec", "arguments": {"command": command, "mode": "detach"}}],
         "usage": {"input_tokens": 500, "output_tokens": 20}},
        {"items": [{"call": "bash_exec.bash_exec", "arguments": {"mode": "await", "id": "", "wait_timeout_seconds": 600}}],
         "usage": {"input_tokens": 600, "output_tokens": 20}},
    ]  # fmt: skip
    if answer:
        script.append({"items": [{"say": "Done: the warmup card read, the idea recorded, the job ran."}],
                       "usage": {"input_tokens": 700, "output_tokens": 15}})  # fmt: skip
    return script


def gemini_reads_the_bash_id(server: Any) -> Any:
    """As :func:`reads_the_bash_id`, from the ``functionResponse`` the CLI sent back."""

    def hook(n: int, body: dict[str, Any]) -> None:
        if not server.script:
            return
        for item in server.script[0].get("items", []):
            if item.get("call") == "bash_exec.bash_exec" and item["arguments"].get("id") == "":
                outputs = gemini_server().function_outputs(body)
                found = BASH_ID.search(json.dumps(list(outputs.values())[-1]))
                assert found, outputs
                item["arguments"]["id"] = found.group()

    return hook


async def test_gemini_cli_runs_a_whole_turn_through_the_daemon_and_its_acp_stream_validates(
    home: Home, quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("gemini")
    seed_memory(quest)
    module = gemini_server()
    async with module.GeminiServer(gemini_script("echo warmup=500")) as server:
        server.on_request = gemini_reads_the_bash_id(server)
        gemini_env(tmp_path, monkeypatch, server.base_url)
        write_acp_config(home, [exe, "--acp"])
        notes = await serve_one_turn(home, quest, "Record the warmup idea and run the check.", tmp_path / "serve.log")
    check_whole_turn(quest, notes, runner_command=[exe, "--acp"])
    # The model was offered our tools under Gemini's names and got every answer back.
    assert len(server.requests) == 5 and server.exhausted == 0 and server.unoffered == [], server.other_requests
    offered = module.offered_tools(server.requests[0])
    assert {"memory.search", "artifact.record", "bash_exec.bash_exec"} <= set(offered)
    assert offered["bash_exec.bash_exec"] == "mcp_bash_exec_bash_exec"
    answers = json.dumps(module.function_outputs(server.requests[-1]))
    assert "Warmup avoids early divergence" in answers and "idea-0001" in answers


async def test_pausing_gemini_cli_while_a_bash_await_runs_ends_its_process_group(
    quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("gemini")
    seed_memory(quest)
    seconds = f"300.{random.randrange(10**6):06d}"
    quest_service.post_message(quest, quest_service.PostMessage(text="Run the long check."), source="cli")
    async with gemini_server().GeminiServer(gemini_script(f"sleep {seconds}", answer=False)) as server:
        server.on_request = gemini_reads_the_bash_id(server)
        gemini_env(tmp_path, monkeypatch, server.base_url)
        write_acp_config(quest.home, [exe, "--acp"])
        await pause_while_awaiting(quest)
    assert len(server.requests) == 4  # the model never heard back from the await


# -- claude-agent-acp -------------------------------------------------------------------


def point_claude_agent_acp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """claude-agent-acp runs Claude Code through its Agent SDK (``node`` on the SDK's own
    ``cli.js``, Claude Code 2.1.83 in SDK 0.2.83, not the pinned ``claude`` CLI, unless
    ``CLAUDE_CODE_EXECUTABLE`` names another) with the agent's whole
    environment: the variables that point Claude Code itself at the scripted endpoint
    reach it, in the classic layout (every tool offered in full). Its permission mode is
    ``default``: it asks us for each call, and the runner allows."""
    for key, value in claude_env(base_url, tmp_path / "claude-config", "classic").items():
        monkeypatch.setenv(key, value)


async def test_claude_agent_acp_runs_a_whole_turn_through_the_daemon_and_its_acp_stream_validates(
    home: Home, quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("claude-agent-acp")
    seed_memory(quest)
    module = anthropic_server()
    async with module.AnthropicServer(whole_turn_script("echo warmup=500")) as server:
        server.on_request = reads_the_bash_id(server, module.tool_results)
        point_claude_agent_acp(tmp_path, monkeypatch, server.base_url)
        write_acp_config(home, [exe])
        notes = await serve_one_turn(home, quest, "Record the warmup idea and run the check.", tmp_path / "serve.log")
    end = check_whole_turn(quest, notes, runner_command=[exe])
    assert end.exit_code == 0  # it exits at EOF once its session is closed
    assert (end.usage["input_tokens"], end.usage["output_tokens"]) == (2500, 95)  # the script's, summed by the agent

    # The model was offered our tools under Claude Code's names and got every answer back.
    assert len(server.requests) == 5 and server.exhausted == 0 and server.unoffered == [], server.other_requests
    assert set(server.layouts) == {"classic"} and server.searches == []
    assert {"mcp__memory__search", "mcp__artifact__record", "mcp__bash_exec__bash_exec"} <= set(
        module.offered_tools(server.requests[0])
    )
    answers = module.tool_results(server.requests[-1])
    assert set(answers) == {"call_search", "call_record", "call_detach", "call_await"}
    assert "Warmup avoids early divergence" in json.dumps(answers["call_search"])

    # Each call was announced before its input was known (rawInput {}), which the runner
    # waited out: check_whole_turn saw every call's arguments.
    rpc = traffic(quest, end.run_id)
    announced = [m["params"]["update"] for m in rpc if m.get("method") == "session/update"
                 and m["params"]["update"]["sessionUpdate"] == "tool_call"]  # fmt: skip
    assert [(u["toolCallId"], u["rawInput"]) for u in announced] == [
        ("call_search", {}), ("call_record", {}), ("call_detach", {}), ("call_await", {}),
    ]  # fmt: skip
    check_session_traffic(quest, end.run_id)


async def test_pausing_claude_agent_acp_while_a_bash_await_runs_ends_its_process_group(
    quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = agent_executable("claude-agent-acp")
    seed_memory(quest)
    seconds = f"300.{random.randrange(10**6):06d}"
    quest_service.post_message(quest, quest_service.PostMessage(text="Run the long check."), source="cli")
    module = anthropic_server()
    async with module.AnthropicServer(whole_turn_script(f"sleep {seconds}", answer=False)) as server:
        server.on_request = reads_the_bash_id(server, module.tool_results)
        point_claude_agent_acp(tmp_path, monkeypatch, server.base_url)
        write_acp_config(quest.home, [exe])
        await pause_while_awaiting(quest)
    assert len(server.requests) == 4  # the model never heard back from the await
