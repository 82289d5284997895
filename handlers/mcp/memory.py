"""The `memory` MCP namespace: durable knowledge cards the agent writes and finds again.

Thin adapters: each tool decodes its arguments, calls one service function and returns
its answer. Domain errors become error answers with a stable ``error`` code (:mod:`.errors`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ds_events.home import Quest
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

from .binding import QuestBinding
from .context import NamespaceState, ToolContext
from .namespace import Namespace, NamespaceServer
from .tools import READ_ONLY, writes

__all__ = ["build_server", "INSTRUCTIONS", "MemoryState"]

INSTRUCTIONS = """\
Durable, searchable memory cards for this research quest: search before re-deriving, write what you learn.
Before re-deriving something (a paper's caveat, a failed route, a metric rule), `search`
for it; after learning something that a later turn would otherwise rediscover, `write` a
card. Kinds: papers, ideas, decisions, episodes, knowledge, templates. Scopes: quest
(this quest), global (all quests), both (search/list only). A write that looks like an
existing card answers status="duplicate_candidates": re-call with supersedes=<id>
(replaces it) or force=True. Record-style tools (read_memory/append_memory/audit_memory)
keep short typed records (mem-NNN) in the same store."""


@dataclass
class MemoryState(NamespaceState):
    """The memory stores the tools reach: the quest's, global memory's, shared quests'."""

    memory: MemoryContext

    @classmethod
    def open(cls, quest: Quest, actor: str) -> MemoryState:
        return cls(memory=MemoryContext(quest=quest, actor=actor))

    def close(self) -> None:
        self.memory.close()  # the global log and the indexes close with the server


def build_server(binding: QuestBinding) -> NamespaceServer[MemoryState]:
    """The `memory` namespace bound to one quest."""
    # serial: the stores (SQLite indexes, lazily opened logs) are not shared between threads
    ns = Namespace("memory", binding, instructions=INSTRUCTIONS, open_state=MemoryState.open, serial=True)

    @ns.tool(writes(destructive=False, idempotent=False))
    def write(tc: ToolContext[MemoryState], cmd: WriteCard) -> WriteResult:
        """Save a lesson as a memory card so later turns find it instead of rediscovering it.
        A refused call changes nothing.

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
        return memory_service.write(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def read(tc: ToolContext[MemoryState], cmd: ReadCard) -> CardText:
        """Read one card in full: fields, body, and its file text as on disk.
        Read-only.

        Returns the card with "body", "metadata", "markdown" and "hand_edited" (the file
        differs from the log: someone edited it; `ds memory import` takes it in).

        Example: read(card_id="paper-0a1b2c3d")
        """
        return memory_service.read(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def search(tc: ToolContext[MemoryState], cmd: SearchCards) -> SearchResult:
        """Find cards by meaning words, best first (BM25 over title, body, tags and hints).

        Natural-language questions work: the words are OR-ed and ranked, so a card that
        matches most of them comes first. Superseded cards are never returned.

        Returns {"ok", "count", "items": [{id, kind, title, scope, score, snippet, path,
        tags, source_quest_id}]}. scope is quest, global, or shared_quest (another quest's
        card, read-only, when the home shares memory across quests; source_quest_id says
        which quest).

        Example: search(query="label smoothing calibration", scope="both", limit=5)
        """
        return memory_service.search(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def list_recent(tc: ToolContext[MemoryState], cmd: ListRecent) -> CardsResult:
        """The most recently written or changed active cards, newest first.
        Read-only.

        Returns {"ok", "count", "items": [{id, kind, title, scope, path, tags, updated_at, ...}]}.

        Example: list_recent(kind="decisions", limit=5)
        """
        return memory_service.list_recent(tc.state.memory, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))  # a second promotion is refused
    def promote_to_global(tc: ToolContext[MemoryState], cmd: PromoteToGlobal) -> PromoteResult:
        """Copy a quest card into global memory (visible to every quest), with provenance.
        A refused call changes nothing.

        Use for lessons that hold beyond this quest. Both logs record the promotion; the
        quest card shows promoted_to, the global copy promoted_from.

        Returns ok, status "promoted", id (the quest card), global_id, scope ("global")
        and path (the global copy's file).

        Example: promote_to_global(card_id="knowledge-1a2b3c4d")
        """
        return memory_service.promote_to_global(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def audit(tc: ToolContext[MemoryState], cmd: AuditMemory) -> AuditReport:
        """A read-only health report of memory (changes nothing).

        Reports counts per kind, near-duplicate clusters among active cards,
        config-polluted titles, broken supersession links, and drift between card files
        and the log (modified / missing / untracked files; `ds memory import` takes them in).

        Example: audit()
        """
        return audit_memory_store(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def read_memory(tc: ToolContext[MemoryState], cmd: ReadRecords) -> RecordsResult:
        """Records relevant to a task: top_k relevant and mutually different, grouped by type,
        mistakes and constraints first. With no arguments: a one-line digest of every record.
        Read-only.

        Example: read_memory(task_description="rerun the tokenizer ablation", top_k=5)
        """
        return read_records(tc.state.memory, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def append_memory(tc: ToolContext[MemoryState], cmd: AppendRecord) -> WriteResult:
        """Append a typed record (id mem-NNN) to the quest's memory.
        A refused call changes nothing.

        Returns message "appended mem-NNN -> <path>", or status duplicate_candidates /
        config_polluted as for `write`.

        Example: append_memory(record_type="mistake_fix", summary="Stale tokenizer cache after
                 vocab change", detail="rm -rf ~/.cache/tok before rerunning", session_id="s-12")
        """
        return append_record(tc.state.memory, cmd)

    @ns.tool(READ_ONLY)
    def audit_memory(tc: ToolContext[MemoryState], cmd: AuditRecords) -> AuditReport:
        """The audit report restricted to records, counted per record type. Read-only. Example: audit_memory()"""
        return audit_records(tc.state.memory, cmd)

    return ns.server()
