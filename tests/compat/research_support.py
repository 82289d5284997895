"""What the research-tool compat tests share: a real stdio `artifact` server, calls that
must succeed or fail in our shape, and the events a call appended to the log."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp

from ds_events.home import Home, Quest
from tests.helpers import stdio_server

__all__ = ["artifact_client", "stdio_artifact", "ok", "refused", "LogWatch", "CONTRACT", "confirm_baseline"]

CONTRACT = {
    "metrics": {"top1": {"description": "top-1 accuracy on the test split", "derivation": "correct / 10000",
                         "source_ref": "He et al. 2016, Table 6"}},
    "evaluation_protocol": {"split": "test"},
}  # fmt: skip


def stdio_artifact(home: Home, quest_id: str = "q1") -> mcp.StdioServerParameters:
    """`ds mcp --namespace artifact` as a runner starts it: a subprocess speaking stdio."""
    return stdio_server(home, "artifact", quest_id)


@asynccontextmanager
async def artifact_client(home: Home, quest_id: str = "q1") -> AsyncIterator[mcp.Client]:
    """A real stdio client of `ds mcp --namespace artifact`, as a runner starts it (a
    context manager, not a fixture: anyio cancel scopes must stay in the test's task)."""
    async with mcp.Client(stdio_artifact(home, quest_id)) as c:
        yield c


async def ok(client: mcp.Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(tool, args or {})
    assert not result.is_error, (tool, result.content)
    data = result.structured_content
    assert isinstance(data, dict) and data.get("ok") is not False, data
    return data


async def refused(client: mcp.Client, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(tool, args or {})
    assert result.is_error, (tool, result.structured_content)
    payload = json.loads(result.content[0].text)
    assert isinstance(payload.get("error"), str) and payload.get("message"), payload
    return payload


class LogWatch:
    """The events appended to a quest's log since the last :meth:`since` (tool-call
    records left out: every call, refused or not, writes one)."""

    def __init__(self, quest: Quest) -> None:
        self.path = quest.root / ".ds" / "events.jsonl"
        self.offset = self.path.stat().st_size

    def since(self) -> list[dict[str, Any]]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        events = [json.loads(line) for line in data.splitlines()]
        return [e for e in events if not e["type"].startswith("tool.")]

    def types(self) -> list[str]:
        return [e["type"] for e in self.since()]


async def confirm_baseline(client: mcp.Client, value: float = 0.90) -> None:
    await ok(client, "publish_baseline", {"payload": {"baseline_id": "resnet20", "title": "ResNet-20"}})
    await ok(client, "confirm_baseline", {
        "baseline_path": "baselines/resnet20", "baseline_id": "resnet20", "metric_contract": CONTRACT,
        "metrics_summary": {"top1": value}, "primary_metric": "top1",
    })  # fmt: skip
