"""Every tool takes DeepScientist's ``comment`` (text or an object): kept in the call's
record, nothing else changes; anything else is refused like any bad argument."""

from __future__ import annotations

import json

from ds_events.home import Home, Quest
from tests.mcp_support import open_clients


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
