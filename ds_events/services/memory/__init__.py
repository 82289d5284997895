"""The memory domain: cards (write, read, search), records, the audit, the stage memory plan and quality checks.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        WriteCard as WriteCard,
        ReadCard as ReadCard,
        SearchCards as SearchCards,
        ListRecent as ListRecent,
        PromoteToGlobal as PromoteToGlobal,
        AuditMemory as AuditMemory,
        ReadRecords as ReadRecords,
        AppendRecord as AppendRecord,
        AuditRecords as AuditRecords,
        ConfigureGuard as ConfigureGuard,
        ImportHandEdits as ImportHandEdits,
        CardInfo as CardInfo,
        SearchHit as SearchHit,
        DuplicateCandidate as DuplicateCandidate,
        CardText as CardText,
        WriteResult as WriteResult,
        CardsResult as CardsResult,
        SearchResult as SearchResult,
        PromoteResult as PromoteResult,
        GuardResult as GuardResult,
        ImportedCard as ImportedCard,
        ImportResult as ImportResult,
        AuditReport as AuditReport,
        RecordsResult as RecordsResult,
    )
    from .cards import (
        write as write,
        read as read,
        search as search,
        list_recent as list_recent,
        promote_to_global as promote_to_global,
        configure_guard as configure_guard,
        guard_keys as guard_keys,
        resolve_path as resolve_path,
        near_duplicates as near_duplicates,
        info as info,
        tag_list as tag_list,
    )
    from .audit import (
        audit_memory as audit_memory,
        import_hand_edits as import_hand_edits,
    )
    from .records import (
        RECORD_KINDS as RECORD_KINDS,
        append_record as append_record,
        read_records as read_records,
        audit_records as audit_records,
    )
    from .plan import (
        StagePlan as StagePlan,
        STAGE_PLANS as STAGE_PLANS,
        stage_memory_plan as stage_memory_plan,
        pull_for_stage as pull_for_stage,
    )
    from .quality import (
        Quality as Quality,
        load_fixture as load_fixture,
        evaluate as evaluate,
        substring_search as substring_search,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("WriteCard", "ReadCard", "SearchCards", "ListRecent", "PromoteToGlobal", "AuditMemory", "ReadRecords", "AppendRecord", "AuditRecords", "ConfigureGuard", "ImportHandEdits", "CardInfo", "SearchHit", "DuplicateCandidate", "CardText", "WriteResult", "CardsResult", "SearchResult", "PromoteResult", "GuardResult", "ImportedCard", "ImportResult", "AuditReport", "RecordsResult"),
    "cards": ("write", "read", "search", "list_recent", "promote_to_global", "configure_guard", "guard_keys", "resolve_path", "near_duplicates", "info", "tag_list"),
    "audit": ("audit_memory", "import_hand_edits"),
    "records": ("RECORD_KINDS", "append_record", "read_records", "audit_records"),
    "plan": ("StagePlan", "STAGE_PLANS", "stage_memory_plan", "pull_for_stage"),
    "quality": ("Quality", "load_fixture", "evaluate", "substring_search"),
})
