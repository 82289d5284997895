"""Whole turns with ``runner.mcp_transport: http``: the host serves the namespaces, the
agent (the scripted agent; the real Codex CLI) reaches them by URL with the turn's
bearer token, no ``ds mcp`` process is started, and the log holds what it holds over
stdio: the calls, their records with the turn's run id, the namespace's actor."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from ds_events.home import Quest
from ds_events.runners import scheduler_for
from ds_events.services import quest as quest_service
from handlers.mcp.host import McpHost

from .codex_support import codex_executable, responses_server, write_runner_config

pytestmark = pytest.mark.slow


def _turn_records(quest: Quest, run_id: str) -> list[tuple[str, str, str]]:
    return [(e.actor, e.namespace, e.tool) for e in quest.log.read() if e.type == "tool.call_finished" and e.run_id == run_id]


async def test_a_scripted_turn_over_http_calls_the_hosts_tools_and_records_them_as_the_turns(quest: Quest, tmp_path: Path) -> None:
    traj = tmp_path / "t.yaml"
    traj.write_text(yaml.safe_dump({"turns": [{"steps": [
        {"call": "memory.write", "args": {"kind": "knowledge", "title": "Warmup avoids divergence", "body": "500 steps"}},
        {"call": "artifact.record", "args": {"payload": {"kind": "horoscope"}}, "expect": "error", "save": "bad"},
        {"say": "refused: {{bad.error}}"},
    ]}]}))  # fmt: skip
    quest.home.config_path.write_text(yaml.safe_dump({"runner": {"mcp_transport": "http", "max_attempts": 1}}))
    quest_service.post_message(quest, quest_service.PostMessage(text="go"))
    try:
        finished = await scheduler_for(quest, runner="scripted", trajectory=str(traj)).run_until_idle()
    finally:
        await McpHost.close_running()
    assert [f.outcome for f in finished] == ["completed"], finished
    run_id = finished[0].run_id
    assert _turn_records(quest, run_id) == [("mcp:memory", "memory", "write"), ("mcp:artifact", "artifact", "record")]
    said = [e.text for e in quest.log.read() if e.type == "runner.agent_message"]
    assert said == ["refused: unknown_kind"]
    # The agent was told the host's URLs, not a server to start.
    config = json.loads((quest.root / ".ds" / "runs" / run_id / "mcp.json").read_text())
    assert {s["type"] for s in config["mcpServers"].values()} == {"http"}
    assert all(f"/{quest.id}/{run_id}/" in s["url"] for s in config["mcpServers"].values())


ONE_CALL = [
    {"items": [{"call": "mcp__memory__write", "call_id": "call_write",
                "arguments": {"kind": "knowledge", "title": "Warmup avoids early divergence", "body": "500 steps."}}]},
    {"items": [{"say": "Card written."}]},
]  # fmt: skip


async def test_real_codex_reaches_the_host_served_tools_with_its_turns_token(quest: Quest) -> None:
    codex = codex_executable()
    quest_service.post_message(quest, quest_service.PostMessage(text="Record the warmup finding."), source="cli")
    module = responses_server()
    try:
        async with module.ResponsesServer(ONE_CALL) as server:
            write_runner_config(quest.home, codex=codex, base_url=server.base_url, mcp_transport="http")
            finished = await scheduler_for(quest).run_until_idle()
    finally:
        await McpHost.close_running()
    assert [f.outcome for f in finished] == ["completed"], finished
    run_id = finished[0].run_id
    assert _turn_records(quest, run_id) == [("mcp:memory", "memory", "write")]
    card = [e for e in quest.log.read() if e.type == "memory.card_written"]
    assert len(card) == 1 and card[0].run_id == run_id and card[0].actor == "mcp:memory"
    result = next(e for e in quest.log.read() if e.type == "runner.tool_result")
    assert result.status == "ok" and result.output["status"] == "written"
    # Codex was given the host's URLs and the name of the env var with the token, which
    # is not in the file.
    text = (quest.root / ".ds" / "codex-home" / "config.toml").read_text()
    servers = tomllib.loads(text)["mcp_servers"]
    assert set(servers) == {"memory", "artifact", "bash_exec"}
    assert all(s["url"].endswith(f"/{quest.id}/{run_id}/{ns}") and s["bearer_token_env_var"] == "DS_MCP_TOKEN"
               for ns, s in servers.items())  # fmt: skip
    assert "command" not in servers["memory"]
    assert len(server.requests) == 2 and server.unoffered == []
    assert "written" in json.dumps(module.function_outputs(server.requests[1])["call_write"])
