"""The ``acp`` runner with a real ACP agent process: ``fixtures/acp_agent.py``, written on
the SDK's agent side, which starts and calls our real stdio MCP servers it is handed in
``session/new``. Turns run through the real :class:`QuestScheduler`; a pause comes from
another thread through ``services.quests.control``, as ``ds control`` would send it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import acp
from acp import schema
from ds_events.bash import procs
from ds_events.config import RunnerConfig
from ds_events.errors import Invalid
from ds_events.home import Home, Quest
from ds_events.runners import acp as acp_runner, make_runner
from ds_events.runners.acp import AcpRunner, tool_name
from ds_events.services import quest as quest_service
from ds_events.services.runtime import steering, turns as turns
from ds_events.services.runtime.commands import Action, PromptRequest
from ds_events.services.runtime.scheduler import QuestScheduler
from tests.helpers import DS, ds_env, wait_until_async

REPO = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, str(REPO / "fixtures" / "acp_agent.py")]
pytestmark = pytest.mark.timeout(240)


def build_prompt(quest: Quest, request: PromptRequest) -> str:
    return f"Turn {request.run_id} of {quest.id}.\n" + "".join(f"User: {m.text}\n" for m in request.messages)


def config(*agent_args: str, **overrides: Any) -> RunnerConfig:
    settings: dict[str, Any] = {"max_attempts": 1, "kill_grace_seconds": 3.0, "stall_seconds": 600.0}
    settings.update(overrides)
    return RunnerConfig(name="acp", commands={"acp": [*AGENT, *agent_args]}, **settings)


def scheduler(quest: Quest, cfg: RunnerConfig, *, model: str = "", made: list | None = None) -> QuestScheduler:
    def factory(name: str) -> Any:
        runner = make_runner(name, cfg)
        if made is not None:
            made.append(runner)
        return runner

    return QuestScheduler(quest, make_runner=factory, runner="acp", model=model, config=cfg, build_prompt=build_prompt)


def turn_events(quest: Quest, run_id: str) -> list:
    return [e for e in quest.log.read() if e.run_id == run_id and e.type.startswith("runner.")]


def traffic(quest: Quest, run_id: str) -> list[dict]:
    path = quest.root / ".ds" / "runs" / run_id / "acp.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def post(quest: Quest, text: str) -> None:
    quest_service.post_message(quest, quest_service.PostMessage(text=text), source="cli")


# -- a whole turn -------------------------------------------------------------------------


async def test_an_acp_turn_lands_the_agents_messages_and_tool_calls_in_order(quest: Quest) -> None:
    post(quest, "note how ACP agents reach our tools")
    finished = await scheduler(quest, config("--model-choice"), model="large").run_until_idle()

    assert [(f.outcome, f.reason) for f in finished] == [("completed", "")]
    run_id = finished[0].run_id
    events = turn_events(quest, run_id)
    kinds = [e.type.split(".", 1)[1] for e in events]
    assert kinds == [
        "turn_started", "process_started", "reasoning", "agent_message", "tool_call", "tool_result",
        "tool_call", "tool_result", "agent_message", "turn_finished",
    ]  # fmt: skip
    _, started, thought, said, call1, result1, call2, result2, closing, end = events
    assert started.command == [*AGENT, "--model-choice"]
    assert thought.text == "The prompt asks for a note. I will write it to memory first."  # chunks joined
    assert (said.text, said.message_id) == ("Recording what I learned, then telling you.", "m1")
    assert (call1.call_id, call1.tool, call1.server) == ("t1", "memory.write", "memory")
    assert call1.arguments["title"] == "ACP agents get our MCP servers in session/new"
    assert (result1.call_id, result1.status, result1.output["status"]) == ("t1", "ok", "written")
    assert (call2.tool, call2.server, result2.status) == ("artifact.interact", "artifact", "ok")
    card_id = result1.output["id"]
    assert closing.text == f"Done: card {card_id} written (model large)."  # the model was selected
    assert (end.messages, end.tool_calls, end.exit_code) == (2, 2, 0)
    assert end.usage["output_tokens"] == 42 and end.usage["input_tokens"] > 0

    # The tool calls really went through our MCP servers into this quest's log.
    assert card_id in quest.state("memory").cards
    log = quest.log.read()
    seq = {e.id: e.seq for e in log}
    written = next(e for e in log if e.type == "memory.card_written" and e.card_id == card_id)
    assert seq[call1.id] < written.seq < seq[result1.id]
    assert any(e.type == "interaction.sent" and e.message == "Noted how ACP agents reach our tools." for e in log)

    # The raw JSON-RPC traffic is kept: session/new carried our three servers and their env,
    # the permission request was allowed, and nothing of the agent's group is left.
    rpc = traffic(quest, run_id)
    new = next(m["msg"] for m in rpc if m["dir"] == "out" and m["msg"].get("method") == "session/new")
    servers = {s["name"]: s for s in new["params"]["mcpServers"]}
    assert sorted(servers) == ["artifact", "bash_exec", "memory"]
    env = {v["name"]: v["value"] for v in servers["memory"]["env"]}
    assert env["DS_HOME"] == str(quest.home.root) and env["DS_QUEST_ID"] == quest.id and env["DS_RUN_ID"] == run_id
    asked = next(m["msg"] for m in rpc if m["msg"].get("method") == "session/request_permission")
    answer = next(m["msg"] for m in rpc if m["dir"] == "out" and m["msg"].get("id") == asked["id"] and "result" in m["msg"])
    assert answer["result"]["outcome"] == {"outcome": "selected", "optionId": "yes"}
    assert not procs.group_alive(started.pgid)
    assert quest.state("turns").running is None


async def test_codex_acp_shaped_calls_are_named_and_decoded_like_every_agents_and_the_session_is_closed(
    quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # codex-acp titles a call "Tool: memory/write", sends the MCP invocation as rawInput and
    # the whole CallToolResult as rawOutput, offers session/close and never exits at EOF.
    monkeypatch.setattr(acp_runner, "EXIT_GRACE_SECONDS", 3600.0)  # only the closed session's short grace applies
    post(quest, "note how ACP agents reach our tools")
    # Bounded: a runner that waited for an exit at EOF would wait the hour.
    finished = await asyncio.wait_for(scheduler(quest, config("--like", "codex-acp")).run_until_idle(), timeout=180)

    assert [(f.outcome, f.reason, f.exit_code) for f in finished] == [("completed", "", None)]  # signalled
    events = turn_events(quest, finished[0].run_id)
    calls = [e for e in events if e.type == "runner.tool_call"]
    assert [(c.tool, c.server) for c in calls] == [("memory.write", "memory"), ("artifact.interact", "artifact")]
    assert calls[0].arguments["title"] == "ACP agents get our MCP servers in session/new"  # the invocation's arguments
    results = [e for e in events if e.type == "runner.tool_result"]
    assert results[0].output["status"] == "written" and results[0].output["id"].startswith("knowledge-")  # structured
    assert results[1].output["interaction_status"] == "sent"
    closing = [e.text for e in events if e.type == "runner.agent_message"][-1]
    assert closing == f"Done: card {results[0].output['id']} written (model small)."
    rpc = traffic(quest, finished[0].run_id)
    sent = [m["msg"].get("method") for m in rpc if m["dir"] == "out" and "method" in m["msg"]]
    assert sent[-2:] == ["session/prompt", "session/close"]
    close_id = next(m["msg"]["id"] for m in rpc if m["msg"].get("method") == "session/close")
    assert any(m["dir"] == "in" and m["msg"].get("id") == close_id and "result" in m["msg"] for m in rpc)
    process = next(e for e in events if e.type == "runner.process_started")
    assert not procs.group_alive(process.pgid)


async def test_gemini_shaped_calls_announced_only_by_their_permission_request_are_recorded_before_their_result(
    quest: Quest,
) -> None:
    # Gemini CLI: no tool_call before a permission request, no rawInput or rawOutput (the
    # arguments and the result are JSON text), titles such as "write (memory MCP Server)".
    post(quest, "note how ACP agents reach our tools")
    finished = await scheduler(quest, config("--like", "gemini")).run_until_idle()

    assert [(f.outcome, f.reason) for f in finished] == [("completed", "")]
    events = turn_events(quest, finished[0].run_id)
    kinds = [e.type.split(".", 1)[1] for e in events]
    assert kinds == [
        "turn_started", "process_started", "reasoning", "agent_message", "tool_call", "tool_result",
        "tool_call", "tool_result", "agent_message", "turn_finished",
    ]  # fmt: skip
    call1, result1, call2, result2 = events[4:8]
    assert (call1.call_id, call1.tool, call1.server) == ("mcp_memory_write__t1", "memory.write", "memory")
    assert call1.arguments["title"] == "ACP agents get our MCP servers in session/new"  # from the JSON text
    assert result1.status == "ok" and result1.output["status"] == "written"  # decoded
    assert (call2.tool, call2.server, call2.arguments) == ("artifact.interact", "artifact", {"message": "Noted how ACP agents reach our tools."})
    assert result2.output["interaction_status"] == "sent"
    rpc = traffic(quest, finished[0].run_id)
    asked = next(m["msg"] for m in rpc if m["msg"].get("method") == "session/request_permission")
    updates = [m["msg"] for m in rpc if m["msg"].get("method") == "session/update"]
    first_t1 = next(u for u in updates if u["params"]["update"].get("toolCallId") == "mcp_memory_write__t1")
    assert first_t1["params"]["update"]["status"] == "completed"  # nothing announced it but the request
    assert asked["params"]["toolCall"]["title"] == "write (memory MCP Server)"
    end = events[-1]
    assert end.usage["output_tokens"] == 42 and end.usage["input_tokens"] > 0  # from _meta.quota


async def test_claude_agent_acp_shaped_calls_are_recorded_once_their_input_arrives_with_their_json_decoded(
    quest: Quest,
) -> None:
    # claude-agent-acp announces a call with rawInput {} while the model still streams it,
    # sends the whole input in the next update, and the result as our server's JSON text.
    post(quest, "note how ACP agents reach our tools")
    finished = await asyncio.wait_for(scheduler(quest, config("--like", "claude-agent-acp")).run_until_idle(), timeout=180)

    assert [(f.outcome, f.reason, f.exit_code) for f in finished] == [("completed", "", 0)]  # it exits at EOF
    events = turn_events(quest, finished[0].run_id)
    kinds = [e.type.split(".", 1)[1] for e in events]
    assert kinds == [
        "turn_started", "process_started", "reasoning", "agent_message", "tool_call", "tool_result",
        "tool_call", "tool_result", "agent_message", "turn_finished",
    ]  # fmt: skip
    call1, result1, call2, result2 = events[4:8]
    assert (call1.call_id, call1.tool, call1.server) == ("t1", "memory.write", "memory")
    assert call1.arguments["title"] == "ACP agents get our MCP servers in session/new"  # not the {} announced
    assert (call2.tool, call2.arguments) == ("artifact.interact", {"message": "Noted how ACP agents reach our tools."})
    assert result1.output["status"] == "written" and result1.output["id"].startswith("knowledge-")  # decoded
    assert result2.output["interaction_status"] == "sent"
    rpc = traffic(quest, finished[0].run_id)
    announced = next(m["msg"]["params"]["update"] for m in rpc if m["msg"].get("method") == "session/update"
                     and m["msg"]["params"]["update"].get("toolCallId") == "t1")  # fmt: skip
    assert (announced["sessionUpdate"], announced["rawInput"]) == ("tool_call", {})
    sent = [m["msg"].get("method") for m in rpc if m["dir"] == "out" and "method" in m["msg"]]
    assert sent[-2:] == ["session/prompt", "session/close"]


async def test_a_call_announced_without_its_input_waits_for_it_and_is_recorded_at_the_latest_at_the_turns_end(
    quest: Quest,
) -> None:
    post(quest, "go")
    spec = turns.claim_turn(
        quest, runner="acp", model="", host=turns.Host.this_process(), build_prompt=build_prompt,
        action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    client = acp_runner.TurnClient(spec, turns.TurnRecorder(quest, spec.run_id, runner="acp"))

    def calls() -> list[Any]:
        return [e for e in turn_events(quest, spec.run_id) if e.type == "runner.tool_call"]

    def announce(call_id: str) -> Any:
        return acp.start_tool_call(call_id, "mcp__memory__search", kind="other", status="pending", raw_input={})

    await client.session_update("s", announce("c1"))
    note = acp.update_tool_call("c1")
    note.field_meta = {"claudeCode": {"toolResponse": "..."}}
    await client.session_update("s", note)  # no input yet: still nothing recorded
    assert calls() == []
    await client.session_update("s", acp.update_tool_call("c1", title="mcp__memory__search", raw_input={"query": "q"}))
    assert [(c.call_id, c.tool, c.server, c.arguments) for c in calls()] == [("c1", "memory.search", "memory", {"query": "q"})]
    # The permission request carries the input too; a call finished unannounced still is one.
    await client.session_update("s", announce("c2"))
    await client.request_permission(
        "s", schema.ToolCallUpdate(tool_call_id="c2", raw_input={"query": "r"}),
        [schema.PermissionOption(option_id="ok", name="Allow", kind="allow_once")],
    )  # fmt: skip
    await client.session_update("s", announce("c3"))
    await client.session_update("s", acp.update_tool_call("c1", status="completed", raw_output='{"count": 1}'))
    text_blocks = [{"type": "text", "text": '{"count": 2}'}]
    await client.session_update("s", acp.update_tool_call("c2", status="failed", raw_output=text_blocks))
    await client.session_update("s", announce("c4"))  # never more than announced (the turn ended)
    client.settle()
    assert [(c.call_id, c.arguments) for c in calls()] == [("c1", {"query": "q"}), ("c2", {"query": "r"}), ("c3", {}), ("c4", {})]
    results = [(e.call_id, e.status, e.output) for e in turn_events(quest, spec.run_id) if e.type == "runner.tool_result"]
    assert results == [("c1", "ok", {"count": 1}), ("c2", "error", {"count": 2})]
    turns.finish_turn(quest, spec.run_id, outcome="interrupted", reason="test")


def test_an_mcp_result_is_its_structured_content_else_the_json_its_text_holds() -> None:
    text = {"type": "text", "text": '{"error": "missing_title", "message": "a card needs a title"}'}
    assert acp_runner._output({"content": [text], "isError": True}) == {"error": "missing_title", "message": "a card needs a title"}
    assert acp_runner._output({"content": [text], "structuredContent": {"ok": True}, "isError": False}) == {"ok": True}
    assert acp_runner._output({"content": [{"type": "text", "text": "plain"}], "isError": False}) == "plain"
    assert acp_runner._output({"content": "not a list", "isError": False}) == {"content": "not a list", "isError": False}
    assert acp_runner._output({"exit_code": 0}) == {"exit_code": 0}  # anything else as the agent sent it
    assert acp_runner._output([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "a\nb"  # Claude Code's
    assert acp_runner._output([{"type": "image", "data": ""}]) == [{"type": "image", "data": ""}]
    invocation = {"server": "memory", "tool": "write", "arguments": {"title": "t"}}
    assert acp_runner._arguments(invocation, "memory.write") == {"title": "t"}
    assert acp_runner._arguments(invocation, "artifact.record") == invocation  # not that call's own invocation
    assert acp_runner._arguments({"command": "ls"}, "shell") == {"command": "ls"}


def test_a_gemini_call_id_names_our_tool_when_its_title_is_the_command() -> None:
    assert acp_runner._name_from_call_id("mcp_bash_exec_bash_exec__mcp_bash_exec_bash_exec_17_0") == (
        "bash_exec.bash_exec", "bash_exec",
    )  # fmt: skip
    assert acp_runner._name_from_call_id("mcp_memory_read_memory__x") == ("memory.read_memory", "memory")
    assert acp_runner._name_from_call_id("mcp_github_create_issue__x") is None  # not one of ours
    assert acp_runner._name_from_call_id("run_shell_command_17_0") is None
    assert acp_runner._name_from_call_id("mcp_memory___x") is None


async def test_a_refusal_fails_the_turn_and_says_why(quest: Quest) -> None:
    post(quest, "do something you will not")
    finished = await scheduler(quest, config("--mode", "refuse")).run_until_idle()
    assert [(f.outcome, f.reason) for f in finished] == [("failed", "exit 0: the agent refused to continue")]
    said = [e.text for e in turn_events(quest, finished[0].run_id) if e.type == "runner.agent_message"]
    assert said == ["I will not do that."]


async def test_a_model_the_agent_does_not_offer_fails_the_turn_before_the_prompt(quest: Quest) -> None:
    post(quest, "go")
    finished = await scheduler(quest, config("--model-choice"), model="huge").run_until_idle()
    assert finished[0].outcome == "failed"
    assert "does not offer model 'huge' (it offers: small, large)" in finished[0].reason
    rpc = traffic(quest, finished[0].run_id)
    assert not any(m["msg"].get("method") == "session/prompt" for m in rpc)


# -- file requests ----------------------------------------------------------------------


async def test_file_requests_are_served_inside_the_quest_and_refused_outside_it(quest: Quest) -> None:
    post(quest, "keep a note in a file")
    outside = quest.home.root.parent / "outside"
    outside.mkdir()
    (outside / "x").write_text("not the quest's")
    (quest.root / "escape").symlink_to(outside)
    before = quest.log.read()
    finished = await scheduler(quest, config("--mode", "fs")).run_until_idle()
    assert finished[0].outcome == "completed"
    assert (quest.root / "notes" / "acp-note.md").read_text() == "line one\nline two\nline three\n"
    said = [e.text for e in turn_events(quest, finished[0].run_id) if e.type == "runner.agent_message"]
    report = json.loads(said[0])
    assert report["read_back"] == "line two\n"  # line 2, limit 1
    assert report["outside"]["error"] == "outside_quest"
    assert report["protected"]["error"] == "protected_path"
    assert report["relative"]["error"] == "relative_path"
    assert report["linked"]["error"] == "outside_quest"  # resolved before it is judged
    # The log was not written by the agent: it still holds everything it held, unchanged.
    assert quest.log.read()[: len(before)] == before


# -- interrupting ---------------------------------------------------------------------


async def test_a_pause_from_another_thread_interrupts_the_turn_and_ends_the_agents_group(home: Home, quest: Quest) -> None:
    post(quest, "start the long job")
    sched = scheduler(quest, config("--mode", "hang"))
    run = asyncio.create_task(sched.run_until_idle())
    call = await wait_until_async(
        lambda: next((e for e in quest.log.read() if e.type == "runner.tool_call"), None), timeout=120,
        what="the hanging agent's tool call",
    )  # fmt: skip
    process = next(e for e in quest.log.read() if e.type == "runner.process_started")
    assert procs.group_alive(process.pgid)

    def pause() -> None:
        other = home.open_quest(quest.id, actor="cli")
        try:
            steering.control(other, quest_service.Control(action="pause", reason="look at it"))
        finally:
            other.close()

    thread = threading.Thread(target=pause)
    thread.start()
    finished = await asyncio.wait_for(run, timeout=60)
    thread.join()

    assert [(f.run_id, f.outcome, f.reason) for f in finished] == [(call.run_id, "interrupted", "paused")]
    assert not procs.group_alive(process.pgid)  # the agent and its sleeping child
    assert quest.state("status").status == "paused"
    state = quest.state("turns")
    assert state.running is None and state.retry is None and state.needs_continuation


async def test_interrupt_sends_session_cancel_and_the_agent_answers_cancelled(quest: Quest) -> None:
    """What the scheduler's interrupt() does before it signals the group: ask politely."""
    post(quest, "start the long job")
    spec = turns.claim_turn(
        quest, runner="acp", model="", host=turns.Host.this_process(), build_prompt=build_prompt,
        action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    runner = AcpRunner(config("--mode", "hang"))
    recorder = turns.TurnRecorder(quest, spec.run_id, runner="acp")
    task = asyncio.create_task(runner.run(spec, recorder))
    await wait_until_async(lambda: recorder.tool_calls == 1, timeout=120, what="the hanging agent's tool call")

    await asyncio.wait_for(runner.interrupt(), timeout=30)
    result = await asyncio.wait_for(task, timeout=30)

    assert (result.ok, result.exit_code, result.error) == (False, 0, "cancelled on request")  # it exited by itself
    rpc = traffic(quest, spec.run_id)
    cancel = [m for m in rpc if m["dir"] == "out" and m["msg"].get("method") == "session/cancel"]
    assert len(cancel) == 1
    prompt_id = next(m["msg"]["id"] for m in rpc if m["msg"].get("method") == "session/prompt")
    answer = next(m["msg"] for m in rpc if m["dir"] == "in" and m["msg"].get("id") == prompt_id)
    assert answer["result"]["stopReason"] == "cancelled"
    assert rpc.index(cancel[0]) < rpc.index(next(m for m in rpc if m["msg"] is answer))
    results = [e for e in turn_events(quest, spec.run_id) if e.type == "runner.tool_result"]
    assert [(r.call_id, r.status) for r in results] == [("t1", "error")]
    assert not procs.group_alive(recorder.process.pgid)  # type: ignore[union-attr]
    turns.finish_turn(quest, spec.run_id, outcome="interrupted", reason="test")


# -- refusals before any turn -----------------------------------------------------------


def test_the_acp_runner_needs_its_command_configured() -> None:
    with pytest.raises(Invalid) as caught:
        make_runner("acp", RunnerConfig())
    assert caught.value.code == "runner_not_configured"
    assert "runner.commands.acp" in caught.value.message


async def test_an_agent_that_cannot_start_fails_the_turn_with_the_reason(quest: Quest) -> None:
    post(quest, "go")
    cfg = RunnerConfig(name="acp", commands={"acp": [str(quest.root / "no-such-agent")]}, max_attempts=1)
    sched = QuestScheduler(quest, make_runner=lambda n: make_runner(n, cfg), runner="acp", model="", config=cfg,
                           build_prompt=build_prompt)  # fmt: skip
    finished = await sched.run_until_idle()
    assert finished[0].outcome == "failed"
    assert "cannot start the ACP agent" in finished[0].reason and "no-such-agent" in finished[0].reason
    assert not any(e.type == "runner.process_started" for e in quest.log.read())


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("mcp__memory__write", ("memory.write", "memory")),
        ("mcp__bash_exec__bash_exec", ("bash_exec.bash_exec", "bash_exec")),
        ("memory.search", ("memory.search", "memory")),
        ("artifact/interact", ("artifact.interact", "artifact")),
        ("mcp__github__create_issue", ("github.create_issue", "github")),
        ("Tool: memory/write", ("memory.write", "memory")),  # codex-acp
        ("Tool: github/create_issue", ("github.create_issue", "github")),  # codex-acp: any MCP server
        ("search (memory MCP Server)", ("memory.search", "memory")),  # Gemini CLI
        ("create_issue (github MCP Server)", ("github.create_issue", "github")),
        ("Read README.md", ("Read README.md", "")),
        ("config.yaml", ("config.yaml", "")),  # a file name is not one of our namespaces
    ],
)
def test_tool_titles_name_our_mcp_tools_the_same_way_for_every_agent(title: str, expected: tuple[str, str]) -> None:
    assert tool_name(title) == expected


# -- the product path -------------------------------------------------------------------


def test_ds_run_with_the_acp_runner_from_the_homes_config(home: Home, quest: Quest) -> None:
    """``runner.commands.acp`` in config.yaml names the agent; ``ds run --runner acp`` runs it."""
    config_file = home.root / "config.yaml"
    config_file.write_text(
        config_file.read_text() + "runner:\n  max_attempts: 1\n  commands:\n    acp: " + json.dumps(AGENT) + "\n"
    )
    done = subprocess.run(
        [*DS, "run", quest.id, "--runner", "acp", "--message", "note how ACP agents reach our tools", "--json"],
        env=ds_env(home, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout.splitlines()[-1])["turns"]  # NDJSON: the events, then the summary
    assert (row["outcome"], row["messages"], row["tool_calls"]) == ("completed", 2, 2)
    said = [e.text for e in turn_events(quest, row["run_id"]) if e.type == "runner.agent_message"]
    assert said[-1].startswith("Done: card knowledge-")
    prompt = next(m["msg"] for m in traffic(quest, row["run_id"]) if m["msg"].get("method") == "session/prompt")
    sent = prompt["params"]["prompt"][0]["text"]
    assert sent == (quest.root / ".ds" / "runs" / row["run_id"] / "prompt.md").read_text()  # the built prompt, whole
