"""Auditing (``ds verify``) and explicit repair (``ds repair``) of an event log.

- :mod:`.audit`   verify_log: reads the log and its anchors and index, changes nothing
- :mod:`.anchors` what the head anchor, snapshots and git trailers say about the log
- :mod:`.repair`  repair_log: quarantines what cannot stay or cannot be vouched for
"""

from __future__ import annotations

from .anchors import Claim, collect_anchors
from .audit import Problem, VerifyReport, verify_home_log, verify_log, verify_store
from .repair import RepairReport, Unvouched, repair_log

__all__ = [
    "Problem", "VerifyReport", "verify_log", "verify_store", "verify_home_log",
    "repair_log", "RepairReport", "Unvouched", "Claim", "collect_anchors",
]
