"""The commands of the `memory` namespace (cards and record-style memory)."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from .commands import Command

__all__ = [
    "WriteCard",
    "ReadCard",
    "SearchCards",
    "ListRecent",
    "PromoteToGlobal",
    "AuditMemory",
    "ReadRecords",
    "AppendRecord",
    "AuditRecords",
]

_KINDS = "papers | ideas | decisions | episodes | knowledge | templates"
_SCOPE_READ = "quest (this quest) | global (every quest's shared memory) | both."
_TAGS = Meta(description="Short labels, e.g. [\"optimizer\", \"vit\"].")


class WriteCard(Command):
    kind: Annotated[str, Meta(description=_KINDS + ".")]
    title: Annotated[str, Meta(description="One line stating the lesson (no config settings like \"lr=0.1\" in it).")]
    body: Annotated[str, Meta(description="Markdown details (numbers, commands, evidence).")] = ""
    markdown: Annotated[str | None, Meta(description="Alternatively a whole card: \"---\\nYAML frontmatter\\n---\\nbody\".")] = None
    scope: Annotated[str, Meta(description="quest | global (shared by every quest).")] = "quest"
    tags: Annotated[list[str] | None, _TAGS] = None
    metadata: Annotated[dict[str, Any] | None, Meta(description=(
        "Extra frontmatter, e.g. {\"stage\": \"experiment\", \"confidence\": 0.8, \"evidence_paths\": "
        "[\"runs/12/log.txt\"], \"retrieval_hints\": [\"warmup\"]}."
    ))] = None
    supersedes: Annotated[str | None, Meta(description="Id of the card this one replaces (it leaves search, stays on disk).")] = None
    force: Annotated[bool, Meta(description="Keep both even if a near-duplicate exists.")] = False


class ReadCard(Command):
    card_id: Annotated[str | None, Meta(description="e.g. \"knowledge-1a2b3c4d\" or a record id \"mem-007\"; or give path.")] = None
    path: Annotated[str | None, Meta(description=(
        "Or the card's file, e.g. \"memory/knowledge/knowledge-1a2b3c4d.md\"; paths outside the memory directories are refused."
    ))] = None
    scope: Annotated[str, Meta(description="Where to look for card_id: " + _SCOPE_READ)] = "quest"


class SearchCards(Command):
    query: Annotated[str, Meta(description="Words or a question, e.g. \"why does ViT training diverge early\".")]
    scope: Annotated[str, Meta(description=_SCOPE_READ)] = "quest"
    limit: Annotated[int, Meta(description="1-100 results.")] = 10
    kind: Annotated[str | None, Meta(description="Only this kind (" + _KINDS + ").")] = None
    tags: Annotated[list[str] | None, Meta(description="Only cards carrying every one of these tags.")] = None
    diverse: Annotated[bool, Meta(description=(
        "Return the top results that are also mutually different (no two near-duplicates), for a broad overview."
    ))] = False


class ListRecent(Command):
    scope: Annotated[str, Meta(description=_SCOPE_READ)] = "quest"
    limit: Annotated[int, Meta(description="1-100 cards.")] = 10
    kind: Annotated[str | None, Meta(description="Only this kind (" + _KINDS + ").")] = None


class PromoteToGlobal(Command):
    card_id: Annotated[str | None, Meta(description="The quest card to copy; or give path.")] = None
    path: Annotated[str | None, Meta(description="Or the quest card's file.")] = None


class AuditMemory(Command):
    scope: Annotated[str, Meta(description=_SCOPE_READ)] = "quest"


class ReadRecords(Command):
    task_description: Annotated[str, Meta(description="What you are about to do; empty for a digest of every record.")] = ""
    tags: Annotated[list[str] | None, Meta(description="Only records carrying every one of these tags.")] = None
    top_k: Annotated[int, Meta(description="1-100 records.")] = 5


class AppendRecord(Command):
    record_type: Annotated[str, Meta(description="mistake_fix | working_solution | methodology_note | pipeline_constraint.")]
    summary: Annotated[str, Meta(description="One line (no \"key=value\" config settings).")]
    detail: Annotated[str, Meta(description="What happened / what to do, with specifics.")]
    session_id: Annotated[str, Meta(description="Your session's id.")]
    tags: Annotated[list[str] | None, _TAGS] = None
    supersedes: Annotated[str | None, Meta(description="A mem-NNN or card id this record replaces.")] = None
    force: Annotated[bool, Meta(description="Keep both even if a near-duplicate exists.")] = False


class AuditRecords(Command):
    pass
