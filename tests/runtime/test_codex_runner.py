"""The codex runner: its CODEX_HOME config, its reading of Codex's JSON stream (recorded
from the real CLI), and the real Codex CLI end to end against a scripted Responses-API
endpoint on loopback, through the scheduler and through ``ds run``."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from ds_events.config import CodexProviderConfig, RunnerConfig, parse_config
from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.runners import codex as codex_module, make_runner, scheduler_for
from ds_events.runners.codex import CodexRunner, _toml, codex_home, render_config
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering, turns as turns
from ds_events.services.runtime.commands import Action, TurnSpec
from ds_events.services.runtime.turns import MCP_NAMESPACES, Host, TurnRecorder
from tests.helpers import DS, ds_env, wait_until_async

from .agents import processes_with
from .codex_support import CODEX_FIXTURES, SCRIPTED_MODEL, codex_executable, responses_server, write_runner_config

RUNNER_TYPES = ("runner.agent_message", "runner.reasoning", "runner.tool_call", "runner.tool_result")


# -- helpers ----------------------------------------------------------------------------


def claim(quest: Quest, text: str = "Record the warmup finding.") -> TurnSpec:
    """A real turn of ``quest``, claimed as the scheduler claims it."""
    quest_service.post_message(quest, quest_service.PostMessage(text=text), source="cli")
    spec = turns.claim_turn(
        quest, runner="codex", model="", host=Host.this_process(), build_prompt=lambda q, r: "the prompt",
        action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    return spec


def play(quest: Quest, spec: TurnSpec, stream: Path) -> tuple[CodexRunner, TurnRecorder, list[Any]]:
    """Feed a recorded Codex stream, line by line, to a codex runner and a real recorder;
    returns the turn's runner.* events as appended."""
    runner = CodexRunner(RunnerConfig())
    recorder = TurnRecorder(quest, spec.run_id, runner="codex")
    for line in stream.read_text(encoding="utf-8").splitlines():
        runner.handle(json.loads(line), recorder)
    events = [e for e in quest.log.read() if e.type in RUNNER_TYPES and e.run_id == spec.run_id]
    return runner, recorder, events


def spec_for(quest: Quest, **changes: Any) -> TurnSpec:
    base = dict(
        quest_id=quest.id, quest_root=str(quest.root), home=str(quest.home.root), run_id="run-" + "a" * 32,
        run_dir=str(quest.root / ".ds" / "runs" / ("run-" + "a" * 32)), prompt="p", prompt_path="", skill="scout",
        runner="codex", model="", env={"DS_HOME": str(quest.home.root), "DS_QUEST_ID": quest.id},
    )  # fmt: skip
    base.update(changes)
    return TurnSpec(**base)


# -- the stream -------------------------------------------------------------------------


def test_a_recorded_codex_stream_becomes_the_turns_events_in_order(quest: Quest) -> None:
    spec = claim(quest)
    runner, recorder, events = play(quest, spec, CODEX_FIXTURES / "stream.jsonl")
    shape = [
        (e.type, getattr(e, "tool", None) or getattr(e, "status", None) or getattr(e, "text", None)) for e in events
    ]
    assert shape == [
        ("runner.agent_message", "Looking at what the quest already knows."),
        ("runner.reasoning", "Search memory before writing anything."),
        ("runner.tool_call", "memory.search"),
        ("runner.tool_result", "ok"),
        ("runner.tool_call", "memory.write"),
        ("runner.tool_result", "ok"),
        ("runner.tool_call", "memory.write"),
        ("runner.tool_result", "error"),  # our server refused it: missing_title
        ("runner.tool_call", "shell"),
        ("runner.tool_result", "ok"),
        ("runner.tool_call", "shell"),
        ("runner.tool_result", "error"),  # exit 3
        ("runner.tool_call", "artifact.interact"),
        ("runner.tool_result", "ok"),
        ("runner.agent_message", "Done: one knowledge card written, progress sent."),
    ]
    calls = {e.call_id: e for e in events if e.type == "runner.tool_call"}
    results = {e.call_id: e for e in events if e.type == "runner.tool_result"}
    assert set(calls) == set(results) and len(calls) == 6
    write = next(e for e in calls.values() if e.tool == "memory.write")
    assert write.server == "memory"
    assert write.arguments == {"kind": "knowledge", "title": "Warmup avoids early divergence",
                               "body": "500 warmup steps kept the loss finite."}  # fmt: skip
    assert results[write.call_id].output["status"] == "written"  # the structured content
    refused = [r for r in results.values() if r.status == "error" and calls[r.call_id].tool == "memory.write"]
    assert refused[0].output == {"error": "missing_title", "message": "a card needs a non-empty title"}
    shell = [e for e in calls.values() if e.tool == "shell"]
    assert shell[0].server == "" and "echo warmup=500" in shell[0].arguments["command"]
    assert results[shell[0].call_id].output == {"exit_code": 0, "output": "warmup=500\n"}
    assert results[shell[1].call_id].output["exit_code"] == 3
    # turn.completed's usage (Codex sums the turn's model requests) is the turn's usage.
    assert recorder.usage == {"input_tokens": 4600, "cached_input_tokens": 800, "cache_write_input_tokens": 0,
                              "output_tokens": 125, "reasoning_output_tokens": 0}  # fmt: skip
    assert recorder.messages == 2 and recorder.tool_calls == 6
    assert runner.thread_id and runner.succeeded(0)
    assert runner.warnings and "Model metadata" in runner.warnings[0]  # an error item is not a failure


def test_a_recorded_failed_codex_stream_fails_the_turn_with_codexs_message(quest: Quest) -> None:
    spec = claim(quest)
    runner, recorder, events = play(quest, spec, CODEX_FIXTURES / "stream_failed.jsonl")
    assert [e.type for e in events] == ["runner.agent_message", "runner.tool_call", "runner.tool_result"]
    assert runner.failure == "stream disconnected before completion: the scripted model is overloaded"
    assert not runner.succeeded(1) and not runner.succeeded(0)
    assert recorder.usage == {}


def test_an_error_line_that_a_completed_turn_follows_was_a_retry_not_a_failure(quest: Quest) -> None:
    # Codex reports a transient stream error (it then reconnects) as an ``error`` line;
    # only turn.failed, or an error with no turn.completed after it, fails the turn.
    runner = CodexRunner(RunnerConfig())
    recorder = TurnRecorder(quest, claim(quest).run_id, runner="codex")
    runner.handle({"type": "error", "message": "Reconnecting... 1/5"}, recorder)
    assert not runner.succeeded(0)
    runner.handle({"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 1}}, recorder)
    assert runner.succeeded(0) and recorder.usage == {"input_tokens": 5, "output_tokens": 1}


def test_items_seen_only_at_completion_still_record_a_call_and_its_result(quest: Quest) -> None:
    # file_change items come as item.completed only (exec_events.rs); todo lists are plans.
    spec = claim(quest)
    runner = CodexRunner(RunnerConfig())
    recorder = TurnRecorder(quest, spec.run_id, runner="codex")
    change = {"id": "item_4", "type": "file_change", "changes": [{"path": "notes.md", "kind": "add"}], "status": "completed"}
    runner.handle({"type": "item.completed", "item": change}, recorder)
    todo = {"id": "item_5", "type": "todo_list", "items": [{"text": "baseline", "completed": True}, {"text": "ablate", "completed": False}]}
    runner.handle({"type": "item.completed", "item": todo}, recorder)
    runner.handle({"type": "item.started", "item": {"id": "item_6", "type": "agent_message", "text": "partial"}}, recorder)
    runner.handle({"type": "something.new", "x": 1}, recorder)  # a later Codex's line: ignored
    events = [e for e in quest.log.read() if e.type in RUNNER_TYPES and e.run_id == spec.run_id]
    assert [(e.type, getattr(e, "tool", "")) for e in events] == [
        ("runner.tool_call", "file_change"), ("runner.tool_result", ""), ("runner.reasoning", ""),
    ]  # fmt: skip
    assert events[0].arguments == {"changes": [{"path": "notes.md", "kind": "add"}]} and events[1].status == "ok"
    assert events[2].text == "- [x] baseline\n- [ ] ablate"


# -- the isolated CODEX_HOME ------------------------------------------------------------


def test_config_toml_registers_our_three_servers_with_the_quest_in_their_env(
    quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "no-login"))  # never the real user's
    spec = spec_for(quest)
    runner = CodexRunner(RunnerConfig())
    home = runner.prepare_home(spec)
    assert home == quest.root / ".ds" / "codex-home"
    config = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    assert set(config["mcp_servers"]) == set(MCP_NAMESPACES)
    for namespace in MCP_NAMESPACES:
        server = config["mcp_servers"][namespace]
        assert server["command"] == sys.executable
        assert server["args"] == ["-m", "ds_events", "mcp", "--namespace", namespace]
        assert {k: server["env"][k] for k in ("DS_HOME", "DS_QUEST_ID", "DS_RUN_ID")} == {
            "DS_HOME": str(quest.home.root), "DS_QUEST_ID": quest.id, "DS_RUN_ID": spec.run_id,
        }  # fmt: skip
        assert server["required"] is True
        assert server["default_tools_approval_mode"] == "approve"
        assert server["tool_timeout_sec"] >= 60
    assert config["approval_policy"] == "never" and config["sandbox_mode"] == "workspace-write"
    assert "model_provider" not in config and "model_providers" not in config  # Codex's default
    assert config["analytics"] == {"enabled": False}


def test_a_configured_provider_is_a_responses_api_model_provider(quest: Quest) -> None:
    provider = CodexProviderConfig(name="gw", base_url="http://127.0.0.1:9/v1", env_key="GW_KEY",
                                   request_max_retries=2, stream_max_retries=0)  # fmt: skip
    text = render_config(spec_for(quest), RunnerConfig(codex_provider=provider, codex_sandbox="read-only"))
    config = tomllib.loads(text)
    assert config["model_provider"] == "gw" and config["sandbox_mode"] == "read-only"
    assert config["model_providers"]["gw"] == {
        "name": "gw", "base_url": "http://127.0.0.1:9/v1", "wire_api": "responses", "env_key": "GW_KEY",
        "request_max_retries": 2, "stream_max_retries": 0,
    }  # fmt: skip


def test_the_command_line_and_environment(quest: Quest) -> None:
    config = RunnerConfig(commands={"codex": ["/opt/codex/bin/codex", "--strict-config"]})
    runner = CodexRunner(config)
    spec = spec_for(quest, model="gpt-x")
    assert runner.command(spec) == [
        "/opt/codex/bin/codex", "--strict-config", "exec", "--json", "--cd", str(quest.root),
        "--skip-git-repo-check", "--model", "gpt-x", "-",
    ]  # fmt: skip
    assert CodexRunner(RunnerConfig()).command(spec_for(quest))[:1] == ["codex"]
    assert "--model" not in CodexRunner(RunnerConfig()).command(spec_for(quest))
    env = runner.environment(spec)
    assert env["CODEX_HOME"] == str(codex_home(spec)) and env["DS_QUEST_ID"] == quest.id
    assert env["DS_RUN_ID"] == spec.run_id


def test_the_users_codex_login_is_brought_into_the_isolated_home(
    quest: Quest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user-codex"
    user.mkdir()
    (user / "auth.json").write_text('{"OPENAI_API_KEY": "sk-test"}', encoding="utf-8")
    monkeypatch.setenv("CODEX_HOME", str(user))
    home = CodexRunner(RunnerConfig()).prepare_home(spec_for(quest))
    assert (home / "auth.json").read_text(encoding="utf-8") == '{"OPENAI_API_KEY": "sk-test"}'
    assert (home / "auth.json").stat().st_mode & 0o077 == 0
    # With a provider of our own the login is not needed and not copied.
    (home / "auth.json").unlink()
    provider = CodexProviderConfig(base_url="http://127.0.0.1:9/v1")
    CodexRunner(RunnerConfig(codex_provider=provider)).prepare_home(spec_for(quest))
    assert not (home / "auth.json").exists()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.lists(st.text(), max_size=3), st.dictionaries(st.text(), st.text(), max_size=3)))
def test_toml_values_read_back_as_written(value: Any) -> None:
    # Paths, env values and URLs go into config.toml through _toml: any text survives.
    assert tomllib.loads(f"v = {_toml(value)}")["v"] == value


def test_a_bad_provider_in_the_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    for section, word in (
        ({"codex_provider": {"base_url": "ftp://example"}}, "base_url"),
        ({"codex_provider": {"base_url": "http://127.0.0.1/v1", "name": "has space"}}, "name"),
        ({"codex_provider": {"base_url": "http://127.0.0.1/v1", "name": "openai"}}, "name"),  # Codex's own
        ({"codex_provider": {"name": "x"}}, "base_url"),
        ({"codex_provider": {"base_url": "http://127.0.0.1/v1", "env_key": "1BAD"}}, "env_key"),
        ({"codex_provider": {"base_url": "http://127.0.0.1/v1", "wire_api": "chat"}}, "wire_api"),
        ({"codex_sandbox": "yolo"}, "codex_sandbox"),
    ):
        import yaml

        with pytest.raises(Invalid) as caught:
            parse_config(yaml.safe_dump({"runner": section}), path)
        assert caught.value.code == "bad_config" and word in str(caught.value), section
    good = parse_config(yaml.safe_dump({"runner": {"codex_provider": {"base_url": "http://127.0.0.1:1/v1"}}}), path)
    assert good.runner.codex_provider == CodexProviderConfig(base_url="http://127.0.0.1:1/v1")


def test_make_runner_builds_the_codex_runner() -> None:
    runner = make_runner("codex", RunnerConfig())
    assert isinstance(runner, CodexRunner) and runner.name == "codex"


# -- the real Codex CLI -----------------------------------------------------------------


WRITE_THEN_INTERACT = [
    {"items": [{"think": "Record the finding before anything else."},
               {"call": "mcp__memory__write", "call_id": "call_write",
                "arguments": {"kind": "knowledge", "title": "Warmup avoids early divergence", "body": "500 steps."}}],
     "usage": {"input_tokens": 300, "output_tokens": 40}},
    {"items": [{"call": "mcp__artifact__interact", "call_id": "call_interact",
                "arguments": {"message": "Wrote the warmup card.", "kind": "progress"}}],
     "usage": {"input_tokens": 400, "output_tokens": 20}},
    {"items": [{"say": "Warmup card written and progress sent."}], "usage": {"input_tokens": 500, "output_tokens": 10}},
]  # fmt: skip


@pytest.mark.slow
async def test_real_codex_calls_our_mcp_tools_and_the_events_land_in_the_log_in_order(quest: Quest) -> None:
    codex = codex_executable()
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    server_module = responses_server()
    async with server_module.ResponsesServer(WRITE_THEN_INTERACT) as server:
        write_runner_config(quest.home, codex=codex, base_url=server.base_url)
        scheduler = scheduler_for(quest)
        finished = await scheduler.run_until_idle()
    assert [f.outcome for f in finished] == ["completed"], finished

    run_id = finished[0].run_id
    log = list(quest.log.read())
    turn = [e for e in log if e.run_id == run_id or e.type in ("memory.card_written", "interaction.sent", "tool.call_finished")]
    types = [e.type for e in turn]
    assert types[0] == "runner.turn_started" and types[-1] == "runner.turn_finished"
    assert types[:3] == ["runner.turn_started", "mailbox.delivered", "runner.process_started"]

    def at(kind: str, **match: Any) -> int:
        hits = [i for i, e in enumerate(turn) if e.type == kind and all(getattr(e, k) == v for k, v in match.items())]
        assert len(hits) == 1, (kind, match, types)
        return hits[0]

    call_write = at("runner.tool_call", tool="memory.write", server="memory")
    card = at("memory.card_written")
    write_done = at("tool.call_finished", namespace="memory", tool="write")
    result_write = at("runner.tool_result", call_id=turn[call_write].call_id)
    call_interact = at("runner.tool_call", tool="artifact.interact", server="artifact")
    sent = at("interaction.sent")
    interact_done = at("tool.call_finished", namespace="artifact", tool="interact")
    result_interact = at("runner.tool_result", call_id=turn[call_interact].call_id)
    said = at("runner.agent_message")
    # What the MCP server did precedes what Codex reported of it; Codex's lines keep
    # their order; the model asked for the second call only after the first ended.
    assert card < write_done < result_write < call_interact < result_interact < said
    assert call_write < result_write and sent < interact_done < result_interact and card < sent
    assert turn[result_write].status == "ok" and turn[result_write].output["status"] == "written"
    assert (
        turn[result_interact].status == "ok"
        and turn[result_interact].output["status"] == "ok"
        and turn[result_interact].output["interaction_status"] == "sent"
    )
    assert turn[card].title == "Warmup avoids early divergence" and turn[sent].message == "Wrote the warmup card."
    assert turn[said].text == "Warmup card written and progress sent."
    assert types.index("runner.reasoning") < call_write

    end = turn[-1]
    assert end.outcome == "completed" and end.exit_code == 0 and end.tool_calls == 2 and end.messages == 1
    assert end.usage["input_tokens"] == 1200 and end.usage["output_tokens"] == 70
    started = next(e for e in turn if e.type == "runner.turn_started")
    assert started.runner == "codex" and started.model == SCRIPTED_MODEL

    # The model saw our servers as tool namespaces and got each call's output back.
    assert len(server.requests) == 3 and server.exhausted == 0 and server.unoffered == []
    offered = server_module.offered_tools(server.requests[0])
    assert {"mcp__memory__write", "mcp__artifact__interact", "mcp__bash_exec__bash_exec"} <= set(offered)
    assert offered["mcp__memory__write"] == ("mcp__memory", "write")
    outputs = server_module.function_outputs(server.requests[2])
    assert "written" in json.dumps(outputs["call_write"]) and "sent" in json.dumps(outputs["call_interact"])
    assert server.requests[0]["model"] == SCRIPTED_MODEL and server.requests[0]["stream"] is True

    # The raw stream is kept, and the card is on disk.
    raw = (quest.root / ".ds" / "runs" / run_id / "stdout.jsonl").read_text(encoding="utf-8")
    assert '"type":"turn.completed"' in raw
    assert list((quest.root / "memory" / "knowledge").glob("*.md"))


@pytest.mark.slow
async def test_real_codex_fails_the_turn_when_one_of_our_servers_cannot_start(
    quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = codex_executable()
    real = codex_module.mcp_server_command

    def broken(namespace: str) -> list[str]:
        return ["/nonexistent/ds-mcp"] if namespace == "bash_exec" else real(namespace)

    monkeypatch.setattr(codex_module, "mcp_server_command", broken)
    quest_service.post_message(quest, quest_service.PostMessage(text="go"), source="cli")
    async with responses_server().ResponsesServer(WRITE_THEN_INTERACT) as server:
        # stdio: the servers are processes Codex starts, one of which cannot start.
        write_runner_config(quest.home, codex=codex, base_url=server.base_url, mcp_transport="stdio")
        finished = await scheduler_for(quest).run_until_idle()
    # required = true: no turn without all three namespaces, and the model is never asked.
    assert [f.outcome for f in finished] == ["failed"]
    assert "bash_exec" in finished[0].reason
    assert server.requests == []
    assert not [e for e in quest.log.read() if e.type == "memory.card_written"]


@pytest.mark.slow
def test_ds_run_with_the_real_codex_records_a_failed_model_stream(quest: Quest, tmp_path: Path) -> None:
    codex = codex_executable()
    script = tmp_path / "script.json"
    script.write_text((CODEX_FIXTURES / "stream_failed.script.json").read_text(encoding="utf-8"), encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, str(CODEX_FIXTURES.parent / "responses_server.py"), str(script)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        write_runner_config(quest.home, codex=codex, base_url=base_url)
        done = subprocess.run(
            [*DS, "run", quest.id, "--message", "Look for tokenizer notes.", "--json"],
            env=ds_env(quest.home), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stdout is not None:
            server.stdout.close()
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout.splitlines()[-1])["turns"]  # NDJSON: the events, then the summary
    assert [r["outcome"] for r in rows] == ["failed"]
    assert "the scripted model is overloaded" in rows[0]["reason"] and rows[0]["tool_calls"] == 1
    types = [e.type for e in quest.log.read() if e.run_id == rows[0]["run_id"]]
    assert types[-2:] == ["runner.turn_finished", "runner.turn_held"] and "runner.tool_result" in types
    assert "runner.turn_retry_scheduled" not in types  # max_attempts: 1
    # The provider's failure is transient, and with its one attempt spent the turn waits for the user.
    held = next(e for e in quest.log.read() if e.type == "runner.turn_held" and e.run_id == rows[0]["run_id"])
    assert (held.failure.failure_class, held.failure.cause) == ("transient", "provider_5xx")


@pytest.mark.slow
async def test_pausing_a_real_codex_turn_ends_codex_and_the_command_it_runs(quest: Quest) -> None:
    # Codex runs its shell commands in sessions of their own (not in its process group);
    # the pause's TERM reaches Codex, which ends them before it exits.
    codex = codex_executable()
    seconds = f"300.{random.randrange(10**6):06d}"  # a sleep no other process runs
    script = [
        {"items": [{"call": "exec_command", "arguments": {"cmd": f"sleep {seconds}", "yield_time_ms": 30000}}]},
        {"items": [{"say": "slept"}]},
    ]
    quest_service.post_message(quest, quest_service.PostMessage(text="sleep on it"), source="cli")
    async with responses_server().ResponsesServer(script) as server:
        write_runner_config(quest.home, codex=codex, base_url=server.base_url)
        task = asyncio.create_task(scheduler_for(quest).run_until_idle())
        needle = b"sleep\x00" + seconds.encode()
        await wait_until_async(lambda: processes_with(needle), timeout=60, what="codex to start the command")
        await asyncio.to_thread(steering.control, quest, quest_service.Control(action="pause", reason="test"))
        finished = await asyncio.wait_for(task, timeout=60)
    assert [(f.outcome, f.reason) for f in finished] == [("interrupted", "paused")]
    await wait_until_async(lambda: not processes_with(needle), timeout=15, what="the command to be gone")
    assert len(server.requests) == 1  # the model never heard back


async def test_a_missing_codex_cli_fails_the_turn_saying_how_to_install_it(quest: Quest) -> None:
    (quest.home.root / "config.yaml").write_text(
        "runner: {name: codex, max_attempts: 1, commands: {codex: [/nonexistent/bin/codex]}}\n", encoding="utf-8"
    )
    quest_service.post_message(quest, quest_service.PostMessage(text="go"), source="cli")
    finished = await scheduler_for(quest).run_until_idle()
    assert [f.outcome for f in finished] == ["failed"]
    assert "runner.commands.codex" in finished[0].reason and "npm install" in finished[0].reason
    assert not [e for e in quest.log.read() if e.type == "runner.process_started"]


@pytest.mark.slow
async def test_a_message_queued_while_codex_works_reaches_it_through_interact_once(quest: Quest) -> None:
    codex = codex_executable()
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    queued: list[int] = []

    def while_the_model_thinks(n: int, body: dict[str, Any]) -> None:
        if n == 2:  # Codex is between the write and the interact call
            queued.append(quest_service.post_message(quest, quest_service.PostMessage(text="Also try 1000 steps."), source="cli").seq)

    server_module = responses_server()
    async with server_module.ResponsesServer(WRITE_THEN_INTERACT, on_request=while_the_model_thinks) as server:
        write_runner_config(quest.home, codex=codex, base_url=server.base_url)
        finished = await scheduler_for(quest).run_until_idle()
    # One turn: the message went to the running agent, not to a second turn.
    assert [f.outcome for f in finished] == ["completed"] and queued
    log = list(quest.log.read())
    result = next(e for e in log if e.type == "runner.tool_result" and e.output.get("recent_inbound_messages"))
    assert [m["text"] for m in result.output["recent_inbound_messages"]] == ["Also try 1000 steps."]
    deliveries = [e for e in log if e.type == "mailbox.delivered" and queued[0] in e.message_seqs]
    assert len(deliveries) == 1  # once, by interact; no turn claimed it
    outputs = server_module.function_outputs(server.requests[2])
    assert "Also try 1000 steps." in json.dumps(outputs["call_interact"])  # the model saw it
