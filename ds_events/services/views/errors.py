"""The views domain's error codes (see :mod:`ds_events.services.quest.errors` for the
shape). It raises only ``unknown_node``, the quest read models' code (one meaning for
one fact), so its own catalogue is empty."""

from __future__ import annotations

from ds_events.errors import ErrorCode, catalogue

__all__ = ["CODES", "ELSEWHERE"]

CODES: dict[str, ErrorCode] = catalogue()
# node_details: neither the traces nor git know the ref.
ELSEWHERE: dict[str, str] = {"unknown_node": "ds_events.services.quest.errors"}
