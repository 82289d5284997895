"""The paper domain: the paper chain from outline to bundle — outlines and the paper
branch (``outlines``), the writing plan (``plan``), the bundle (``bundle``), the paper
contract, its health and the validators (``contract``); ``normalise`` parses
DeepScientist's free-form outline once, ``workspace`` finds and reads the paper's files.

``commands`` is the domain's contract: the commands and results its MCP tools take and
return. The verbs live in the modules beside it and are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .bundle import submit_paper_bundle as submit_paper_bundle
    from .contract import (
        get_paper_contract as get_paper_contract,
        get_paper_contract_health as get_paper_contract_health,
        validate_academic_outline as validate_academic_outline,
        validate_manuscript_coverage as validate_manuscript_coverage,
        validate_manuscript_language as validate_manuscript_language,
    )
    from .outlines import list_paper_outlines as list_paper_outlines, submit_paper_outline as submit_paper_outline
    from .plan import compile_outline_to_writing_plan as compile_outline_to_writing_plan

__all__, __getattr__ = lazy_exports(__name__, {
    "bundle": ("submit_paper_bundle",),
    "contract": (
        "get_paper_contract", "get_paper_contract_health", "validate_academic_outline", "validate_manuscript_language",
        "validate_manuscript_coverage",
    ),
    "outlines": ("submit_paper_outline", "list_paper_outlines"),
    "plan": ("compile_outline_to_writing_plan",),
})  # fmt: skip
