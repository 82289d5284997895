"""All three namespaces as real stdio MCP servers working on one quest at the same time.

The runner's view of the product: `ds mcp --namespace memory|artifact|bash_exec` started
as subprocesses, each appending to the same log while `ds message` queues user messages
from yet another process. Afterwards the log verifies, replay rewrites nothing, and the
views agree with what each server answered.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

import mcp
import pytest

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.verify import verify_log
from tests.helpers import DS, ds_env, stdio_server

pytestmark = pytest.mark.slow


def server(home: Home, namespace: str) -> mcp.StdioServerParameters:
    return stdio_server(home, namespace)


async def call(client: mcp.Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


async def memory_work(home: Home) -> list[str]:
    async with mcp.Client(server(home, "memory")) as c:
        ids = []
        for i in range(8):
            r = await call(c, "write", {"kind": "episodes", "title": f"Episode {i}", "body": f"unique{i} " * 5})
            ids.append(r["id"])
        found = await call(c, "search", {"query": "episode unique3"})
        assert found["items"][0]["id"] == ids[3]
        return ids


async def artifact_work(home: Home) -> list[str]:
    async with mcp.Client(server(home, "artifact")) as c:
        ids = [(await call(c, "record", {"payload": {"kind": "idea", "title": f"Idea {i}"}}))["artifact_id"] for i in range(6)]
        got: list[str] = []
        for _ in range(6):  # drain the mailbox while ds message keeps queuing
            r = await call(c, "interact", {"message": f"working on {len(got)}", "kind": "progress"})
            got += [m["text"] for m in r["recent_inbound_messages"]]
        return ids + got


async def bash_work(home: Home) -> dict[str, Any]:
    async with mcp.Client(server(home, "bash_exec")) as c:
        started = await call(c, "bash_exec", {"command": "echo hello from bash; exit 3", "mode": "detach"})
        return await call(c, "bash_exec", {"mode": "await", "id": started["id"], "wait_timeout_seconds": 30})


async def test_three_namespaces_and_the_cli_write_one_quest_at_once(home: Home, quest: Quest):
    env = ds_env(home)

    async def queue_messages() -> None:
        for i in range(5):
            proc = await asyncio.create_subprocess_exec(*DS, "message", "q1", f"user note {i}", env=env, stdout=subprocess.DEVNULL)
            assert await proc.wait() == 0

    memory_ids, artifact_out, bash_out, _ = await asyncio.wait_for(
        asyncio.gather(memory_work(home), artifact_work(home), bash_work(home), queue_messages()), 180
    )
    assert bash_out["status"] == "failed" and bash_out["session"]["exit_code"] == 3
    assert "hello from bash" in bash_out["log"]

    report = verify_log(str(quest.log.path))
    assert report.ok, report.problems[:3]
    quest.views.materialise()  # take in the other processes' events
    memory = quest.state("memory")
    assert set(memory_ids) <= set(memory.cards)
    artifacts = quest.state("artifacts")
    assert all(i in artifacts.records for i in artifact_out[:6])

    # Every user message reaches the agent exactly once: what interact() handed over
    # now, plus what a final consumer still finds pending, is each message once.
    from ds_events.services.interactions.mailbox import consume_mailbox

    _batch, rest = consume_mailbox(quest, consumer="test")
    delivered = artifact_out[6:] + [item.text for item in rest]
    assert sorted(delivered) == sorted(f"user note {i}" for i in range(5))

    # What the live processes wrote is exactly what a full replay renders.
    assert replay_quest(quest.root, quest_id=quest.id).files_written == []
