"""The JSON documents of the `artifacts` view: one shape per kind of thing, for the files
the view materialises and for the read routes that show a record, a run, a baseline, a
campaign or a slice.

The state holds the events themselves; a document is the event's own fields (the
envelope left out: an event's ``run_id`` names the agent run that caused it, not the
experiment) with its ``seq`` and ``ts``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ds_events.events import Event
from ds_events.events.artifact import AnalysisSliceRecorded, ArtifactRecorded, BaselineConfirmed, MainExperimentRecorded

from .fold import Baseline, Campaign, Slice

__all__ = [
    "Record",
    "payload_of",
    "document",
    "record_document",
    "run_document",
    "confirmation_document",
    "baseline_document",
    "campaign_document",
    "slice_document",
]

# A record as listings show it (the artifact's own fields stay in ``payload``). No
# docstring: the struct is part of read answers' schemas.
class Record(msgspec.Struct, kw_only=True, frozen=True):
    artifact_id: str
    kind: str
    seq: int
    ts: str
    branch: str
    payload: dict[str, Any] = {}


_ENVELOPE = frozenset(Event.__struct_fields__) | {"type"}
# What a slice not recorded yet shows: the outcome's defaults.
_PENDING = AnalysisSliceRecorded(campaign_id="", slice_id="", status="pending")
_SLICE_KEYS = frozenset({"campaign_id", "slice_id", "status"})  # the spec and the status say these


def payload_of(event: Event) -> dict[str, Any]:
    """``event``'s own fields as JSON values, in the order the event declares them."""
    body: dict[str, Any] = msgspec.to_builtins(event)
    for key in _ENVELOPE:
        body.pop(key, None)
    return body


def document(value: object) -> Any:
    """The JSON document of any value the view holds (a record, a run, a baseline, a
    campaign, a slice; anything else as msgspec encodes it)."""
    match value:
        case ArtifactRecorded():
            return msgspec.to_builtins(record_document(value))
        case MainExperimentRecorded():
            return run_document(value)
        case Baseline():
            return baseline_document(value)
        case Campaign():
            return campaign_document(value)
        case Slice():
            return slice_document(value)
    return msgspec.to_builtins(value)


def record_document(record: ArtifactRecorded) -> Record:
    """A record as the artifacts listing shows it."""
    return Record(
        artifact_id=record.artifact_id, kind=record.kind, seq=record.seq, ts=record.ts, branch=record.branch,
        payload=record.payload,
    )  # fmt: skip


def run_document(run: MainExperimentRecorded) -> dict[str, Any]:
    return {**payload_of(run), "seq": run.seq, "ts": run.ts}


def confirmation_document(confirmed: BaselineConfirmed) -> dict[str, Any]:
    """A confirmation inside its baseline's document (which names the baseline)."""
    body = payload_of(confirmed)
    del body["baseline_id"]
    return {**body, "seq": confirmed.seq, "ts": confirmed.ts}


def baseline_document(baseline: Baseline) -> dict[str, Any]:
    body: dict[str, Any] = msgspec.to_builtins(baseline)
    body["confirmed"] = confirmation_document(baseline.confirmed) if baseline.confirmed is not None else None
    return body


def campaign_document(campaign: Campaign) -> dict[str, Any]:
    body = payload_of(campaign.created)
    body["slices"] = [slice_document(s) for s in campaign.slices]
    return {**body, "seq": campaign.seq, "ts": campaign.ts}


def slice_document(slice_: Slice) -> dict[str, Any]:
    outcome = slice_.outcome if slice_.outcome is not None else _PENDING
    recorded = {k: v for k, v in payload_of(outcome).items() if k not in _SLICE_KEYS}
    spec = {k: v for k, v in msgspec.to_builtins(slice_).items() if k != "outcome"}
    return {**spec, "status": slice_.status, **recorded, "recorded_seq": slice_.recorded_seq}
