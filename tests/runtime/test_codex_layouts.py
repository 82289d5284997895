"""Our tools are found and called in Codex's code-mode layout, not only in the classic one.

Codex 0.169's default model (``gpt-6-astra`` in its bundled catalog: ``tool_mode:
code_mode_only``, responses-lite) offers the model no tool list: one JavaScript tool,
``exec``, runs code in a V8 isolate where every tool is a function of ``tools``, and the
MCP namespaces are deferred — a developer message names each by the first line of its
instructions, and their tools (with their schemas as TypeScript declarations, parameter
descriptions as comments) are found through ``ALL_TOOLS``. The scripted model plays that
layout: one ``exec`` call whose script looks our tool up, calls it, and prints both.
"""

from __future__ import annotations

import json
import re

import pytest

from ds_events.home import Quest
from ds_events.runners import scheduler_for
from ds_events.services import quest as quest_service
from tests.mcp_support import discover_tools

from .codex_support import codex_executable, responses_server, write_runner_config

# The first entry of the catalog bundled in Codex 0.169.0: its default model.
CODE_MODE_MODEL = "gpt-6-astra"
TOOLS = discover_tools()

LOOK_UP_AND_WRITE = """\
const ours = ALL_TOOLS.filter((t) => t.name.startsWith("mcp__"));
const write = ours.find((t) => t.name === "mcp__memory__write");
const done = await tools.mcp__memory__write({kind: "knowledge", title: "Warmup avoids early divergence", body: "500 steps."});
text(JSON.stringify({names: ours.map((t) => t.name), declared: write.description, result: done.structuredContent}));
"""
SCRIPT = [
    {"items": [{"think": "Find the memory tool, then write the card."},
               {"custom": "exec", "call_id": "call_exec", "input": LOOK_UP_AND_WRITE}],
     "usage": {"input_tokens": 300, "output_tokens": 60}},
    {"items": [{"say": "Card written."}], "usage": {"input_tokens": 400, "output_tokens": 10}},
]  # fmt: skip


@pytest.mark.slow
async def test_real_codex_in_code_mode_finds_our_deferred_tool_and_calls_it_through_exec(quest: Quest) -> None:
    codex = codex_executable()
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    server_module = responses_server()
    async with server_module.ResponsesServer(SCRIPT) as server:
        write_runner_config(quest.home, codex=codex, base_url=server.base_url, model=CODE_MODE_MODEL)
        finished = await scheduler_for(quest).run_until_idle()
    assert [f.outcome for f in finished] == ["completed"], finished
    assert len(server.requests) == 2 and server.exhausted == 0 and server.unoffered == []

    # The layout: no tool list; exec offered in the input; our three namespaces deferred,
    # each named by a whole first line of its instructions.
    first = server.requests[0]
    assert first["model"] == CODE_MODE_MODEL and not first.get("tools")
    assert "exec" in server_module.offered_tools(first)
    deferred = server_module.deferred_namespaces(first)
    assert set(deferred) >= {"mcp__memory", "mcp__artifact", "mcp__bash_exec"}
    for name in ("mcp__memory", "mcp__artifact", "mcp__bash_exec"):
        assert deferred[name].rstrip().endswith((".", ")")), f"{name}'s summary is cut mid-sentence: {deferred[name]!r}"

    # The script found every one of our tools and called one; its output came back.
    out = server_module.custom_outputs(server.requests[1])["call_exec"]
    found = json.loads(out[out.index("{") :])
    ours = {f"mcp__{namespace}__{tool.name}" for namespace, tool in TOOLS}
    assert set(found["names"]) == ours
    assert found["result"]["status"] == "written" and found["result"]["title"] == "Warmup avoids early divergence"
    # The model reads write's parameters as a TypeScript declaration: every description is there.
    schema = next(tool.input_schema for namespace, tool in TOOLS if (namespace, tool.name) == ("memory", "write"))
    comments = set(re.findall(r"^\s*// (.*)$", found["declared"], re.M))
    assert {prop["description"] for prop in schema["properties"].values()} <= comments

    # What the MCP server did is in the log, and the turn recorded the exec call.
    cards = [e for e in quest.log.read() if e.type == "memory.card_written"]
    assert [c.title for c in cards] == ["Warmup avoids early divergence"]
    end = [e for e in quest.log.read() if e.type == "runner.turn_finished"][-1]
    assert end.outcome == "completed" and end.run_id == finished[0].run_id
    assert any(e.type == "tool.call_finished" and e.tool == "write" for e in quest.log.read())
