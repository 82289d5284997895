"""The ``claude`` runner: its exact command line and MCP config, the parsing of a recorded
stream-json session (``fixtures/claude/stream.jsonl``) into turn events, and a turn
through the real scheduler with a fake ``claude`` (``fixtures/claude/fake_claude.py``)
that replays the recording and makes its MCP calls for real through the config it got."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ds_events.config import RunnerConfig
from ds_events.home import Quest
from ds_events.runners import make_runner
from ds_events.runners.base import mcp_server_command
from ds_events.runners.claude import ClaudeRunner, tool_name
from ds_events.services import quest as quest_service
from ds_events.services.runtime import turns as turns
from ds_events.services.runtime.commands import Action, PromptRequest, TurnSpec
from ds_events.services.runtime.scheduler import QuestScheduler

REPO = Path(__file__).resolve().parents[2]
STREAM = REPO / "fixtures" / "claude" / "stream.jsonl"
FAKE = [sys.executable, str(REPO / "fixtures" / "claude" / "fake_claude.py")]
pytestmark = pytest.mark.timeout(180)


def build_prompt(quest: Quest, request: PromptRequest) -> str:
    return f"Turn {request.run_id} of {quest.id}.\n" + "".join(f"User: {m.text}\n" for m in request.messages)


def claim(quest: Quest, model: str = "") -> TurnSpec:
    quest_service.post_message(quest, quest_service.PostMessage(text="check the tokenizer baseline"), source="cli")
    spec = turns.claim_turn(
        quest, runner="claude", model=model, host=turns.Host.this_process(), build_prompt=build_prompt,
        action=Action(kind="start"),
    )  # fmt: skip
    assert spec is not None
    return spec


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in STREAM.read_text().splitlines()]


def turn_events(quest: Quest, run_id: str) -> list:
    return [e for e in quest.log.read() if e.run_id == run_id and e.type.startswith("runner.")]


# -- the command line ---------------------------------------------------------------------


def test_the_command_line_is_claude_print_mode_with_our_mcp_config_and_no_permission_prompts(quest: Quest) -> None:
    spec = claim(quest, model="claude-opus-4-1")
    argv = ClaudeRunner(RunnerConfig()).command(spec)
    config_file = Path(spec.run_dir) / "mcp.json"
    assert argv == [
        "claude", "-p", "--output-format", "stream-json", "--verbose", "--mcp-config", str(config_file),
        "--strict-mcp-config", "--permission-mode", "bypassPermissions", "--model", "claude-opus-4-1",
    ]  # fmt: skip
    config = json.loads(config_file.read_text())
    assert sorted(config["mcpServers"]) == ["artifact", "bash_exec", "memory"]
    for namespace, server in config["mcpServers"].items():
        assert server["type"] == "stdio"
        assert [server["command"], *server["args"]] == mcp_server_command(namespace)
        env = server["env"]
        assert (env["DS_HOME"], env["DS_QUEST_ID"], env["DS_RUN_ID"]) == (str(quest.home.root), quest.id, spec.run_id)


def test_without_a_model_the_agent_picks_its_own_and_a_configured_command_replaces_claude(quest: Quest) -> None:
    spec = claim(quest)
    argv = ClaudeRunner(RunnerConfig(commands={"claude": ["/opt/claude/bin/claude", "--debug-to-stderr"]})).command(spec)
    assert argv[:3] == ["/opt/claude/bin/claude", "--debug-to-stderr", "-p"]
    assert "--model" not in argv


# -- stream parsing -----------------------------------------------------------------------


def test_the_recorded_stream_becomes_the_turns_events(quest: Quest) -> None:
    spec = claim(quest)
    runner = ClaudeRunner(RunnerConfig())
    recorder = turns.TurnRecorder(quest, spec.run_id, runner="claude")
    for item in recorded():
        runner.handle(item, recorder)

    got = [(e.type, _payload(e)) for e in turn_events(quest, spec.run_id)[1:]]  # after turn_started
    assert got == [
        ("runner.reasoning", "The user wants the tokenizer baseline checked. Prior notes may already cover the "
                             "vocabulary size, so search memory before running anything."),
        ("runner.agent_message", "Checking what the quest already knows about the tokenizer before touching the baseline."),
        ("runner.tool_call", ("toolu_01SearchTok", "memory.search", "memory", {"query": "tokenizer vocabulary baseline"})),
        ("runner.tool_result", ("toolu_01SearchTok", "ok", {"count": 0, "results": []})),
        ("runner.tool_call", ("toolu_01WriteCard", "memory.write", "memory", {
            "kind": "knowledge", "title": "A 32k vocabulary is the tokenizer baseline",
            "body": "Nothing in memory covered the baseline vocabulary; the configs in the quest use 32000 tokens.",
            "tags": ["tokenizer", "baseline"]})),
        ("runner.tool_result", ("toolu_01WriteCard", "ok", "written")),
        ("runner.tool_call", ("toolu_01LsData", "Bash", "", {"command": "ls data/tokenized", "description": "List the tokenized shards"})),
        ("runner.tool_result", ("toolu_01LsData", "error",
                                "Exit code 2\nls: cannot access 'data/tokenized': No such file or directory")),
        ("runner.agent_message", "The 32k baseline is now in memory. The tokenized shards are not built yet, "
                                 "so the next step is the preprocessing job."),
    ]  # fmt: skip
    messages = [e for e in turn_events(quest, spec.run_id) if e.type == "runner.agent_message"]
    assert [m.message_id for m in messages] == ["msg_01TokAblA", "msg_01TokAblD"]
    # Usage is the result line's, for the whole run: the per-message usage is not added again.
    assert recorder.usage == {"input_tokens": 22, "cache_creation_input_tokens": 1930,
                              "cache_read_input_tokens": 48769, "output_tokens": 397}  # fmt: skip
    assert runner.session_id == "5b0d9c2e-7f3a-4e61-9a8c-2d4f6b1e0c37"
    assert runner.failure == "" and runner.succeeded(0)


@pytest.mark.parametrize(
    ("change", "failure"),
    [
        ({"subtype": "error_max_turns", "is_error": True, "result": None}, "error_max_turns: no detail"),
        ({"subtype": "error_during_execution", "is_error": True, "result": None, "errors": ["Stream closed"]},
         "error_during_execution: Stream closed"),
        ({"is_error": True, "result": "API Error: 529 overloaded"}, "success: API Error: 529 overloaded"),
    ],
)
def test_an_error_result_fails_the_turn_with_its_reason(quest: Quest, change: dict, failure: str) -> None:
    spec = claim(quest)
    runner = ClaudeRunner(RunnerConfig())
    recorder = turns.TurnRecorder(quest, spec.run_id, runner="claude")
    *lines, result = recorded()
    for item in [*lines, {**result, **change}]:
        runner.handle(item, recorder)
    assert runner.failure == failure
    assert not runner.succeeded(0)


def test_one_of_our_mcp_servers_failing_to_start_fails_the_turn(quest: Quest) -> None:
    spec = claim(quest)
    runner = ClaudeRunner(RunnerConfig())
    recorder = turns.TurnRecorder(quest, spec.run_id, runner="claude")
    init, *rest = recorded()
    init = {**init, "mcp_servers": [{"name": "memory", "status": "failed"}, {"name": "github", "status": "failed"},
                                    {"name": "artifact", "status": "connected"}]}  # fmt: skip
    for item in [init, *rest]:
        runner.handle(item, recorder)
    assert runner.failure == "MCP server memory did not start (failed)"  # not github: not ours


def test_lines_of_unknown_shape_are_kept_raw_and_produce_no_events(quest: Quest) -> None:
    spec = claim(quest)
    runner = ClaudeRunner(RunnerConfig())
    recorder = turns.TurnRecorder(quest, spec.run_id, runner="claude")
    before = len(quest.log.read())
    for item in [{"type": "stream_event", "event": {"type": "content_block_delta"}}, {"type": "assistant"},
                 {"type": "user", "message": {"role": "user", "content": "a plain prompt echo"}},
                 {"type": "system", "subtype": "compact_boundary"}]:  # fmt: skip
        runner.handle(item, recorder)
    assert len(quest.log.read()) == before and runner.failure == ""


@pytest.mark.parametrize(
    ("name", "expected"),
    [("mcp__memory__write", ("memory.write", "memory")), ("mcp__bash_exec__bash_exec", ("bash_exec.bash_exec", "bash_exec")),
     ("Bash", ("Bash", "")), ("mcp__broken", ("mcp__broken", ""))],
)
def test_claude_tool_names_map_to_our_namespaces(name: str, expected: tuple[str, str]) -> None:
    assert tool_name(name) == expected


# -- a turn through the scheduler ---------------------------------------------------------


async def test_a_claude_turn_through_the_scheduler_with_a_fake_claude_that_replays_the_recording(quest: Quest) -> None:
    cfg = RunnerConfig(name="claude", commands={"claude": FAKE}, max_attempts=1, kill_grace_seconds=3.0)
    quest_service.post_message(quest, quest_service.PostMessage(text="check the tokenizer baseline"), source="cli")
    sched = QuestScheduler(quest, make_runner=lambda n: make_runner(n, cfg), runner="claude", model="claude-sonnet-4-5",
                           config=cfg, build_prompt=build_prompt)  # fmt: skip
    finished = await sched.run_until_idle()

    assert [(f.outcome, f.reason, f.exit_code) for f in finished] == [("completed", "", 0)]
    run_id = finished[0].run_id
    kinds = [e.type.split(".", 1)[1] for e in turn_events(quest, run_id)]
    assert kinds == [
        "turn_started", "process_started", "reasoning", "agent_message", "tool_call", "tool_result", "tool_call",
        "tool_result", "tool_call", "tool_result", "agent_message", "turn_finished",
    ]  # fmt: skip
    started = next(e for e in turn_events(quest, run_id) if e.type == "runner.process_started")
    assert started.command[len(FAKE):][-2:] == ["--model", "claude-sonnet-4-5"]

    # The fake called our memory server through the config the runner wrote: the card is
    # real, and the turn's tool result is the server's answer, not the recording's.
    write = next(e for e in turn_events(quest, run_id) if e.type == "runner.tool_result" and e.call_id == "toolu_01WriteCard")
    card_id = write.output["id"]
    assert card_id in quest.state("memory").cards and card_id != "knowledge-5e1f0a2b"
    assert quest.state("memory").cards[card_id].title == "A 32k vocabulary is the tokenizer baseline"
    end = turn_events(quest, run_id)[-1]
    assert end.usage["output_tokens"] == 397 and (end.messages, end.tool_calls) == (2, 3)
    raw = (Path(quest.root) / ".ds" / "runs" / run_id / "stdout.jsonl").read_text().splitlines()
    init = json.loads(raw[0])
    assert init["mcp_servers"] == [{"name": n, "status": "connected"} for n in ("memory", "artifact", "bash_exec")]
    assert init["permissionMode"] == "bypassPermissions" and init["cwd"] == str(quest.root)


async def test_a_failing_claude_run_is_a_failed_turn_with_the_agents_reason(quest: Quest, tmp_path: Path, monkeypatch) -> None:
    *lines, result = recorded()
    stream = tmp_path / "failing.jsonl"
    failed = {**result, "subtype": "error_max_turns", "is_error": True, "result": None}
    stream.write_text("".join(json.dumps(x) + "\n" for x in [lines[0], lines[2], failed]))
    monkeypatch.setenv("FAKE_CLAUDE_STREAM", str(stream))
    cfg = RunnerConfig(name="claude", commands={"claude": FAKE}, max_attempts=1, kill_grace_seconds=3.0)
    quest_service.post_message(quest, quest_service.PostMessage(text="go"), source="cli")
    sched = QuestScheduler(quest, make_runner=lambda n: make_runner(n, cfg), runner="claude", model="",
                           config=cfg, build_prompt=build_prompt)  # fmt: skip
    finished = await sched.run_until_idle()
    assert [(f.outcome, f.reason) for f in finished] == [("failed", "exit 1: error_max_turns: no detail")]


def _payload(e: Any) -> Any:
    if e.type in ("runner.agent_message", "runner.reasoning"):
        return e.text
    if e.type == "runner.tool_call":
        return (e.call_id, e.tool, e.server, e.arguments)
    output = e.output["status"] if isinstance(e.output, dict) and "status" in e.output else e.output
    return (e.call_id, e.status, output)


async def test_a_missing_claude_executable_fails_the_turn_with_how_to_fix_it(quest: Quest, tmp_path: Path) -> None:
    missing = str(tmp_path / "bin" / "claude")
    cfg = RunnerConfig(name="claude", commands={"claude": [missing]}, max_attempts=1)
    quest_service.post_message(quest, quest_service.PostMessage(text="go"), source="cli")
    sched = QuestScheduler(quest, make_runner=lambda n: make_runner(n, cfg), runner="claude", model="",
                           config=cfg, build_prompt=build_prompt)  # fmt: skip
    finished = await sched.run_until_idle()
    assert [(f.outcome, f.reason) for f in finished] == [
        ("failed", f"failed: cannot start {missing!r}: not found; install Claude Code or set runner.commands.claude")
    ]
    assert not any(e.type == "runner.process_started" for e in quest.log.read())
