"""Every MCP tool call is logged (through the tool_calls service) with its arguments and
outcome, for a success and for a refusal; a long-running call is seen in progress."""

from __future__ import annotations

import json

from acp.schema import SessionNotification

from ds_events.events.tool import ToolCallFinished, ToolCallStarted
from ds_events.home import Home, Quest
from ds_events.services import tool_calls
from projections.acp import to_notification

from ..mcp_support import open_clients


def tool_events(quest: Quest) -> list:
    return [e for e in quest.log.read() if e.type.startswith("tool.")]


async def test_a_successful_call_is_logged_once_with_arguments_and_result(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        answer = await clients["memory"].call_tool(
            "write", {"kind": "knowledge", "title": "Warmup helps ViT", "body": "Loss diverges without it."}
        )
    assert not answer.is_error
    (event,) = tool_events(quest)
    assert isinstance(event, ToolCallFinished)
    assert (event.namespace, event.tool, event.status, event.started) == ("memory", "write", "ok", False)
    assert event.arguments["title"] == "Warmup helps ViT"
    assert event.result == answer.structured_content and event.error_code == ""
    assert event.actor == "mcp:memory" and event.duration_ms >= 0
    # It comes after the domain event the call appended (the record says how it went).
    types = [e.type for e in quest.log.read()]
    assert types.index("memory.card_written") < types.index("tool.call_finished")


async def test_a_refused_call_is_logged_with_its_error_and_changes_no_domain_state(home: Home, quest: Quest) -> None:
    before = [e.type for e in quest.log.read()]
    async with open_clients(home) as clients:
        answer = await clients["memory"].call_tool("write", {"kind": "knowledge", "title": "", "bogus": 1})
    assert answer.is_error
    payload = json.loads(answer.content[0].text)
    after = [e.type for e in quest.log.read()]
    assert after == [*before, "tool.call_finished"]  # nothing but the record of the refusal
    (event,) = tool_events(quest)
    assert (event.status, event.error_code) == ("error", payload["error"])
    assert event.error_message == payload["message"] and event.arguments == {"kind": "knowledge", "title": "", "bogus": 1}
    note = to_notification(event, "s")
    SessionNotification.model_validate(note["params"])
    assert note["params"]["update"]["status"] == "failed"


async def test_an_awaited_bash_exec_is_started_then_finished(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        answer = await clients["bash_exec"].call_tool(
            "bash_exec", {"command": "echo hi", "mode": "await", "wait_timeout_seconds": 60}
        )
    assert not answer.is_error, answer.content
    started, finished = tool_events(quest)
    assert isinstance(started, ToolCallStarted) and started.arguments["command"] == "echo hi"
    assert isinstance(finished, ToolCallFinished) and finished.started and finished.call_id == started.call_id
    assert finished.arguments == {} and finished.status == "ok"
    seqs = {e.type: e.seq for e in quest.log.read()}
    assert started.seq < seqs["bash.session_started"] < finished.seq
    kinds = [to_notification(e, "s")["params"]["update"]["sessionUpdate"] for e in (started, finished)]
    assert kinds == ["tool_call", "tool_call_update"]


async def test_a_detached_bash_exec_is_logged_once(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        answer = await clients["bash_exec"].call_tool("bash_exec", {"command": "true", "mode": "detach"})
        assert not answer.is_error
    (event,) = tool_events(quest)
    assert isinstance(event, ToolCallFinished) and not event.started


def test_large_results_and_arguments_are_bounded(quest: Quest) -> None:
    big = "x" * (tool_calls.MAX_JSON_CHARS * 3)
    event = tool_calls.record_call(quest, namespace="memory", tool="write", arguments={"body": big}, result={"text": big})
    assert event.truncated
    assert isinstance(event.result, str) and len(event.result) == tool_calls.MAX_JSON_CHARS
    assert len(event.arguments["_truncated_json"]) == tool_calls.MAX_JSON_CHARS
    small = tool_calls.record_call(quest, namespace="memory", tool="list_recent", arguments={}, result={"items": [1]})
    assert not small.truncated and small.result == {"items": [1]}


async def test_environment_values_are_not_logged(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        answer = await clients["bash_exec"].call_tool(
            "bash_exec", {"command": "true", "mode": "detach", "env": {"API_TOKEN": "s3cr3t-value"}}
        )
        assert not answer.is_error, answer.content
    (event,) = tool_events(quest)
    assert event.arguments["env"] == {"API_TOKEN": tool_calls.REDACTED}
    assert "s3cr3t-value" not in (quest.root / ".ds" / "events.jsonl").read_text()


async def test_command_output_is_not_logged(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        answer = await clients["bash_exec"].call_tool(
            "bash_exec", {"command": "echo out-$((6*7))-put", "mode": "await", "wait_timeout_seconds": 60}
        )
    assert "out-42-put" in answer.structured_content["log"]
    finished = tool_events(quest)[-1]
    assert finished.result["log"].endswith("characters of output, not logged>")
    assert "out-42-put" not in (quest.root / ".ds" / "events.jsonl").read_text()
