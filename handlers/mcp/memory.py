"""The `memory` MCP namespace: durable knowledge cards the agent writes and finds again.

Thin adapters: each tool decodes its arguments, calls one service function and returns
its answer. Domain errors become ``ToolError``s with a stable ``error`` code.
"""

from __future__ import annotations

from typing import Any, TypedDict

from mcp.server.mcpserver import MCPServer

from ds_events.memory.store import MemoryContext
from ds_events.services import memory as memory_service
from ds_events.services.memory_audit import audit as audit_memory_store
from ds_events.services.memory_commands import (
    AppendRecord,
    AuditMemory,
    AuditRecords,
    ListRecent,
    PromoteToGlobal,
    ReadCard,
    ReadRecords,
    SearchCards,
    WriteCard,
)
from ds_events.services.memory_records import append_record, audit_records, read_records

from .common import Namespace, QuestBinding, ToolContext

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

    def setup(tc: ToolContext) -> None:
        mem = MemoryContext(quest=tc.quest, actor=tc.actor)
        tc.extra["memory"] = mem
        tc.on_close(mem.close)  # the global log and the indexes close with the server

    ns = Namespace("memory", binding, instructions=INSTRUCTIONS, setup=setup, serial=True)

    @ns.tool
    def write(tc: ToolContext, cmd: WriteCard) -> WriteResult:
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
            _mem(tc), cmd.kind, cmd.title, cmd.body, markdown=cmd.markdown, scope=cmd.scope, tags=cmd.tags,
            metadata=cmd.metadata, supersedes=cmd.supersedes, force=cmd.force,
        )  # fmt: skip

    @ns.tool
    def read(tc: ToolContext, cmd: ReadCard) -> dict[str, Any]:
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
        return memory_service.read_card(_mem(tc), card_id=cmd.card_id, path=cmd.path, scope=cmd.scope)

    @ns.tool
    def search(tc: ToolContext, cmd: SearchCards) -> CardsResult:
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
        results = memory_service.search(
            _mem(tc), cmd.query, scope=cmd.scope, limit=cmd.limit, kind=cmd.kind, tags=cmd.tags, diverse=cmd.diverse
        )
        return {"count": len(results), "results": results}

    @ns.tool
    def list_recent(tc: ToolContext, cmd: ListRecent) -> CardsResult:
        """The most recently written or changed active cards, newest first.

        Args: scope (quest | global | both), limit (1-100), kind (optional filter).
        Example: list_recent(kind="decisions", limit=5)
        """
        results = memory_service.list_recent(_mem(tc), scope=cmd.scope, limit=cmd.limit, kind=cmd.kind)
        return {"count": len(results), "results": results}

    @ns.tool
    def promote_to_global(tc: ToolContext, cmd: PromoteToGlobal) -> PromoteResult:
        """Copy a quest card into global memory (visible to every quest), with provenance.

        Use for lessons that hold beyond this quest. Both logs record the promotion; the
        quest card shows promoted_to, the global copy promoted_from.

        Args: card_id, or path of the quest card. Example: promote_to_global(card_id="knowledge-1a2b3c4d")
        """
        return memory_service.promote_to_global(_mem(tc), card_id=cmd.card_id, path=cmd.path)  # type: ignore[return-value]

    @ns.tool
    def audit(tc: ToolContext, cmd: AuditMemory) -> dict[str, Any]:
        """A read-only health report of memory (changes nothing).

        Reports counts per kind, near-duplicate clusters among active cards,
        config-polluted titles, broken supersession links, and drift between card files
        and the log (modified / missing / untracked files; `ds memory import` takes them in).
        Args: scope: quest | global | both. Example: audit()
        """
        return audit_memory_store(_mem(tc), cmd.scope)

    @ns.tool
    def read_memory(tc: ToolContext, cmd: ReadRecords) -> ReadMemoryResult:
        """Records relevant to a task: top_k relevant and mutually different, grouped by type,
        mistakes and constraints first. With no arguments: a one-line digest of every record.

        Args: task_description (what you are about to do), tags (filter), top_k (1-100).
        Example: read_memory(task_description="rerun the tokenizer ablation", top_k=5)
        """
        return read_records(_mem(tc), cmd.task_description, tags=cmd.tags, top_k=cmd.top_k)  # type: ignore[return-value]

    @ns.tool
    def append_memory(tc: ToolContext, cmd: AppendRecord) -> WriteResult:
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
            _mem(tc), cmd.record_type, cmd.summary, cmd.detail, cmd.session_id, tags=cmd.tags, supersedes=cmd.supersedes,
            force=cmd.force,
        )

    @ns.tool
    def audit_memory(tc: ToolContext, cmd: AuditRecords) -> dict[str, Any]:
        """The audit report restricted to records, counted per record type. Example: audit_memory()"""
        return audit_records(_mem(tc))

    return ns.server()


def _mem(tc: ToolContext) -> MemoryContext:
    tc.quest  # noqa: B018 - opens the quest (and runs setup) if it is not open yet
    return tc.extra["memory"]  # type: ignore[no-any-return]
