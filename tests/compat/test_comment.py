"""Every tool takes DeepScientist's ``comment`` (text or an object): kept in the call's
record, nothing else changes; anything else is refused like any bad argument."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ds_events.home import Home, Quest
from tests.mcp_support import SCENE, open_clients
from tests.test_mcp_annotations import CHANGE_CALLS, QUERY_CALLS, TOOLS, WAIVE


async def test_every_tool_lists_comment_and_a_call_keeps_it_in_its_record(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        for c in clients.values():
            tools = (await c.list_tools()).tools
            assert tools and all("comment" in t.input_schema["properties"] for t in tools)
        client = clients["memory"]
        result = await client.call_tool("list_recent", {"limit": 1, "comment": "checking what we know"})
        assert not result.is_error
        before = quest.log.last_seq
        bad = await client.call_tool("list_recent", {"limit": 1, "comment": ["not", "a", "note"]})
        assert bad.is_error and json.loads(bad.content[0].text)["error"] == "invalid_argument"
    records = [e for e in quest.log.read() if e.type == "tool.call_finished" and e.tool == "list_recent"]
    assert records[0].status == "ok" and records[0].arguments["comment"] == "checking what we know"
    assert records[1].status == "error" and records[1].error_code == "invalid_argument"
    assert [e.type for e in quest.log.read(before)] == ["tool.call_finished"]  # only the refused call's record


# Every mode of bash_exec, after the annotations test's calls ("{bash_id}": the detached one).
BASH_MODES: list[tuple[str, dict[str, Any]]] = [
    ("bash_exec.bash_exec", {"command": "echo commented", "mode": "detach"}),
    ("bash_exec.bash_exec", {"mode": "await", "id": "{bash_id}", "wait_timeout_seconds": 60}),
    ("bash_exec.bash_exec", {"mode": "read", "id": "{bash_id}"}),
    ("bash_exec.bash_exec", {"mode": "list"}),
    ("bash_exec.bash_exec", {"mode": "history"}),
    ("bash_exec.bash_exec", {"mode": "kill", "id": "{bash_id}"}),
    ("bash_exec.bash_exec", {"command": "true", "mode": "create"}),
]  # fmt: skip


@pytest.mark.parametrize("comment", ["why I call this", {"why": "checking", "step": 3}], ids=["text", "object"])
async def test_every_tool_in_every_form_takes_a_comment_and_keeps_it_in_the_call_record(home: Home, comment: Any) -> None:
    """Generated from the three servers' tool lists: each tool's valid calls (the same ones
    the annotations tests show succeeding without a comment), each with ``comment``; any
    refusal is the comment's."""
    from ds_events.services.interactions.commands import Reply
    from ds_events.services.interactions.mailbox import reply

    calls = [(f"{ns}.{tool}", args) for ns, tool, args in SCENE]
    calls += [(name, args) for name, many in QUERY_CALLS.items() for args in many]
    calls += [*CHANGE_CALLS[:-2], *BASH_MODES, *CHANGE_CALLS[-2:]]  # the quest's completion last
    listed = {f"{ns}.{tool.name}" for ns, tool in TOOLS}
    assert listed - {name for name, _ in calls} - {WAIVE[0]} == set(), "a tool with no valid call to comment"

    found: dict[str, str] = {}
    refused: list[str] = []
    called: list[str] = []

    async def call(clients: dict[str, Any], quest: Quest, name: str, args: dict[str, Any]) -> None:
        namespace, tool = name.split(".", 1)
        for key, value in found.items():
            args = json.loads(json.dumps(args).replace(f"{{{key}}}", value))
        result = await clients[namespace].call_tool(tool, {**args, "comment": comment})
        called.append(tool)
        if result.is_error:
            refused.append(f"{name}({args}): {result.content[0].text[:300]}")
            return
        content = result.structured_content
        for key in ("interaction_id", "campaign_id"):
            if isinstance(content.get(key), str):
                found[key] = content[key]
        if name == "memory.write":
            found["card_id"] = content["id"]
        if name == "bash_exec.bash_exec" and args.get("mode") == "detach":
            found["bash_id"] = content["bash_id"]
        if tool == "interact" and "reply_schema" in args:  # the user approves the completion
            reply(quest, Reply(interaction_id=content["interaction_id"], text="yes", option_id="yes"))

    quest = home.create_quest("Comments", quest_id="q1", brief="Every call says why.")
    async with open_clients(home) as clients:
        for name, args in calls:
            await call(clients, quest, name, args)
    bare = home.create_quest("Without a baseline", quest_id="q2", brief="No baseline can exist.")
    async with open_clients(home, "q2") as clients:
        await call(clients, bare, *WAIVE)
    assert refused == [], "\n".join(refused)
    events = [e for q in (quest, bare) for e in q.log.read()]
    records = [e for e in events if e.type == "tool.call_finished"]
    assert [e.tool for e in records] == called and all(e.status == "ok" for e in records)
    # A long call's arguments are in its tool.call_started; a quick one's in its finish.
    started = {e.call_id: e.arguments for e in events if e.type == "tool.call_started"}
    kept = [(e.tool, started.get(e.call_id, e.arguments).get("comment")) for e in records]
    assert [(tool, said) for tool, said in kept if said != comment] == []
    quest.close()
    bare.close()
