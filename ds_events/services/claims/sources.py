"""What a manuscript's numbers can come from, folded from the quest's log (pure).

The audit reads the log, never the files people can edit: main runs
(``artifact.main_experiment_recorded``), baseline confirmations
(``artifact.baseline_confirmed``, including each ``overwrite_baseline``), analysis
campaigns and their slices. Every recording is kept, not only the latest, because a
number copied from a record since replaced must be told apart from one that matches
nothing. A recording is *superseded* when:

- a later confirmation of the same baseline replaced it (``overwrite_baseline``, or a
  new ``confirm_baseline`` of the same id);
- the same run id, or the same slice, was recorded again later (the services refuse
  that, but a log written by another tool may hold it): the last recording stands;
- it is a slice recorded as ``failed`` or ``abandoned``: its numbers are no evidence.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ds_events.events import Event
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    BaselineConfirmed,
    MainExperimentRecorded,
)
from ds_events.home import Quest

from .commands import CitedEvent

__all__ = ["SOURCE_TYPES", "Recording", "ClaimSources", "claim_sources", "quest_sources", "record_key", "cited"]

SOURCE_TYPES = (
    MainExperimentRecorded.TAG, BaselineConfirmed.TAG, AnalysisCampaignCreated.TAG, AnalysisSliceRecorded.TAG,
)  # fmt: skip

Recorded = MainExperimentRecorded | BaselineConfirmed | AnalysisSliceRecorded


class Recording(msgspec.Struct, kw_only=True, frozen=True):
    """One recording of a run, a baseline confirmation or a slice, and whether (and by
    what) it was superseded: ``superseded_by`` is the seq of the recording that replaced
    it (0: none, or a failed slice, which nothing replaced)."""

    event: Recorded
    key: str
    superseded: str = ""
    superseded_by: int = 0

    @property
    def current(self) -> bool:
        return not self.superseded


class ClaimSources(msgspec.Struct, kw_only=True, frozen=True):
    """Every recording the audit can cite, in seq order, and the log position read."""

    last_seq: int
    runs: list[Recording]
    baselines: list[Recording]
    slices: list[Recording]
    campaigns: dict[str, AnalysisCampaignCreated]

    def current_run(self, run_id: str) -> Recording | None:
        return next((r for r in reversed(self.runs) if r.event.run == run_id), None)  # type: ignore[union-attr]

    def confirmation_at(self, baseline_id: str, seq: int) -> Recording | None:
        """The confirmation of ``baseline_id`` that stood just before ``seq``."""
        found = None
        for r in self.baselines:
            if r.event.seq >= seq:
                break
            if r.event.baseline_id == baseline_id:  # type: ignore[union-attr]
                found = r
        return found

    def current_confirmation(self, baseline_id: str) -> Recording | None:
        return next((r for r in reversed(self.baselines) if r.event.baseline_id == baseline_id), None)  # type: ignore[union-attr]


def claim_sources(events: Iterable[Event], last_seq: int = 0) -> ClaimSources:
    """Fold ``events`` (any events: those not of :data:`SOURCE_TYPES` are passed over)."""
    runs: list[Recorded] = []
    baselines: list[Recorded] = []
    slices: list[Recorded] = []
    campaigns: dict[str, AnalysisCampaignCreated] = {}
    seen = 0
    for event in events:
        seen = max(seen, event.seq)
        match event:
            case MainExperimentRecorded():
                runs.append(event)
            case BaselineConfirmed():
                baselines.append(event)
            case AnalysisCampaignCreated():
                campaigns[event.campaign_id] = event
            case AnalysisSliceRecorded():
                slices.append(event)
    return ClaimSources(
        last_seq=max(last_seq, seen), runs=_supersede(runs), baselines=_supersede(baselines), slices=_supersede(slices),
        campaigns=campaigns,
    )  # fmt: skip


def quest_sources(quest: Quest) -> ClaimSources:
    """:func:`claim_sources` of the quest's whole log."""
    last = quest.log.last_seq
    return claim_sources(quest.log.read(types=SOURCE_TYPES), last_seq=last)


def record_key(event: Event) -> str:
    """What an event records, for telling a later recording of the same thing:
    ``run:<id>``, ``baseline:<id>``, ``slice:<campaign>/<slice>``, ``campaign:<id>``,
    else ``seq:<seq>``."""
    match event:
        case MainExperimentRecorded():
            return f"run:{event.run}"
        case BaselineConfirmed():
            return f"baseline:{event.baseline_id}"
        case AnalysisSliceRecorded():
            return f"slice:{event.campaign_id}/{event.slice_id}"
        case AnalysisCampaignCreated():
            return f"campaign:{event.campaign_id}"
    return f"seq:{event.seq}"


def cited(event: Event) -> CitedEvent:
    """``event`` as a claim cites it."""
    return CitedEvent(seq=event.seq, id=event.id, type=event.type, key=record_key(event))


# -- private helpers ----------------------------------------------------------------------


def _supersede(events: list[Recorded]) -> list[Recording]:
    """Each recording, marked superseded when a later one has its key (or, for a slice,
    when it failed or was abandoned)."""
    following: dict[int, int] = {}  # seq -> the seq of the next recording of the same key (0: none)
    nxt: dict[str, int] = {}
    for e in reversed(events):
        key = record_key(e)
        following[e.seq] = nxt.get(key, 0)
        nxt[key] = e.seq
    out: list[Recording] = []
    for e in events:
        key = record_key(e)
        later = following[e.seq]
        if later:
            why = _replaced_why(e, later, events)
            out.append(Recording(event=e, key=key, superseded=why, superseded_by=later))
        elif isinstance(e, AnalysisSliceRecorded) and e.status != "completed":
            out.append(Recording(event=e, key=key, superseded=f"slice {e.campaign_id}/{e.slice_id} was recorded as {e.status}"))
        else:
            out.append(Recording(event=e, key=key))
    return out


def _replaced_why(event: Recorded, later_seq: int, events: list[Recorded]) -> str:
    later = next(e for e in events if e.seq == later_seq)
    match event:
        case BaselineConfirmed():
            how = "overwritten" if isinstance(later, BaselineConfirmed) and later.overwrite else "confirmed again"
            return f"baseline {event.baseline_id}'s confirmation at seq {event.seq} was {how} at seq {later_seq}"
        case MainExperimentRecorded():
            return f"run {event.run} recorded at seq {event.seq} was recorded again at seq {later_seq}"
    assert isinstance(event, AnalysisSliceRecorded)
    return f"slice {event.campaign_id}/{event.slice_id} recorded at seq {event.seq} was recorded again at seq {later_seq}"
