"""Helpers for the tests that cover every MCP tool of every namespace (the contract and
the fuzz tests): tool discovery through ``list_tools``, one in-process client per
namespace, the check that an error answer is ours, and file-tree snapshots.

Tools are discovered from the servers themselves, never from a hand-written list, so a
tool added to any namespace is covered without touching the tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import mcp

from ds_events.home import Home
from ds_events.verify.audit import verify_log
from handlers.mcp import NAMESPACES, QuestBinding, artifact as artifact_ns, build_server

__all__ = [
    "SCENE",
    "discover_tools",
    "tool_ids",
    "open_clients",
    "fake_arxiv",
    "error_of",
    "unstructured_reason",
    "snapshot",
    "changed",
    "verify_every_log",
    "is_log_file",
]

# Markers of an error text that is not ours: pydantic's validation dump, a traceback,
# an exception repr, the SDK's own wording.
_FOREIGN = re.compile(r"validation error|Traceback|pydantic|Input should be|For further information|Error executing tool")


CONTRACT = {"metrics": {"top1": {"description": "top-1 accuracy", "derivation": "correct / n", "source_ref": "paper"}},
            "evaluation_protocol": {"split": "test"}}  # fmt: skip

# (namespace, tool, arguments): calls that give a quest state worth reading: a card and a
# record in memory, an idea, a confirmed baseline, a main run on its branch, an open
# analysis campaign and a request waiting for the user.
SCENE: list[tuple[str, str, dict[str, Any]]] = [
    ("memory", "write", {"kind": "knowledge", "title": "ViT needs warmup", "body": "diverged without", "tags": ["vit"]}),
    ("memory", "append_memory", {"record_type": "mistake_fix", "summary": "stale tokenizer cache", "detail": "clear it",
                                 "session_id": "s1"}),
    ("artifact", "record", {"payload": {"kind": "idea", "title": "label smoothing", "artifact_id": "idea-0001"}}),
    ("artifact", "publish_baseline", {"payload": {"baseline_id": "resnet20", "title": "ResNet-20", "variants": ["c10"]}}),
    ("artifact", "confirm_baseline", {"baseline_path": "baselines/resnet20", "baseline_id": "resnet20",
                                      "metric_contract": CONTRACT, "metrics_summary": {"top1": 0.9}, "primary_metric": "top1"}),
    ("artifact", "prepare_branch", {"run_id": "r1", "idea_id": "idea-0001"}),
    ("artifact", "checkpoint", {"message": "r1", "allow_empty": True}),
    ("artifact", "record_main_experiment", {"run_id": "r1", "title": "LS", "metrics_summary": {"top1": 0.92}}),
    ("artifact", "create_analysis_campaign", {"campaign_title": "why", "campaign_goal": "find out", "slices": ["a", "b"]}),
    ("artifact", "submit_paper_outline", {"title": "Label smoothing, measured", "detailed_outline": {"contributions": ["LS"]}}),
    ("artifact", "submit_paper_outline", {"mode": "select", "outline_id": "outline-001"}),
    ("artifact", "compile_outline_to_writing_plan", {}),
    ("artifact", "interact", {"message": "pick one", "kind": "decision_request",
                              "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]}),
]  # fmt: skip


def discover_tools() -> list[tuple[str, Any]]:
    """(namespace, tool) for every tool every namespace lists, in listing order, as a
    client sees them.

    Listing needs no quest: the servers are bound to a home that does not exist (the
    quest's opening, started by the server, fails and nothing asks for it).
    """
    nowhere = QuestBinding(home=Path("/nonexistent/ds-home"), quest_id="q1")

    async def listed(namespace: str) -> list[Any]:
        async with mcp.Client(build_server(namespace, nowhere)) as client:
            return list((await client.list_tools()).tools)

    return [(namespace, tool) for namespace in NAMESPACES for tool in asyncio.run(listed(namespace))]


def tool_ids(tools: list[tuple[str, Any]]) -> list[str]:
    return [f"{namespace}.{tool.name}" for namespace, tool in tools]


def fake_arxiv(paper_id: str) -> dict[str, Any]:
    """The arXiv API at the edge of the world: a paper for every well-formed id."""
    return {"title": f"Paper {paper_id}", "authors": ["A. Author"], "abstract": "An abstract.",
            "sections": [{"title": "Intro", "text": "Hello."}]}  # fmt: skip


@asynccontextmanager
async def open_clients(home: Home, quest_id: str = "q1") -> AsyncIterator[dict[str, mcp.Client]]:
    """An in-process client per namespace, all bound to one quest (arXiv faked)."""
    binding = QuestBinding(home=home.root, quest_id=quest_id)
    async with AsyncExitStack() as stack:
        clients: dict[str, mcp.Client] = {}
        for namespace in NAMESPACES:
            if namespace == "artifact":
                server = artifact_ns.build_server(binding, arxiv_fetcher=fake_arxiv)
            else:
                server = build_server(namespace, binding)
            clients[namespace] = await stack.enter_async_context(mcp.Client(server))
        yield clients


def error_of(result: Any) -> dict[str, Any] | None:
    """The JSON payload of an error answer, None for a success (see unstructured_reason)."""
    if not result.is_error:
        return None
    try:
        payload = json.loads(result.content[0].text)
    except (ValueError, IndexError, AttributeError):
        return {}
    return payload if isinstance(payload, dict) else {}


def unstructured_reason(result: Any) -> str | None:
    """Why ``result`` is not an answer of ours, or None if it is one.

    A success carries a JSON object as structured content; an error is exactly one text
    block holding ``{"error": code, "message": ...}`` with a snake_case code that is not
    ``internal_error`` (a bug of ours), and no foreign text in it.
    """
    if not result.is_error:
        if not isinstance(result.structured_content, dict):
            return f"a success without a JSON object: {result.content!r:.300}"
        return None
    if len(result.content) != 1 or getattr(result.content[0], "type", "") != "text":
        return f"an error that is not one text block: {result.content!r:.300}"
    text = result.content[0].text
    payload = error_of(result)
    if not payload:
        return f"an error that is not a JSON object: {text[:300]!r}"
    code, message = payload.get("error"), payload.get("message")
    if not isinstance(code, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", code):
        return f"an error without a stable code: {text[:300]!r}"
    if code == "internal_error":
        return f"internal_error: {text[:500]!r}"
    if not isinstance(message, str) or not message.strip():
        return f"an error without a message: {text[:300]!r}"
    if _FOREIGN.search(message):
        return f"foreign text in the message: {text[:500]!r}"
    return None


Snapshot = dict[str, tuple[str, str]]


def snapshot(root: Path, *, skip: Callable[[Path], bool] = lambda p: False) -> Snapshot:
    """relative path -> (kind, content digest or link target) of everything under root,
    without following symlinks."""
    found: Snapshot = {}
    if not root.exists():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not skip(here / d)]
        for name in [*dirnames, *filenames]:
            path = here / name
            if skip(path):
                continue
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir", "")
            else:
                found[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """What appeared, vanished or changed between two snapshots, sorted."""
    return sorted(
        [f"+ {p}" for p in after.keys() - before.keys()]
        + [f"- {p}" for p in before.keys() - after.keys()]
        + [f"~ {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    )


def verify_every_log(home: Home) -> dict[str, list[str]]:
    """Problems found by ``verify_log`` in every event log of the home (quest and global),
    by log path; empty when every log verifies."""
    problems: dict[str, list[str]] = {}
    key = home.log_key(create=False)
    for log in sorted(home.root.rglob("events.jsonl")):
        quest_root = log.parent.parent
        repo = quest_root if (quest_root / ".git").exists() else None
        report = verify_log(str(log), key=key, repo=repo)
        if not report.ok:
            problems[str(log)] = [str(p) for p in report.problems]
    return problems


def is_log_file(change: str) -> bool:
    """A change ("~ path", from :func:`changed`) that reading or appending may make: a log,
    the files that index it, the ``.ds`` directory holding them (global memory's index is
    made on the first search of it), and the home's witness of a log's head
    (``.ds/heads/<log>.head``, rewritten by every append)."""
    path = Path(change[2:])
    if path.parent.as_posix() == ".ds/heads":
        return True
    return ".ds" in path.parts and ("events" in path.name or "index" in path.name or path.name == ".ds")
