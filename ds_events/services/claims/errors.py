"""The claims domain's error codes: what each means to whoever got it, and its HTTP
status (400 ``Invalid``, 404 ``NotFound``, 409 ``Conflict``). One code, one entry:
``tests/test_error_catalogue.py`` holds it so (``path_outside_quest`` and
``path_not_allowed`` are the artifacts domain's, whose path check the audit uses)."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES"]

CODES = catalogue(
    ErrorCode("no_manuscript", 404, "The quest has no manuscript at the path given (or at paper/manuscript.md, "
                                    "paper/main.md, paper/manuscript.tex, paper/main.tex)."),
    ErrorCode("manuscript_too_large", 400, "The manuscript is over 4 MiB."),
    ErrorCode("manuscript_not_text", 400, "The manuscript is not UTF-8 text."),
    ErrorCode("claims_unresolved", 409, "A stamp vouches for every number: some do not resolve (`unresolved` lists them)."),
    ErrorCode("cited_events_missing", 409, "The events given to the stamp lack (or differ from) ones the audit cites."),
)  # fmt: skip
