"""The fold of the `artifacts` view: its state and ``apply``.

The state keeps each fact in the shape it was recorded in: a record, a main experiment,
a baseline's confirmation, a campaign and each slice's outcome are the events that
recorded them (their ``seq`` and ``ts`` included), not copies field by field. What a
record looks like in a file or a read route's answer is
:mod:`projections.artifacts.documents`'s.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypedDict

import msgspec
from msgspec.structs import replace

from ds_events.events import ConversationMessage, Event, QuestCompleted, QuestControl
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    BaselineWaived,
    BranchPrepared,
    GitCheckpointed,
    GitGraphRendered,
    MainExperimentRecorded,
    SliceSpec,
    SummaryRefreshed,
)
from ds_events.events.interaction import InteractionReplied, InteractionSent, InteractionSuperseded, MailboxDelivered
from ds_events.events.research import BranchActivated, IdeaSubmitted
from ds_events.events.runner import TurnFinished, TurnHeld, TurnRetryScheduled, TurnStarted
from projections import interactions as interactions_view, status as status_projection, turns as turns_view
from projections.base import shallow_thaw

__all__ = [
    "State",
    "MainRun",
    "Waiver",
    "Baseline",
    "Campaign",
    "Slice",
    "BranchInfo",
    "Checkpoint",
    "KIND_DIRS",
    "apply",
    "thaw",
    "record_path",
    "run_page_path",
    "campaign_path",
    "newest_records",
]

# kind -> directory under artifacts/
KIND_DIRS: dict[str, str] = {
    "baseline": "baselines",
    "idea": "ideas",
    "decision": "decisions",
    "progress": "progress",
    "answer": "answers",
    "milestone": "milestones",
    "run": "runs",
    "report": "reports",
    "approval": "approvals",
    "graph": "graphs",
}
_RECENT = 20
# The events that move a quest's health, for the nested views (see State.turns).
HEALTH_TURN_EVENTS = (TurnStarted, TurnFinished, TurnRetryScheduled, TurnHeld, QuestControl, QuestCompleted)
HEALTH_REQUEST_EVENTS = (ConversationMessage, InteractionSent, InteractionReplied, InteractionSuperseded, MailboxDelivered)

# A main experiment as the view keeps it: the event that recorded it (``run`` is its run
# id, ``seq`` and ``ts`` when it was recorded).
MainRun: TypeAlias = MainExperimentRecorded


class Waiver(TypedDict):
    """Why the baseline gate was waived (``artifact.baseline_waived``), and when."""

    reason: str
    comment: str
    seq: int
    ts: str


class Baseline(msgspec.Struct, kw_only=True, frozen=True):
    """A baseline as this quest knows it: published here, attached from the home's
    registry, and/or confirmed (its latest confirmation, the event itself)."""

    baseline_id: str
    published_seq: int | None = None
    payload: dict[str, Any] = {}
    variant_ids: list[str] = []
    confirmed: BaselineConfirmed | None = None
    source_quest: str | None = None  # attached from the home's registry, published by that quest


class Slice(SliceSpec, kw_only=True, frozen=True):
    """A campaign's slice: as planned, and its outcome once recorded (the event)."""

    outcome: AnalysisSliceRecorded | None = None

    @property
    def status(self) -> str:
        return self.outcome.status if self.outcome is not None else "pending"

    @property
    def metrics_summary(self) -> dict[str, float]:
        return self.outcome.metrics_summary if self.outcome is not None else {}

    @property
    def summary(self) -> str:
        return self.outcome.summary if self.outcome is not None else ""

    @property
    def head_sha(self) -> str | None:
        return self.outcome.head_sha if self.outcome is not None else None

    @property
    def recorded_seq(self) -> int | None:
        return self.outcome.seq if self.outcome is not None else None


class Campaign(msgspec.Struct, kw_only=True, frozen=True):
    """An analysis campaign: the event that created it, and its slices."""

    created: AnalysisCampaignCreated
    slices: list[Slice]

    @property
    def campaign_id(self) -> str:
        return self.created.campaign_id

    @property
    def title(self) -> str:
        return self.created.title

    @property
    def goal(self) -> str:
        return self.created.goal

    @property
    def parent_run(self) -> str | None:
        return self.created.parent_run

    @property
    def parent_branch(self) -> str:
        return self.created.parent_branch

    @property
    def parent_sha(self) -> str:
        return self.created.parent_sha

    @property
    def seq(self) -> int:
        return self.created.seq

    @property
    def ts(self) -> str:
        return self.created.ts

    @property
    def done(self) -> int:
        return sum(1 for s in self.slices if s.outcome is not None)

    def slice(self, slice_id: str) -> Slice | None:
        return next((s for s in self.slices if s.slice_id == slice_id), None)


class BranchInfo(msgspec.Struct, kw_only=True, frozen=True):
    """A branch the log made (``git.branch_prepared``, or a campaign's slice branch) and
    the head its last checkpoint left it at."""

    branch: str
    kind: str
    start_sha: str
    start_point: str
    worktree: str | None
    run: str | None
    idea_id: str | None
    campaign_id: str | None
    slice_id: str | None
    seq: int
    head_sha: str | None = None  # last checkpoint on it


class Checkpoint(msgspec.Struct, kw_only=True, frozen=True):
    """What the view keeps of a checkpoint (``git.checkpointed``): the skipped paths as
    a count, so the last few checkpoints stay small in the state and its snapshots."""

    sha: str
    message: str
    branch: str
    worktree: str | None
    skipped: int
    seq: int
    ts: str


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    quest: status_projection.StatusState = msgspec.field(default_factory=status_projection.StatusState)
    records: dict[str, ArtifactRecorded] = {}
    counters: dict[str, int] = {}  # kind -> records of that kind (ids are numbered from it)
    recent: dict[str, list[str]] = {}  # kind -> the last record ids, newest last
    # An index for listing the newest records (of a kind) at the cost of what is listed
    # (see newest_records): the seq of every record event -> (its artifact id, the seq of
    # the record of the same kind before it, or 0), in seq order; and each kind's newest.
    by_seq: dict[int, tuple[str, int]] = {}
    newest: dict[str, int] = {}
    baselines: dict[str, Baseline] = {}
    # The baseline (and variant) the quest works against: {"baseline_id", "variant_id"}.
    # A plain dict (not a TypedDict): the research domain reads it with `(... or {}).get`.
    attached: dict[str, str | None] | None = None
    confirmed_baseline: str | None = None  # the most recently confirmed baseline id
    runs: dict[str, MainRun] = {}
    latest_run: str | None = None
    campaigns: dict[str, Campaign] = {}
    branches: dict[str, BranchInfo] = {}
    active_branch: str = "main"
    active_worktree: str | None = None
    checkpoints: list[Checkpoint] = []  # the last few
    checkpoint_count: int = 0
    refreshes: int = 0
    last_refresh_reason: str = ""
    graph: dict[str, Any] | None = None  # as git_graph returned it
    # The baseline gate: pending until a baseline is confirmed or the gate is waived.
    baseline_gate: str = "pending"
    waiver: Waiver | None = None
    # Ideas submitted as candidates (no branch yet), until promoted onto a line.
    candidate_ideas: dict[str, IdeaSubmitted] = {}
    # What SUMMARY.md's health line is derived from (projections.health): the turns view
    # and the interactions view, folded here from the events that move a quest's health
    # (turns, controls, messages and requests), exactly as those views fold them.
    turns: turns_view.State = msgspec.field(default_factory=turns_view.initial)
    requests: interactions_view.State = msgspec.field(default_factory=interactions_view.initial)

    def id_taken(self, artifact_id: str) -> bool:
        """Ids share one namespace: records, baselines, main runs and campaigns."""
        return (
            artifact_id in self.records
            or artifact_id in self.baselines
            or artifact_id in self.runs
            or artifact_id in self.campaigns
        )


def record_path(kind: str, artifact_id: str) -> str:
    return f"artifacts/{KIND_DIRS[kind]}/{artifact_id}.json"


def run_page_path(run: str) -> str:
    """The readable page of a main experiment, beside its JSON record."""
    return f"artifacts/runs/{run}.md"


def campaign_path(campaign_id: str) -> str:
    return f"artifacts/campaigns/{campaign_id}.json"


def newest_records(state: State, limit: int, *, kind: str | None = None) -> list[ArtifactRecorded]:
    """The newest ``limit`` records (of ``kind`` if given), newest first.

    Costs what it returns, not the number of records: it walks the ``by_seq`` index back
    from the newest record event (of that kind). Ids are unique in a log the artifact
    service wrote; an id recorded again (a hand-made log) is listed once, at its latest
    recording, under the kind it has now.
    """
    out: list[ArtifactRecorded] = []
    if limit <= 0:
        return out
    if kind is None:
        for seq in reversed(state.by_seq):
            record = state.records.get(state.by_seq[seq][0])
            if record is not None and record.seq == seq:  # not superseded by a later recording
                out.append(record)
                if len(out) >= limit:
                    break
        return out
    seq = state.newest.get(kind, 0)
    while seq and len(out) < limit:
        artifact_id, before = state.by_seq[seq]
        record = state.records.get(artifact_id)
        if record is not None and record.seq == seq:
            out.append(record)
        seq = before
    return out


def apply(state: State, event: Event) -> State:
    """Fold ``event`` into ``state``.

    A record already in the state (a baseline, a branch, a campaign and its slices, the
    quest's status, a list in ``recent``) is never changed in place: it is replaced by
    a new one, so whoever was handed a record earlier keeps seeing what it was. Only the
    state's own top-level fields and containers are updated.
    """
    state.last_seq = event.seq
    state.quest = status_projection.apply(_thaw_status(state.quest), event)
    # The nested views are updated in place: :func:`thaw` copied them at the hand-out.
    if isinstance(event, HEALTH_TURN_EVENTS):
        state.turns = turns_view.apply(state.turns, event)
    elif isinstance(event, HEALTH_REQUEST_EVENTS):
        state.requests = interactions_view.apply(state.requests, event)
    match event:
        case ArtifactRecorded():
            state.records[event.artifact_id] = event
            state.counters[event.kind] = state.counters.get(event.kind, 0) + 1
            state.recent[event.kind] = [*state.recent.get(event.kind, ()), event.artifact_id][-_RECENT:]
            state.by_seq[event.seq] = (event.artifact_id, state.newest.get(event.kind, 0))
            state.newest[event.kind] = event.seq
        case BranchPrepared():
            state.branches[event.branch] = BranchInfo(
                branch=event.branch, kind=event.branch_kind, start_sha=event.start_sha, start_point=event.start_point,
                worktree=event.worktree, run=event.run, idea_id=event.idea_id, campaign_id=event.campaign_id,
                slice_id=event.slice_id, seq=event.seq, head_sha=event.start_sha,
            )  # fmt: skip
            if event.activate:
                state.active_branch, state.active_worktree = event.branch, event.worktree
        case GitCheckpointed():
            state.checkpoint_count += 1
            done = Checkpoint(
                sha=event.sha, message=event.message, branch=event.branch, worktree=event.worktree,
                skipped=len(event.skipped), seq=event.seq, ts=event.ts,
            )  # fmt: skip
            state.checkpoints.append(done)
            del state.checkpoints[:-_RECENT]
            info = state.branches.get(event.branch)
            if info is not None:
                state.branches[event.branch] = replace(info, head_sha=event.sha)
        case BaselinePublished():
            baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
            state.baselines[event.baseline_id] = replace(
                baseline, published_seq=event.seq, payload=event.payload, variant_ids=list(event.variant_ids)
            )
        case BaselineAttached():
            state.attached = {"baseline_id": event.baseline_id, "variant_id": event.variant_id}
            if event.entry is not None:
                baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
                state.baselines[event.baseline_id] = replace(
                    baseline,
                    payload=dict(event.entry.get("payload") or {}),
                    variant_ids=list(event.entry.get("variant_ids") or []),
                    source_quest=event.source_quest,
                )
        case BaselineConfirmed():
            baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
            state.baselines[event.baseline_id] = replace(baseline, confirmed=event)
            state.confirmed_baseline = event.baseline_id
            state.baseline_gate, state.waiver = "confirmed", None
        case BaselineWaived():
            state.baseline_gate = "waived"
            state.waiver = {"reason": event.reason, "comment": event.comment, "seq": event.seq, "ts": event.ts}
        case MainExperimentRecorded():
            state.runs[event.run] = event
            state.latest_run = event.run
        case AnalysisCampaignCreated():
            slices = [Slice(**msgspec.structs.asdict(s)) for s in event.slice_specs()]
            state.campaigns[event.campaign_id] = Campaign(created=event, slices=slices)
            for s in slices:
                state.branches[s.branch] = BranchInfo(
                    branch=s.branch, kind="analysis", start_sha=event.parent_sha, start_point=event.parent_branch,
                    worktree=s.worktree, run=event.parent_run, idea_id=None, campaign_id=event.campaign_id,
                    slice_id=s.slice_id, seq=event.seq, head_sha=event.parent_sha,
                )  # fmt: skip
        case AnalysisSliceRecorded():
            campaign = state.campaigns.get(event.campaign_id)
            if campaign is not None and campaign.slice(event.slice_id) is not None:
                slices = [replace(s, outcome=event) if s.slice_id == event.slice_id else s for s in campaign.slices]
                state.campaigns[event.campaign_id] = replace(campaign, slices=slices)
        case BranchActivated():
            # An existing branch became the workspace: checkpoints and records follow it.
            state.active_branch, state.active_worktree = event.branch, event.worktree
        case IdeaSubmitted():
            if event.submission_mode == "candidate" and event.mode == "create":
                state.candidate_ideas[event.idea_id] = event
            elif event.submission_mode == "line":
                promoted = event.details.get("source_candidate_id")
                state.candidate_ideas.pop(str(promoted), None)
                state.candidate_ideas.pop(event.idea_id, None)
        case SummaryRefreshed():
            state.refreshes += 1
            state.last_refresh_reason = event.reason
        case GitGraphRendered():
            state.graph = event.graph
    return state


def thaw(state: State) -> State:
    """A copy ``apply`` may update: the top-level containers, and the nested turns and
    interactions views (their own thaw), which ``apply`` updates in place."""
    copy = shallow_thaw(state)
    copy.turns = turns_view.PROJECTION.thawed(state.turns)
    copy.requests = interactions_view.PROJECTION.thawed(state.requests)
    return copy


def _thaw_status(quest: status_projection.StatusState) -> status_projection.StatusState:
    # The status fold updates its state in place (its fields and its `counts` dict);
    # here that state is a record inside ours, so it gets a fresh copy to update.
    return replace(quest, counts=dict(quest.counts))
