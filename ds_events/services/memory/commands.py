"""The commands and results of the `memory` namespace (cards and record-style memory).

Every memory service function takes one of these commands and returns one of these
results; the MCP tools and ``ds memory`` decode the caller's arguments into the command
once (:func:`~ds_events.services.commands.decode_command`) and encode the result. A
result field at its default (an absent status, an empty record id) is left out of the
encoded answer, so a card's summary carries only what applies to it.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ds_events.services.commands import Command, Result

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
    "ConfigureGuard",
    "ImportHandEdits",
    "CardInfo",
    "SearchHit",
    "DuplicateCandidate",
    "CardText",
    "WriteResult",
    "CardsResult",
    "SearchResult",
    "PromoteResult",
    "GuardResult",
    "ImportedCard",
    "MovedCard",
    "ImportResult",
    "AuditReport",
    "RecordsResult",
]

_KINDS = "papers | ideas | decisions | episodes | knowledge | templates"
_SCOPE_READ = "quest (this quest) | global (every quest's shared memory) | both."
_TAGS = Meta(description="Short labels, e.g. [\"optimizer\", \"vit\"].")
# DeepScientist's calls send tags as a list or as one comma-separated string; both are
# accepted here and normalised to a list by the service (memory.tag_list).
_TAGS_EITHER = Meta(description=(
    "Short labels: a list [\"optimizer\", \"vit\"] or one comma-separated string \"optimizer, vit\"."
))


class WriteCard(Command):
    kind: Annotated[str, Meta(description=_KINDS + ".")]
    title: Annotated[str, Meta(description="One line stating the lesson (no config settings like \"lr=0.1\" in it).")]
    body: Annotated[str, Meta(description="Markdown details (numbers, commands, evidence).")] = ""
    markdown: Annotated[str | None, Meta(description="Alternatively a whole card: \"---\\nYAML frontmatter\\n---\\nbody\".")] = None
    scope: Annotated[str, Meta(description="quest | global (shared by every quest).")] = "quest"
    tags: Annotated[list[str] | str | None, _TAGS_EITHER] = None
    metadata: Annotated[dict[str, Any] | None, Meta(description=(
        "Extra frontmatter (none by default), e.g. {\"stage\": \"experiment\", \"confidence\": 0.8, \"evidence_paths\": "
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
    tags: Annotated[list[str] | str | None, _TAGS_EITHER] = None
    supersedes: Annotated[str | None, Meta(description="A mem-NNN or card id this record replaces.")] = None
    force: Annotated[bool, Meta(description="Keep both even if a near-duplicate exists.")] = False


class AuditRecords(Command):
    pass


class ConfigureGuard(Command):
    config_keys: Annotated[list[str], Meta(description=(
        "Config keys whose \"key=value\" settings card titles and summaries must not bake in, e.g. [\"lr\", \"batch_size\"]."
    ))]


class ImportHandEdits(Command):
    scope: Annotated[str, Meta(description="quest | global.")] = "quest"
    paths: Annotated[list[str] | None, Meta(description=(
        "Only these card files (relative to the store root); all drifted files by default."
    ))] = None


# -- results ------------------------------------------------------------------------


class CardInfo(Result, omit_defaults=True):
    """What every answer about a card carries.

    ``scope`` is ``quest`` (this quest's card), ``shared_quest`` (another quest's card,
    read-only, seen when ``memory.shared_across_quests`` is on; ``shared`` is then true)
    or ``global``; ``source_quest_id`` names the quest whose memory holds a quest card."""

    id: str
    kind: str
    title: str
    scope: str
    quest_id: str
    tags: list[str]
    path: str
    updated_at: str
    status: str = "active"  # left out while active
    record_id: str = ""
    record_type: str = ""
    superseded_by: str | None = None
    promoted_to: str | None = None
    promoted_from: str | None = None
    read_only: bool = False
    source_quest_id: str = ""
    shared: bool = False


class SearchHit(CardInfo, omit_defaults=True):
    score: float = 0.0
    snippet: str = ""


class DuplicateCandidate(CardInfo, omit_defaults=True):
    similarity: float = 0.0
    snippet: str = ""  # the start of the card's body


class CardText(CardInfo, omit_defaults=False):
    """One card in full (its status always said)."""

    body: str = ""
    metadata: dict[str, Any] = {}
    markdown: str = ""
    hand_edited: bool = False  # the file differs from the log: someone edited it
    file_missing: bool = False


class WriteResult(Result, omit_defaults=True):
    """``written`` (the card's fields, its metadata, seq), ``duplicate_candidates`` (nothing
    written) or ``config_polluted`` (nothing written). ``ok`` says whether the card was
    written."""

    ok: bool  # always encoded: true only for status "written"
    status: str
    id: str = ""
    kind: str = ""
    title: str = ""
    scope: str = ""
    quest_id: str = ""
    tags: list[str] = []
    # The card's metadata, when written, with its tags under ``tags`` (DeepScientist's
    # callers read them there: its metadata is the card's whole front matter).
    metadata: dict[str, Any] | None = None
    path: str = ""
    updated_at: str = ""
    source_quest_id: str = ""
    seq: int = 0
    supersedes: str | None = None
    record_id: str = ""
    record_type: str = ""
    message: str = ""
    candidates: list[DuplicateCandidate] = []
    settings: list[str] = []


# The cards of a search or listing are ``items`` on the wire (DeepScientist's name);
# Python callers keep the attribute ``results``.
class CardsResult(Result):
    ok: bool
    count: int
    results: list[CardInfo] = msgspec.field(name="items")


class SearchResult(Result):
    ok: bool
    count: int
    results: list[SearchHit] = msgspec.field(name="items")


class PromoteResult(Result):
    """The quest card ``id`` now has a global copy ``global_id`` at ``path`` (scope global)."""

    ok: bool
    status: str
    id: str
    global_id: str
    scope: str  # always "global": where the copy is
    path: str  # the global copy's file
    seq: int


class GuardResult(Result):
    status: str
    config_keys: list[str]
    seq: int


class ImportedCard(CardInfo, omit_defaults=True):
    seq: int = 0
    event: str = ""


class MovedCard(Result):
    """A hand-made card file taken in as a new card: where it was, and the card's file now."""

    from_: str = msgspec.field(name="from")
    to: str


class ImportResult(Result):
    imported: list[ImportedCard]
    restored: list[str]
    moved: list[MovedCard]


# The report's entries (JSON objects: the MCP output schema of ``audit`` lists them as
# objects, and the class docstring is its description, so both stay as they are):
# - counts: scope -> kind (record type, for the records' audit) -> {active, superseded};
# - duplicate_clusters: {scope, kind, max_similarity, cards: [{id, title}]};
# - config_polluted: a card's fields (as in every answer about a card) and settings;
# - broken_links: {scope, id, problem, target}, problem one of supersedes_unknown,
#   supersedes_active, superseded_by_unknown, promoted_copy_missing;
# - drift: {scope, id, path, problem}, problem modified, missing, untracked or link.
class AuditReport(Result):
    """The health report; ``ok`` when nothing below needs attention."""

    scope: str
    counts: dict[str, dict[str, dict[str, int]]]
    duplicate_clusters: list[dict[str, Any]]
    config_polluted: list[dict[str, Any]]
    broken_links: list[dict[str, Any]]
    drift: list[dict[str, Any]]
    total_active: int
    ok: bool


class RecordsResult(Result):
    text: str
    count: int
    groups: dict[str, list[SearchHit]]  # record type -> records, mistakes and constraints first
