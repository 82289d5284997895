"""The memory domain: cards (write, read, search), records, the audit, the stage memory plan and quality checks.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here; ``errors`` catalogues its codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .audit import audit_memory as audit_memory, import_hand_edits as import_hand_edits
    from .cards import (
        configure_guard as configure_guard,
        guard_keys as guard_keys,
        info as info,
        list_recent as list_recent,
        near_duplicates as near_duplicates,
        promote_to_global as promote_to_global,
        read as read,
        resolve_path as resolve_path,
        search as search,
        tag_list as tag_list,
        write as write,
    )
    from .commands import (
        AppendRecord as AppendRecord,
        AuditMemory as AuditMemory,
        AuditRecords as AuditRecords,
        AuditReport as AuditReport,
        CardInfo as CardInfo,
        CardsResult as CardsResult,
        CardText as CardText,
        ConfigureGuard as ConfigureGuard,
        DuplicateCandidate as DuplicateCandidate,
        GuardResult as GuardResult,
        ImportedCard as ImportedCard,
        ImportHandEdits as ImportHandEdits,
        ImportResult as ImportResult,
        ListRecent as ListRecent,
        MovedCard as MovedCard,
        PromoteResult as PromoteResult,
        PromoteToGlobal as PromoteToGlobal,
        ReadCard as ReadCard,
        ReadRecords as ReadRecords,
        RecordsResult as RecordsResult,
        SearchCards as SearchCards,
        SearchHit as SearchHit,
        SearchResult as SearchResult,
        WriteCard as WriteCard,
        WriteResult as WriteResult,
    )
    from .plan import (
        STAGE_PLANS as STAGE_PLANS,
        PlanStep as PlanStep,
        StagePlan as StagePlan,
        pull_for_stage as pull_for_stage,
        stage_memory_plan as stage_memory_plan,
    )
    from .quality import (
        Fixture as Fixture,
        FixtureCard as FixtureCard,
        FixtureQuery as FixtureQuery,
        Quality as Quality,
        evaluate as evaluate,
        load_fixture as load_fixture,
        substring_search as substring_search,
    )
    from .records import (
        RECORD_KINDS as RECORD_KINDS,
        append_record as append_record,
        audit_records as audit_records,
        read_records as read_records,
    )

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "commands": (
            "WriteCard", "ReadCard", "SearchCards", "ListRecent", "PromoteToGlobal", "AuditMemory", "ReadRecords", "AppendRecord",
            "AuditRecords", "ConfigureGuard", "ImportHandEdits", "CardInfo", "SearchHit", "DuplicateCandidate", "CardText",
            "WriteResult", "CardsResult", "SearchResult", "PromoteResult", "GuardResult", "ImportedCard", "MovedCard",
            "ImportResult", "AuditReport", "RecordsResult",
        ),
        "cards": (
            "write", "read", "search", "list_recent", "promote_to_global", "configure_guard", "guard_keys", "resolve_path",
            "near_duplicates", "info", "tag_list",
        ),
        "audit": (
            "audit_memory", "import_hand_edits",
        ),
        "records": (
            "RECORD_KINDS", "append_record", "read_records", "audit_records",
        ),
        "plan": (
            "StagePlan", "PlanStep", "STAGE_PLANS", "stage_memory_plan", "pull_for_stage",
        ),
        "quality": (
            "Quality", "Fixture", "FixtureCard", "FixtureQuery", "load_fixture", "evaluate", "substring_search",
        ),
    },
)
