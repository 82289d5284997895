"""Shared helpers for the artifact tests: an in-process MCP client, the git CLI, and a
metric contract to confirm."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp
import yaml

from ds_events.home import Home
from handlers.mcp import QuestBinding
from handlers.mcp.artifact import build_server
from tests.helpers import tool_error

__all__ = ["client_for", "ok", "fails", "git", "git_ok", "set_config", "CONTRACT", "confirm_args"]


@asynccontextmanager
async def client_for(home: Home, quest_id: str = "q1", **server_kwargs: Any) -> AsyncIterator[mcp.Client]:
    # A context manager, not a fixture: anyio cancel scopes must stay in the test's task.
    async with mcp.Client(build_server(QuestBinding(home=home.root, quest_id=quest_id), **server_kwargs)) as c:
        yield c


async def ok(client: mcp.Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    return result.structured_content  # type: ignore[return-value]


async def fails(client: mcp.Client, tool: str, code: str, **args: Any) -> dict[str, Any]:
    """Call ``tool`` expecting the structured error ``code``; returns the error payload."""
    err = tool_error(await client.call_tool(tool, args))
    assert err["error"] == code, err
    assert err["message"]
    return err


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)


def git_ok(repo: Path, *args: str) -> str:
    done = git(repo, *args)
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def set_config(home: Home, section: str, **values: Any) -> None:
    """Merge ``values`` into ``section`` of the home's config.yaml."""
    cfg = yaml.safe_load(home.config_path.read_text()) or {}
    cfg.setdefault(section, {}).update(values)
    home.config_path.write_text(yaml.safe_dump(cfg))


CONTRACT: dict[str, Any] = {
    "metrics": {
        "top1": {"description": "top-1 accuracy on the CIFAR-10 test set", "derivation": "correct / 10000",
                 "source_ref": "He et al. 2016, Table 6"},
        "nll": {"description": "mean test negative log-likelihood", "origin_path": "baselines/resnet20/eval.json",
                "source_ref": "reproduced run", "direction": "lower"},
    },
    "evaluation_protocol": {"split": "test", "seeds": 3},
}


def confirm_args(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "baseline_path": "baselines/resnet20",
        "baseline_id": "resnet20",
        "metric_contract": CONTRACT,
        "metrics_summary": {"top1": 0.916, "nll": 0.31},
        "primary_metric": "top1",
        "summary": "ResNet-20 reproduced within 0.1 points of the paper",
    }
    args.update(over)
    return args
