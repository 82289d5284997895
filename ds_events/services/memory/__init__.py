"""The memory domain: cards (write, read, search), records, the audit, the stage memory plan and quality checks.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here; ``errors`` catalogues its codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .audit import audit_memory as audit_memory
    from .audit import import_hand_edits as import_hand_edits
    from .cards import configure_guard as configure_guard
    from .cards import guard_keys as guard_keys
    from .cards import info as info
    from .cards import list_recent as list_recent
    from .cards import near_duplicates as near_duplicates
    from .cards import promote_to_global as promote_to_global
    from .cards import read as read
    from .cards import resolve_path as resolve_path
    from .cards import search as search
    from .cards import tag_list as tag_list
    from .cards import write as write
    from .commands import AppendRecord as AppendRecord
    from .commands import AuditMemory as AuditMemory
    from .commands import AuditRecords as AuditRecords
    from .commands import AuditReport as AuditReport
    from .commands import CardInfo as CardInfo
    from .commands import CardsResult as CardsResult
    from .commands import CardText as CardText
    from .commands import ConfigureGuard as ConfigureGuard
    from .commands import DuplicateCandidate as DuplicateCandidate
    from .commands import GuardResult as GuardResult
    from .commands import ImportedCard as ImportedCard
    from .commands import ImportHandEdits as ImportHandEdits
    from .commands import ImportResult as ImportResult
    from .commands import ListRecent as ListRecent
    from .commands import MovedCard as MovedCard
    from .commands import PromoteResult as PromoteResult
    from .commands import PromoteToGlobal as PromoteToGlobal
    from .commands import ReadCard as ReadCard
    from .commands import ReadRecords as ReadRecords
    from .commands import RecordsResult as RecordsResult
    from .commands import SearchCards as SearchCards
    from .commands import SearchHit as SearchHit
    from .commands import SearchResult as SearchResult
    from .commands import WriteCard as WriteCard
    from .commands import WriteResult as WriteResult
    from .plan import STAGE_PLANS as STAGE_PLANS
    from .plan import PlanStep as PlanStep
    from .plan import StagePlan as StagePlan
    from .plan import pull_for_stage as pull_for_stage
    from .plan import stage_memory_plan as stage_memory_plan
    from .quality import Fixture as Fixture
    from .quality import FixtureCard as FixtureCard
    from .quality import FixtureQuery as FixtureQuery
    from .quality import Quality as Quality
    from .quality import evaluate as evaluate
    from .quality import load_fixture as load_fixture
    from .quality import substring_search as substring_search
    from .records import RECORD_KINDS as RECORD_KINDS
    from .records import append_record as append_record
    from .records import audit_records as audit_records
    from .records import read_records as read_records

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
