"""The `memory` MCP namespace: durable knowledge cards the agent writes and finds again.

Thin adapters: each tool decodes its arguments, calls one service function and returns
its answer. Domain errors become ``ToolError``s with a stable ``error`` code.
"""

from __future__ import annotations

import weakref
from typing import Any, TypedDict

from mcp.server.mcpserver import Context, MCPServer

from ds_events.services.memory_audit import audit as audit_memory_store
from ds_events.services.memory_records import append_record, audit_records, read_records
from ds_events.memory.store import MemoryContext
from ds_events.services import memory as memory_service

from .common import QuestBinding, ToolContext, new_server, tool_context, tool_errors

__all__ = ["build_server", "INSTRUCTIONS"]

INSTRUCTIONS = """\
Durable memory for this research quest. Before re-deriving something (a paper's caveat,
a failed route, a metric rule), `search` for it; after learning something that a later
turn would otherwise rediscover, `write` a card. Kinds: papers, ideas, decisions,
episodes, knowledge, templates. Scopes: quest (this quest), global (all quests), both
(search/list only). A write that looks like an existing card answers
status="duplicate_candidates": re-call with supersedes=<id> (replaces it) or force=True.
Record-style tools (read_memory/append_memory/audit_memory) keep short typed records
(mem-NNN) in the same store."""


class WriteResult(TypedDict, total=False):
    status: str  # written | duplicate_candidates | config_polluted
    id: str
    kind: str
    title: str
    scope: str
    path: str
    seq: int
    supersedes: str | None
    record_id: str
    record_type: str
    message: str
    candidates: list[dict[str, Any]]
    settings: list[str]


class CardsResult(TypedDict):
    count: int
    results: list[dict[str, Any]]


class PromoteResult(TypedDict):
    status: str
    id: str
    global_id: str
    global_path: str
    seq: int


class ReadMemoryResult(TypedDict):
    text: str
    count: int
    groups: dict[str, list[dict[str, Any]]]


def build_server(binding: QuestBinding) -> MCPServer[ToolContext]:
    """The `memory` namespace bound to one quest."""

    def setup(ctx: ToolContext) -> None:
        mem = MemoryContext(quest=ctx.quest, actor=ctx.actor)
        ctx.extra["memory"] = mem
        weakref.finalize(ctx, mem.close)  # the global log and indexes close with the server

    server = new_server("memory", binding, instructions=INSTRUCTIONS, setup=setup)

    @server.tool()
    @tool_errors
    async def write(
        kind: str,
        title: str,
        ctx: Context,
        body: str = "",
        markdown: str | None = None,
        scope: str = "quest",
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        supersedes: str | None = None,
        force: bool = False,
    ) -> WriteResult:
        """Save a lesson as a memory card so later turns find it instead of rediscovering it.

        Use after learning something durable: a paper's caveat (kind="papers"), an idea
        (ideas), a decision and its reason (decisions), what happened in a run or a failed
        route (episodes), a fact or rule (knowledge), a reusable snippet (templates).

        Args:
            kind: papers | ideas | decisions | episodes | knowledge | templates.
            title: one line stating the lesson (no config settings like "lr=0.1" in it).
            body: Markdown details (numbers, commands, evidence).
            markdown: alternatively a whole card, "---\\nYAML frontmatter\\n---\\nbody".
            scope: "quest" (default) or "global" (shared by every quest).
            tags: short labels, e.g. ["optimizer", "vit"].
            metadata: extra frontmatter, e.g. {"stage": "experiment", "confidence": 0.8,
                "evidence_paths": ["runs/12/log.txt"], "retrieval_hints": ["warmup"]}.
            supersedes: id of the card this one replaces (it leaves search, stays on disk).
            force: keep both even if a near-duplicate exists.

        Returns status "written" with id and path; or "duplicate_candidates" with the
        similar cards (nothing written: re-call with supersedes=<id> or force=True); or
        "config_polluted" with the offending settings (rewrite the title).

        Example: write(kind="knowledge", title="ViT needs LR warmup with AdamW",
                       body="Without warmup the loss diverged in 3/3 runs.", tags=["vit"])
        """
        return memory_service.write_card(  # type: ignore[return-value]
            _mem(ctx), kind, title, body, markdown=markdown, scope=scope, tags=tags, metadata=metadata,
            supersedes=supersedes, force=force,
        )  # fmt: skip

    @server.tool()
    @tool_errors
    async def read(ctx: Context, card_id: str | None = None, path: str | None = None, scope: str = "quest") -> dict[str, Any]:
        """Read one card in full: fields, body, and its file text as on disk.

        Args:
            card_id: e.g. "knowledge-1a2b3c4d" or a record id "mem-007".
            path: or the card's file, e.g. "memory/knowledge/knowledge-1a2b3c4d.md";
                paths outside the memory directories are refused.
            scope: where to look for card_id: quest | global | both.

        Returns the card with "body", "metadata", "markdown" and "hand_edited" (the file
        differs from the log: someone edited it; `ds memory import` takes it in).

        Example: read(card_id="paper-0a1b2c3d")
        """
        return memory_service.read_card(_mem(ctx), card_id=card_id, path=path, scope=scope)

    @server.tool()
    @tool_errors
    async def search(
        query: str,
        ctx: Context,
        scope: str = "quest",
        limit: int = 10,
        kind: str | None = None,
        tags: list[str] | None = None,
        diverse: bool = False,
    ) -> CardsResult:
        """Find cards by meaning words, best first (BM25 over title, body, tags and hints).

        Natural-language questions work: the words are OR-ed and ranked, so a card that
        matches most of them comes first. Superseded cards are never returned.

        Args:
            query: words or a question, e.g. "why does ViT training diverge early".
            scope: quest | global | both.
            limit: 1-100 results.
            kind: only this kind (papers, ideas, ...).
            tags: only cards carrying every one of these tags.
            diverse: return the top results that are also mutually different (no two
                near-duplicates), for a broad overview.

        Returns {"count", "results": [{id, kind, title, scope, score, snippet, path, tags}]}.

        Example: search(query="label smoothing calibration", scope="both", limit=5)
        """
        results = memory_service.search(_mem(ctx), query, scope=scope, limit=limit, kind=kind, tags=tags, diverse=diverse)
        return {"count": len(results), "results": results}

    @server.tool()
    @tool_errors
    async def list_recent(ctx: Context, scope: str = "quest", limit: int = 10, kind: str | None = None) -> CardsResult:
        """The most recently written or changed active cards, newest first.

        Args: scope (quest | global | both), limit (1-100), kind (optional filter).
        Example: list_recent(kind="decisions", limit=5)
        """
        results = memory_service.list_recent(_mem(ctx), scope=scope, limit=limit, kind=kind)
        return {"count": len(results), "results": results}

    @server.tool()
    @tool_errors
    async def promote_to_global(ctx: Context, card_id: str | None = None, path: str | None = None) -> PromoteResult:
        """Copy a quest card into global memory (visible to every quest), with provenance.

        Use for lessons that hold beyond this quest. Both logs record the promotion; the
        quest card shows promoted_to, the global copy promoted_from.

        Args: card_id, or path of the quest card. Example: promote_to_global(card_id="knowledge-1a2b3c4d")
        """
        return memory_service.promote_to_global(_mem(ctx), card_id=card_id, path=path)  # type: ignore[return-value]

    @server.tool()
    @tool_errors
    async def audit(ctx: Context, scope: str = "quest") -> dict[str, Any]:
        """A read-only health report of memory (changes nothing).

        Reports counts per kind, near-duplicate clusters among active cards,
        config-polluted titles, broken supersession links, and drift between card files
        and the log (modified / missing / untracked files; `ds memory import` takes them in).
        Args: scope: quest | global | both. Example: audit()
        """
        return audit_memory_store(_mem(ctx), scope)

    @server.tool()
    @tool_errors
    async def read_memory(
        ctx: Context, task_description: str = "", tags: list[str] | None = None, top_k: int = 5
    ) -> ReadMemoryResult:
        """Records relevant to a task: top_k relevant and mutually different, grouped by type,
        mistakes and constraints first. With no arguments: a one-line digest of every record.

        Args: task_description (what you are about to do), tags (filter), top_k (1-100).
        Example: read_memory(task_description="rerun the tokenizer ablation", top_k=5)
        """
        return read_records(_mem(ctx), task_description, tags=tags, top_k=top_k)  # type: ignore[return-value]

    @server.tool()
    @tool_errors
    async def append_memory(
        record_type: str,
        summary: str,
        detail: str,
        session_id: str,
        ctx: Context,
        tags: list[str] | None = None,
        supersedes: str | None = None,
        force: bool = False,
    ) -> WriteResult:
        """Append a typed record (id mem-NNN) to the quest's memory.

        Args:
            record_type: mistake_fix | working_solution | methodology_note | pipeline_constraint.
            summary: one line (no "key=value" config settings).
            detail: what happened / what to do, with specifics.
            session_id: your session's id.
            tags, supersedes (a mem-NNN or card id it replaces), force: as for `write`.

        Returns message "appended mem-NNN -> <path>", or status duplicate_candidates /
        config_polluted as for `write`.

        Example: append_memory(record_type="mistake_fix", summary="Stale tokenizer cache after
                 vocab change", detail="rm -rf ~/.cache/tok before rerunning", session_id="s-12")
        """
        return append_record(  # type: ignore[return-value]
            _mem(ctx), record_type, summary, detail, session_id, tags=tags, supersedes=supersedes, force=force
        )

    @server.tool()
    @tool_errors
    async def audit_memory(ctx: Context) -> dict[str, Any]:
        """The audit report restricted to records, counted per record type. Example: audit_memory()"""
        return audit_records(_mem(ctx))

    return server


def _mem(ctx: Context) -> MemoryContext:  # type: ignore[type-arg]
    return tool_context(ctx).extra["memory"]  # type: ignore[no-any-return]
