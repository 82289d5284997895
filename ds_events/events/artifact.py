"""Events of the `artifact` domain: records, git checkpoints and branches, baselines and
metric contracts, main experiments, analysis campaigns, summary and graph refreshes.

Git side effects (a commit, a branch, a worktree) happen once in the service; these
events record what happened (sha, branch name, worktree path, skipped files) so replay
rebuilds the views without touching git again.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

import msgspec

from .base import Event

__all__ = [
    "SliceSpec",
    "SkippedPath",
    "ArtifactRecorded",
    "GitCheckpointed",
    "BranchPrepared",
    "BaselinePublished",
    "BaselineAttached",
    "BaselineConfirmed",
    "MainExperimentRecorded",
    "AnalysisCampaignCreated",
    "AnalysisSliceRecorded",
    "SummaryRefreshed",
    "GitGraphRendered",
    "BaselineWaived",
    "RegistryBaselinePublished",
    "PaperAdded",
    "EVENTS",
]


class ArtifactRecorded(Event, tag="artifact.recorded", kw_only=True):
    """An idea, decision, progress note, answer, milestone, run, report, approval, graph or
    baseline record; materialised as ``artifacts/<kind dir>/<artifact_id>.json``."""

    artifact_id: str
    kind: str
    payload: dict[str, Any] = {}
    branch: str = "main"  # the active branch when it was recorded


class SkippedPath(TypedDict):
    """A path a checkpoint left out, and why: the typed form of each item of
    :attr:`GitCheckpointed.skipped` (a dict on the wire; the field's pinned schema says
    ``object``). ``reason`` is ``ds_working_area``, ``cache``, ``virtualenv``,
    ``nested_repository`` or ``too_large`` (with the file's ``size``)."""

    path: str
    reason: str
    size: NotRequired[int]


class GitCheckpointed(Event, tag="git.checkpointed", kw_only=True):
    """A commit of the quest repository (or of a worktree) was made."""

    sha: str
    message: str
    branch: str
    parent: str | None = None
    worktree: str | None = None  # relative to the quest root; None for the quest root itself
    files: int = 0  # files in the committed tree
    skipped: list[dict[str, Any]] = []  # each a SkippedPath: {"path", "reason", "size"?}
    allow_empty: bool = False


class BranchPrepared(Event, tag="git.branch_prepared", kw_only=True):
    """A branch (and, usually, a worktree under ``.ds/worktrees/``) was created."""

    branch: str
    branch_kind: str  # idea | run | analysis | paper
    start_sha: str
    start_point: str = ""  # what the caller asked for (a branch or a sha), or the default used
    worktree: str | None = None  # relative to the quest root
    run: str | None = None  # the experiment run id the branch is for
    idea_id: str | None = None
    campaign_id: str | None = None
    slice_id: str | None = None
    activate: bool = True  # later checkpoints commit this worktree


class BaselinePublished(Event, tag="artifact.baseline_published", kw_only=True):
    """A baseline was registered in the quest so that it can be attached and confirmed."""

    baseline_id: str
    payload: dict[str, Any] = {}
    variant_ids: list[str] = []


class BaselineAttached(Event, tag="artifact.baseline_attached", kw_only=True):
    """The quest chose a published baseline (and maybe a variant) to work against."""

    baseline_id: str
    variant_id: str | None = None
    # A baseline another quest published to the home's registry: the registry entry as
    # it was when attached, so this quest's replay needs no other log.
    entry: dict[str, Any] | None = None
    source_quest: str | None = None


class BaselineConfirmed(Event, tag="artifact.baseline_confirmed", kw_only=True):
    """A baseline's numbers and canonical metric contract were confirmed.

    ``contract`` is the normalised contract materialised to ``contract_path``
    (``<baseline_path>/json/metric_contract.json``).
    """

    baseline_id: str
    baseline_path: str
    contract_path: str
    contract: dict[str, Any]
    metrics_summary: dict[str, float]
    primary_metric: str
    metric_directions: dict[str, str] = {}
    summary: str = ""
    variant_id: str | None = None
    comment: str = ""
    baseline_kind: str = ""
    # Set by overwrite_baseline: what changed against the confirmation it replaces.
    overwrite: dict[str, Any] | None = None


class MainExperimentRecorded(Event, tag="artifact.main_experiment_recorded", kw_only=True):
    """A main experiment run whose metrics satisfy the confirmed baseline's contract.

    ``run`` is the experiment's run id (the envelope's ``run_id`` names the agent run
    that caused the event, which is a different thing).
    """

    run: str
    title: str
    baseline_id: str
    metrics_summary: dict[str, float]
    comparisons: dict[str, dict[str, Any]] = {}
    primary_metric: str = ""
    branch: str = "main"
    head_sha: str | None = None
    idea_id: str | None = None
    summary: str = ""
    evaluation_protocol: dict[str, Any] | None = None
    details: dict[str, Any] = {}
    # The run's narrative and evidence, as the agent wrote them.
    hypothesis: str = ""
    setup: str = ""
    execution: str = ""
    results: str = ""
    conclusion: str = ""
    evaluation_summary: dict[str, Any] | None = None
    evidence_paths: list[str] = []
    metric_rows: list[dict[str, Any]] = []
    # The progress verdict against the baseline and the previous best main run.
    progress: dict[str, Any] = {}
    verdict: str = ""
    # Other facts callers send (status, dataset_scope, changed_files, config_paths, notes,
    # baseline_variant_id, the run's own metric_contract, comment).
    report: dict[str, Any] = {}


class SliceSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One slice of an analysis campaign as it was planned: the typed form of each item
    of :attr:`AnalysisCampaignCreated.slices`, shared by the service that plans it, the
    `artifacts` view that folds it and the result the tool answers with.

    The event's field stays declared as ``list[dict]``: its JSON schema is pinned in
    ``fixtures/event_tags.json``, and a Struct there would change the schema, not the
    line (the keys and their order are these fields')."""

    slice_id: str
    title: str
    goal: str
    branch: str
    worktree: str | None  # relative to the quest root; None when made without a checkout


class AnalysisCampaignCreated(Event, tag="artifact.analysis_campaign_created", kw_only=True):
    """An analysis campaign whose slices are child branches of a result node."""

    campaign_id: str
    title: str
    goal: str
    parent_run: str | None
    parent_branch: str
    parent_sha: str
    slices: list[dict[str, Any]]  # each a SliceSpec: {"slice_id", "title", "goal", "branch", "worktree"}
    # A writing-facing campaign's paper fields (DeepScientist's), and the outline item each
    # slice resolves (slice_id -> item id); empty for a plain campaign.
    selected_outline_ref: str | None = None
    research_questions: list[str] = []
    experimental_designs: list[str] = []
    todo_items: list[dict[str, Any]] = []
    slice_items: dict[str, str] = {}

    def slice_specs(self) -> list[SliceSpec]:
        """:attr:`slices`, typed."""
        return msgspec.convert(self.slices, list[SliceSpec])


class AnalysisSliceRecorded(Event, tag="artifact.analysis_slice_recorded", kw_only=True):
    """The outcome of one analysis slice."""

    campaign_id: str
    slice_id: str
    status: str  # completed | failed | abandoned
    metrics_summary: dict[str, float] = {}
    summary: str = ""
    head_sha: str | None = None
    details: dict[str, Any] = {}
    setup: str = ""
    execution: str = ""
    results: str = ""
    evaluation_summary: dict[str, Any] | None = None
    evidence_paths: list[str] = []
    metric_rows: list[dict[str, Any]] = []
    # Other facts callers send (deviations, claim_impact, next_recommendation, ...).
    report: dict[str, Any] = {}


class SummaryRefreshed(Event, tag="artifact.summary_refreshed", kw_only=True):
    """The agent asked for ``SUMMARY.md`` to be refreshed (it is rendered from the log)."""

    reason: str = ""


class GitGraphRendered(Event, tag="git.graph_rendered", kw_only=True):
    """A snapshot of the branch graph, materialised as JSON and SVG under ``artifacts/graphs/``."""

    graph: dict[str, Any]


class BaselineWaived(Event, tag="artifact.baseline_waived", kw_only=True):
    """The quest goes on without a confirmed baseline, for a written reason; main
    experiments are then recorded without a comparison."""

    reason: str
    comment: str = ""


class RegistryBaselinePublished(Event, tag="registry.baseline_published", kw_only=True):
    """A baseline entered the home's registry (its own log under ``DS_HOME/baselines``),
    where every quest of the home can attach it; ``source_quest`` published it."""

    baseline_id: str
    payload: dict[str, Any] = {}
    variant_ids: list[str] = []
    source_quest: str = ""


class PaperAdded(Event, tag="artifact.paper_added", kw_only=True):
    """An arXiv paper entered the quest's paper library: the first time the quest read it
    through ``arxiv``. The text stays in the home's cache; the log keeps what a listing
    of the library shows."""

    paper_id: str
    title: str
    authors: list[str] = []
    published: str = ""
    abstract: str = ""


EVENTS: tuple[type[Event], ...] = (
    ArtifactRecorded,
    GitCheckpointed,
    BranchPrepared,
    BaselinePublished,
    BaselineAttached,
    BaselineConfirmed,
    MainExperimentRecorded,
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    SummaryRefreshed,
    GitGraphRendered,
    BaselineWaived,
    RegistryBaselinePublished,
    PaperAdded,
)
