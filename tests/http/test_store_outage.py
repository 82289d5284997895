"""A home on PostgreSQL whose server is stopped: the daemon answers 503
``log_unavailable`` (with the specific code as ``reason``), never 500; the CLI and the
MCP tools say the same codes; everything works again once the server is back.

The cluster is the test's own (``pg_cluster``): the session's stays up for the others.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import mcp
import yaml

from ds_events.home import Home
from ds_events.stores import close_pool
from handlers.mcp import QuestBinding, build_server
from tests.helpers import DS, ds_env, start_serve, tool_error
from tests.pg import Cluster, fresh_database
from tests.stores import pg_url, use_store

WAIT = 1  # log.connection_wait_seconds of the homes here
OUTAGE_REASONS = ("log_timeout", "log_connection_lost")


def on_own_database(home: Home, cluster: Cluster) -> str:
    """Point ``home`` at a fresh database of ``cluster`` with a short connection wait."""
    url = pg_url(fresh_database(cluster.dsn("postgres")))
    use_store(home, url)
    config: dict[str, Any] = yaml.safe_load(home.config_path.read_text())
    config["log"] = {"connection_wait_seconds": WAIT}
    home.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return url


async def answer(session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with session.request(method, url, timeout=aiohttp.ClientTimeout(total=60), **kwargs) as resp:
        return resp.status, await resp.json()


async def test_a_daemon_whose_database_is_stopped_answers_503_log_unavailable_and_recovers(
    home: Home, pg_cluster: Cluster, tmp_path: Path
) -> None:
    url = on_own_database(home, pg_cluster)
    home.create_quest("Outage", quest_id="q1").close()
    close_pool(url)
    proc, port = start_serve(home, "--no-turns", log=tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}/api"
    try:
        async with aiohttp.ClientSession() as session:
            status, body = await answer(session, "POST", f"{base}/quests/q1/messages", json={"text": "before"})
            assert status == 201, body
            before = body["seq"]
            await asyncio.to_thread(pg_cluster.stop_server, "fast")
            answers = [
                await answer(session, "POST", f"{base}/quests/q1/messages", json={"text": "while down"}),
                await answer(session, "POST", f"{base}/quests/q1/messages", json={"text": "while down"}),
                await answer(session, "GET", f"{base}/quests/q1/events?after=0"),
                await answer(session, "GET", f"{base}/quests"),
            ]
            for status, body in answers:
                assert status == 503, body
                assert body["error"] == "log_unavailable" and body["reason"] in OUTAGE_REASONS, body
                assert body["message"].startswith(("quest q1 of the PostgreSQL store", "postgresql://")), body
            # the one after the first has met an empty pool: a bounded wait, then log_timeout
            assert answers[1][1]["reason"] == "log_timeout"

            await asyncio.to_thread(pg_cluster.start_server)
            for _attempt in range(60):  # each try waits WAIT at most while the pool reconnects
                status, body = await answer(session, "POST", f"{base}/quests/q1/messages", json={"text": "after"})
                if status != 503:
                    break
            assert status == 201, body
            status, page = await answer(session, "GET", f"{base}/quests/q1/events?after={before}")
            assert status == 200 and [e["content"] for e in page["events"] if e["type"] == "conversation.message"] == ["after"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    log = (tmp_path / "serve.log").read_text()
    assert "internal_error" not in log and "Traceback" not in log, log


async def test_the_cli_and_the_mcp_tools_say_the_same_codes_while_the_database_is_stopped(
    home: Home, pg_cluster: Cluster
) -> None:
    url = on_own_database(home, pg_cluster)
    quest = home.create_quest("Outage", quest_id="q1")
    try:
        server = build_server("memory", QuestBinding(home=home.root, quest_id="q1"))
        async with mcp.Client(server) as client:
            await client.call_tool("list_recent", {})  # the quest is open before the server stops
            await asyncio.to_thread(pg_cluster.stop_server, "fast")
            errors = [
                tool_error(await client.call_tool("write", {"kind": "knowledge", "title": "Warm up", "body": "b"}))
                for _ in range(2)
            ]
            for err in errors:
                assert err["error"] == "log_unavailable" and err["reason"] in OUTAGE_REASONS, err
            done = await asyncio.to_thread(
                subprocess.run, [*DS, "message", "q1", "while down"], env=ds_env(home), capture_output=True, text=True, timeout=120
            )
            # a new process cannot even open its pool: log_unavailable, nothing more specific
            assert done.returncode == 1 and done.stderr.startswith("error: log_unavailable: cannot use the store"), done.stderr
            assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
            await asyncio.to_thread(pg_cluster.start_server)
            for _attempt in range(60):
                written = await client.call_tool("write", {"kind": "knowledge", "title": "Warm up", "body": "b"})
                if not written.is_error:
                    break
                assert tool_error(written)["error"] == "log_unavailable"
            assert not written.is_error, written.content
        assert len([e for e in quest.log.read() if e.type == "memory.card_written"]) == 1
    finally:
        quest.close()
        close_pool(url)
