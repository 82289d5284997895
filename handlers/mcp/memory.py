"""The `memory` MCP namespace: durable knowledge cards the agent writes and finds again.

Thin adapters: each tool decodes its arguments, calls one service function and returns
its answer. Domain errors become ``ToolError``s with a stable ``error`` code.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as memory_service
from ds_events.services.memory.audit import audit_memory as audit_memory_store
from ds_events.services.memory.commands import (
    AppendRecord,
    AuditMemory,
    AuditRecords,
    AuditReport,
    CardsResult,
    CardText,
    ListRecent,
    PromoteResult,
    PromoteToGlobal,
    ReadCard,
    ReadRecords,
    RecordsResult,
    SearchCards,
    SearchResult,
    WriteCard,
    WriteResult,
)
from ds_events.services.memory.records import append_record, audit_records, read_records

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

        tags: a list ["vit", "optim"] or a comma-separated string "vit, optim";
        metadata: extra frontmatter kept on the card.

        Returns ok=true, status "written" with id, path, tags and metadata; or ok=false with
        status "duplicate_candidates" and the similar cards (nothing written: re-call with
        supersedes=<id> or force=True); or ok=false with status "config_polluted" and the
        offending settings (rewrite the title).

        Example: write(kind="knowledge", title="ViT needs LR warmup with AdamW",
                       body="Without warmup the loss diverged in 3/3 runs.", tags="vit, optim",
                       metadata={"confidence": 0.8})
        """
        return memory_service.write(_mem(tc), cmd)

    @ns.tool
    def read(tc: ToolContext, cmd: ReadCard) -> CardText:
        """Read one card in full: fields, body, and its file text as on disk.

        Returns the card with "body", "metadata", "markdown" and "hand_edited" (the file
        differs from the log: someone edited it; `ds memory import` takes it in).

        Example: read(card_id="paper-0a1b2c3d")
        """
        return memory_service.read(_mem(tc), cmd)

    @ns.tool
    def search(tc: ToolContext, cmd: SearchCards) -> SearchResult:
        """Find cards by meaning words, best first (BM25 over title, body, tags and hints).

        Natural-language questions work: the words are OR-ed and ranked, so a card that
        matches most of them comes first. Superseded cards are never returned.

        Returns {"ok", "count", "items": [{id, kind, title, scope, score, snippet, path,
        tags, source_quest_id}]}. scope is quest, global, or shared_quest (another quest's
        card, read-only, when the home shares memory across quests; source_quest_id says
        which quest).

        Example: search(query="label smoothing calibration", scope="both", limit=5)
        """
        return memory_service.search(_mem(tc), cmd)

    @ns.tool
    def list_recent(tc: ToolContext, cmd: ListRecent) -> CardsResult:
        """The most recently written or changed active cards, newest first.

        Returns {"ok", "count", "items": [{id, kind, title, scope, path, tags, updated_at, ...}]}.

        Example: list_recent(kind="decisions", limit=5)
        """
        return memory_service.list_recent(_mem(tc), cmd)

    @ns.tool
    def promote_to_global(tc: ToolContext, cmd: PromoteToGlobal) -> PromoteResult:
        """Copy a quest card into global memory (visible to every quest), with provenance.

        Use for lessons that hold beyond this quest. Both logs record the promotion; the
        quest card shows promoted_to, the global copy promoted_from.

        Returns ok, status "promoted", id (the quest card), global_id, scope ("global")
        and path (the global copy's file).

        Example: promote_to_global(card_id="knowledge-1a2b3c4d")
        """
        return memory_service.promote_to_global(_mem(tc), cmd)

    @ns.tool
    def audit(tc: ToolContext, cmd: AuditMemory) -> AuditReport:
        """A read-only health report of memory (changes nothing).

        Reports counts per kind, near-duplicate clusters among active cards,
        config-polluted titles, broken supersession links, and drift between card files
        and the log (modified / missing / untracked files; `ds memory import` takes them in).

        Example: audit()
        """
        return audit_memory_store(_mem(tc), cmd)

    @ns.tool
    def read_memory(tc: ToolContext, cmd: ReadRecords) -> RecordsResult:
        """Records relevant to a task: top_k relevant and mutually different, grouped by type,
        mistakes and constraints first. With no arguments: a one-line digest of every record.

        Example: read_memory(task_description="rerun the tokenizer ablation", top_k=5)
        """
        return read_records(_mem(tc), cmd)

    @ns.tool
    def append_memory(tc: ToolContext, cmd: AppendRecord) -> WriteResult:
        """Append a typed record (id mem-NNN) to the quest's memory.

        Returns message "appended mem-NNN -> <path>", or status duplicate_candidates /
        config_polluted as for `write`.

        Example: append_memory(record_type="mistake_fix", summary="Stale tokenizer cache after
                 vocab change", detail="rm -rf ~/.cache/tok before rerunning", session_id="s-12")
        """
        return append_record(_mem(tc), cmd)

    @ns.tool
    def audit_memory(tc: ToolContext, cmd: AuditRecords) -> AuditReport:
        """The audit report restricted to records, counted per record type. Example: audit_memory()"""
        return audit_records(_mem(tc), cmd)

    return ns.server()


def _mem(tc: ToolContext) -> MemoryContext:
    tc.quest  # noqa: B018 - opens the quest (and runs setup) if it is not open yet
    return tc.extra["memory"]  # type: ignore[no-any-return]
