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
)  # fmt: skip
