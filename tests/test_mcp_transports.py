"""The same tools, events and refusals over both transports a turn's agent may use: stdio
(``ds mcp --namespace ...``, a real subprocess per namespace) and the host-served
streamable HTTP (:mod:`handlers.mcp.host`, a real loopback socket, the turn's bearer
token). Each case runs once per transport with a real MCP client; what it records in
the log is checked to be the turn's (its run id, the namespace's actor).

Then what only the HTTP transport has: the token (missing, wrong, another turn's, after
the turn ended: a structured 401, nothing called, nothing recorded), the quest handles it
keeps between turns (each turn's events still carry that turn's run id), and the config
switch that selects it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2 as httpx
import mcp
import pytest
import yaml
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ds_events.config import RunnerConfig
from ds_events.errors import Invalid
from ds_events.home import Home, Quest
from ds_events.runners.base import McpEndpoint, mcp_endpoints, serving_turn
from ds_events.services.runtime.commands import TurnSpec
from handlers.mcp.host import McpHost, TurnGrant
from tests.helpers import ds_env, tool_error

RUN = "run-transport-1"
Connect = Callable[[str], Any]  # namespace -> an entered mcp.Client


@asynccontextmanager
async def clients(transport: str, home: Home, quest_id: str = "q1", run_id: str = RUN) -> AsyncIterator[Connect]:
    """``connect(namespace)``: a real client of that namespace over ``transport``, bound
    to ``quest_id`` for the turn ``run_id``."""
    async with AsyncExitStack() as stack:
        grant: TurnGrant | None = None
        if transport == "http":
            host = await McpHost.running()
            grant = await host.grant(home=home.root, quest_id=quest_id, run_id=run_id)
            stack.push_async_callback(McpHost.close_running)

        async def connect(namespace: str) -> mcp.Client:
            if grant is None:
                env = ds_env(home, DS_QUEST_ID=quest_id, DS_RUN_ID=run_id)
                server: Any = mcp.StdioServerParameters(
                    command=sys.executable, args=["-m", "ds_events", "mcp", "--namespace", namespace], env=env
                )
            else:
                http = await stack.enter_async_context(create_mcp_http_client(headers=grant.headers))
                server = streamable_http_client(grant.urls[namespace], http_client=http)
            return await stack.enter_async_context(mcp.Client(server))

        yield connect


def calls_of(quest: Quest, namespace: str) -> list[Any]:
    return [e for e in quest.log.read() if e.type == "tool.call_finished" and e.namespace == namespace]


# stdio starts a server process per namespace (slow); http is served in this process.
both = pytest.mark.parametrize("transport", [pytest.param("stdio", marks=pytest.mark.slow), "http"])


@both
async def test_memory_writes_a_card_and_refuses_a_bad_kind_with_its_code(transport: str, quest: Quest) -> None:
    async with clients(transport, quest.home) as connect:
        memory = await connect("memory")
        ok = await memory.call_tool("write", {"kind": "knowledge", "title": "Warmup avoids divergence", "body": "500 steps"})
        bad = await memory.call_tool("write", {"kind": "gossip", "title": "x", "body": "y"})
    assert not ok.is_error and ok.structured_content["status"] == "written"
    assert tool_error(bad)["error"] == "invalid_kind"
    card = [e for e in quest.log.read() if e.type == "memory.card_written"]
    assert [c.title for c in card] == ["Warmup avoids divergence"]
    assert card[0].actor == "mcp:memory" and card[0].run_id == RUN
    calls = calls_of(quest, "memory")
    assert [(c.tool, c.status) for c in calls] == [("write", "ok"), ("write", "error")]
    assert all(c.actor == "mcp:memory" and c.run_id == RUN for c in calls)
    assert calls[1].error_code == "invalid_kind"


@both
async def test_artifact_records_an_idea_and_refuses_an_unknown_kind_with_its_code(transport: str, quest: Quest) -> None:
    async with clients(transport, quest.home) as connect:
        artifact = await connect("artifact")
        ok = await artifact.call_tool("record", {"payload": {"kind": "idea", "title": "label smoothing"}})
        bad = await artifact.call_tool("record", {"payload": {"kind": "horoscope", "title": "x"}})
        unknown = await artifact.call_tool("no_such_tool", {})
    assert not ok.is_error and ok.structured_content["ok"] is True
    assert tool_error(bad)["error"] == "unknown_kind"
    assert tool_error(unknown)["error"] == "unknown_tool"
    recorded = [e for e in quest.log.read() if e.type == "artifact.recorded"]
    assert len(recorded) == 1 and recorded[0].actor == "mcp:artifact" and recorded[0].run_id == RUN
    calls = calls_of(quest, "artifact")
    assert [(c.tool, c.status) for c in calls] == [("record", "ok"), ("record", "error")]  # an unknown tool: not recorded
    assert calls[1].error_code == "unknown_kind"
    assert all(c.actor == "mcp:artifact" and c.run_id == RUN for c in calls)


@both
async def test_bash_exec_runs_a_command_and_refuses_an_empty_one_with_its_code(transport: str, quest: Quest) -> None:
    async with clients(transport, quest.home) as connect:
        bash = await connect("bash_exec")
        command = "echo from-$DS_QUEST_ID-$DS_RUN_ID-$DS_HOME"
        ok = await bash.call_tool("bash_exec", {"command": command, "mode": "await", "timeout_seconds": 60})
        bad = await bash.call_tool("bash_exec", {"command": "   ", "mode": "detach"})
    assert not ok.is_error, ok.content
    # The command runs with the quest, the turn and the home in its env either way.
    assert ok.structured_content["exit_code"] == 0
    assert f"from-q1-{RUN}-{quest.home.root}" in json.dumps(ok.structured_content), ok.structured_content
    assert tool_error(bad)["error"] == "empty_command"
    started = [e for e in quest.log.read() if e.type == "bash.session_started"]
    assert len(started) == 1 and started[0].run_id == RUN
    calls = calls_of(quest, "bash_exec")
    assert [c.status for c in calls] == ["ok", "error"] and calls[1].error_code == "empty_command"
    assert all(c.actor == "mcp:bash_exec" and c.run_id == RUN for c in calls)


# -- the host-served transport's own rules -----------------------------------------------


def _call(url: str, headers: dict[str, str]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "write", "arguments": {"kind": "knowledge", "title": "t", "body": "b"}}}  # fmt: skip
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    return httpx.post(url, json=body, headers={**accept, **headers}, timeout=60)


async def _post(url: str, headers: dict[str, str]) -> httpx.Response:
    import anyio.to_thread

    return await anyio.to_thread.run_sync(_call, url, headers)


async def test_a_request_without_the_turns_token_is_refused_with_a_structured_401_and_nothing_recorded(
    home: Home,
) -> None:
    q1 = home.create_quest("one", quest_id="q1")
    q2 = home.create_quest("two", quest_id="q2")
    host = await McpHost.running()
    try:
        mine = await host.grant(home=home.root, quest_id="q1", run_id="run-a")
        same_quest = await host.grant(home=home.root, quest_id="q1", run_id="run-b")
        other_quest = await host.grant(home=home.root, quest_id="q2", run_id="run-c")
        before = (q1.log.last_seq, q2.log.last_seq)
        url = mine.urls["memory"]
        cases = {
            "missing_token": {},
            "invalid_token": {"Authorization": "Bearer not-a-token"},
            "wrong_turn": same_quest.headers,  # the token of another run of the same quest
        }
        for code, headers in cases.items():
            answer = await _post(url, headers)
            assert answer.status_code == 401, (code, answer.text)
            assert answer.json()["error"] == code and answer.json()["message"], answer.text
            assert answer.headers["www-authenticate"].startswith("Bearer")
        wrong_quest = await _post(url, other_quest.headers)
        assert wrong_quest.status_code == 401 and wrong_quest.json()["error"] == "wrong_turn"
        # A token of q1 at q2's URL is as wrong as q2's at q1's.
        crossed = await _post(other_quest.urls["memory"], mine.headers)
        assert crossed.status_code == 401 and crossed.json()["error"] == "wrong_turn"
        unknown = await _post(url.rsplit("/", 1)[0] + "/telepathy", mine.headers)
        assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_namespace"

        # The right token works; once its turn has ended it does not.
        assert (await _post(url, mine.headers)).status_code == 200
        await host.revoke(mine)
        ended = await _post(url, mine.headers)
        assert ended.status_code == 401 and ended.json()["error"] == "invalid_token"
        q1.views.catch_up()
        written = [e for e in q1.log.read(after_seq=before[0]) if e.type == "memory.card_written"]
        assert len(written) == 1 and written[0].run_id == "run-a"  # only the one authorised call
        assert q2.log.last_seq == before[1]
    finally:
        await McpHost.close_running()
        q1.close()
        q2.close()


async def test_the_host_keeps_a_quests_handles_between_turns_and_each_turn_stamps_its_own_run(quest: Quest) -> None:
    host = await McpHost.running()
    try:
        seen = []
        lessons = {"run-1": ("Warmup avoids early divergence", "500 steps of warmup"),
                   "run-2": ("Tokenizer caches go stale", "clear them after a vocabulary change")}  # fmt: skip
        for run_id, (title, body) in lessons.items():
            grant = await host.grant(home=quest.home.root, quest_id=quest.id, run_id=run_id)
            turn = next(iter(host._turns.values()))
            seen.append(turn.served["memory"].context)
            http = create_mcp_http_client(headers=grant.headers)
            async with http, mcp.Client(streamable_http_client(grant.urls["memory"], http_client=http)) as memory:
                result = await memory.call_tool("write", {"kind": "knowledge", "title": title, "body": body})
            assert not result.is_error and result.structured_content["status"] == "written", result.content
            await host.revoke(grant)
            await _returned(host)
        assert seen[0] is not None and seen[0] is seen[1], "the second turn reused the first one's open quest"
        cards = {e.title: e.run_id for e in quest.log.read() if e.type == "memory.card_written"}
        assert cards == {title: run_id for run_id, (title, _) in lessons.items()}
    finally:
        await McpHost.close_running()


async def _returned(host: McpHost) -> None:
    """Until every namespace lent to an ended turn is back in the pool."""
    from tests.helpers import wait_until_async

    await wait_until_async(lambda: not host._lent, what="the ended turn's namespaces back in the pool")


def _spec(quest: Quest, run_id: str) -> TurnSpec:
    return TurnSpec(
        quest_id=quest.id, quest_root=str(quest.root), home=str(quest.home.root), run_id=run_id,
        run_dir=str(quest.root / ".ds" / "runs" / run_id), prompt="", prompt_path="", skill="scout", runner="scripted",
        env={"DS_HOME": str(quest.home.root), "DS_QUEST_ID": quest.id},
    )  # fmt: skip


async def test_runners_are_told_the_hosts_urls_while_the_turn_runs_and_stdio_servers_otherwise(quest: Quest) -> None:
    spec = _spec(quest, "run-9")
    stdio = mcp_endpoints(spec)
    assert [e.transport for e in stdio] == ["stdio"] * 3 and stdio[0].env["DS_RUN_ID"] == "run-9"
    try:
        async with serving_turn(spec, RunnerConfig(mcp_transport="http")) as endpoints:
            assert [e.namespace for e in endpoints] == ["memory", "artifact", "bash_exec"]
            assert all(e.transport == "http" and e.url.endswith(f"/q1/run-9/{e.namespace}") for e in endpoints)
            assert len({e.token for e in endpoints}) == 1 and mcp_endpoints(spec) == endpoints
            token = endpoints[0].token
        # The turn is over: stdio again for this spec, and its token refused.
        assert [e.transport for e in mcp_endpoints(spec)] == ["stdio"] * 3
        gone = await _post(endpoints[0].url, McpEndpoint("memory", url="x", token=token).headers)
        assert gone.status_code == 401 and gone.json()["error"] == "invalid_token"
        async with serving_turn(spec, RunnerConfig(mcp_transport="stdio")) as endpoints:
            assert [e.transport for e in endpoints] == ["stdio"] * 3
        async with serving_turn(spec, RunnerConfig()) as endpoints:  # the default: http
            assert all(e.transport == "http" for e in endpoints) and endpoints[0].token != token
    finally:
        await McpHost.close_running()


def test_a_bad_mcp_transport_in_the_config_is_refused_with_a_structured_error(home: Home) -> None:
    assert home.config().runner.mcp_transport == "http"  # nothing set: the default
    home.config_path.write_text(yaml.safe_dump({"runner": {"mcp_transport": "carrier-pigeon"}}))
    with pytest.raises(Invalid) as refused:
        home.config()
    assert refused.value.code == "bad_config" and "mcp_transport" in str(refused.value)
    home.config_path.write_text(yaml.safe_dump({"runner": {"mcp_transport": "stdio"}}))
    assert home.config().runner.mcp_transport == "stdio"


async def test_every_runners_mcp_config_names_the_hosts_urls_while_it_serves_the_turn(quest: Quest) -> None:
    import tomllib

    from ds_events.runners import acp as acp_runner, claude as claude_runner, codex as codex_runner

    spec = _spec(quest, "run-7")
    config = RunnerConfig(mcp_transport="http")
    try:
        async with serving_turn(spec, config) as endpoints:
            token, urls = endpoints[0].token, {e.namespace: e.url for e in endpoints}
            claude = claude_runner.mcp_config(spec)["mcpServers"]
            assert {ns: (s["type"], s["url"], s["headers"]) for ns, s in claude.items()} == {
                ns: ("http", url, {"Authorization": f"Bearer {token}"}) for ns, url in urls.items()
            }
            served = acp_runner.mcp_servers(spec, http=True)
            assert [(s.name, s.url, [(h.name, h.value) for h in s.headers]) for s in served] == [
                (ns, url, [("Authorization", f"Bearer {token}")]) for ns, url in urls.items()
            ]
            # An ACP agent that does not say it takes http servers gets stdio ones.
            assert all(hasattr(s, "command") for s in acp_runner.mcp_servers(spec, http=False))
            text = codex_runner.render_config(spec, config)
            assert token not in text  # Codex reads it from DS_MCP_TOKEN
            tables = tomllib.loads(text)["mcp_servers"]
            assert {ns: (t["url"], t["bearer_token_env_var"], t["required"]) for ns, t in tables.items()} == {
                ns: (url, "DS_MCP_TOKEN", True) for ns, url in urls.items()
            }
    finally:
        await McpHost.close_running()
    # Outside the turn, the same builders give the stdio servers.
    assert all(s["type"] == "stdio" for s in claude_runner.mcp_config(spec)["mcpServers"].values())
    assert "url" not in tomllib.loads(codex_runner.render_config(spec, config))["mcp_servers"]["memory"]
