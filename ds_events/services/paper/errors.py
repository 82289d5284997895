"""The paper domain's error codes: what each means to whoever got it, and its HTTP
status (400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``).

Codes the paper tools share with the domains below (``invalid_field``, ``invalid_id``,
``path_outside_quest``, ``path_outside_root``, the branch and worktree codes) stay in
those domains' catalogues. ``tests/test_error_catalogue.py`` holds it so."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    # outlines
    ErrorCode("unknown_outline", 404, "No paper outline of that id: list_paper_outlines() names them."),
    ErrorCode("no_selected_outline", 409, "The call needs a selected outline: submit_paper_outline(mode='select', outline_id=...)."),
    ErrorCode("outline_selected", 409, "That outline is the selected one: change it with mode='revise', not as a candidate."),
    # bundles
    ErrorCode("invalid_package_type", 400, "package_type is draft_checkpoint, review_package or submission_package."),
    ErrorCode("missing_manuscript", 400, "A bundle needs a manuscript: draft_path (Markdown) and/or latex_root_path (LaTeX) "
                                         "under paper/, or paper/draft.md in the paper workspace."),
    ErrorCode("manuscript_outside_paper", 400, "The manuscript's files live under paper/ of the paper workspace."),
    ErrorCode("paper_file_missing", 404, "A file the bundle names does not exist (or is not a regular file)."),
    ErrorCode("paper_contract_incomplete", 409, "Required outline items are unresolved: record the analysis that resolves "
                                                "them (get_paper_contract_health lists them) before the bundle."),
    ErrorCode("not_submission_ready", 409, "A submission_package needs a valid academic outline and clean manuscript wording: "
                                           "validate_academic_outline() and validate_manuscript_language() say what to fix."),
)  # fmt: skip
