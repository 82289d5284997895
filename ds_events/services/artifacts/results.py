"""The answers of the `artifact` namespace's commands (:mod:`.commands`), one struct per
command, which the edge encodes as it is.

Field names and order are those of the answers the tools gave as plain dicts; an
optional field is still sent (as null) so a caller always finds every key. The MCP
tools' output schemas are derived from these structs (and pinned by
``tests/snapshots/mcp_tools.json``): a free-form object stays ``dict[str, Any]`` here.
"""

from __future__ import annotations

from typing import Any

from ds_events.events.artifact import SliceSpec
from ds_events.services.commands import Result
from projections.papers import Paper

__all__ = [
    "RecordResult",
    "SummaryResult",
    "PaperResult",
    "ArxivResult",
    "CheckpointResult",
    "BranchResult",
    "GitGraphResult",
    "PublishBaselineResult",
    "AttachBaselineResult",
    "ConfirmBaselineResult",
    "MainExperimentResult",
    "CampaignSlice",
    "CampaignResult",
    "SliceResult",
    "WaiveBaselineResult",
    "ScoreboardResult",
    "FrontierResult",
]


class RecordResult(Result):
    artifact_id: str
    kind: str
    path: str
    branch: str
    seq: int
    ok: bool = True


class SummaryResult(Result):
    path: str
    markdown: str
    seq: int
    ok: bool = True
    summary_path: str = ""  # DeepScientist's name: SUMMARY.md's absolute path


class PaperResult(Result, omit_defaults=True):
    """``text`` and ``section_texts`` come only with ``mode="read"``."""

    paper_id: str
    title: str
    authors: list[str]
    published: str
    abstract: str
    sections: list[str]
    mode: str
    cached: bool
    cache_path: str
    text: str | None = None
    section_texts: list[dict[str, str]] | None = None


class ArxivResult(Result, omit_defaults=True):
    """A paper (``text`` and ``section_texts`` only when read in full), or the library
    (``count`` and ``items``, newest first)."""

    ok: bool
    mode: str
    paper_id: str | None = None
    title: str | None = None
    authors: list[str] | None = None
    published: str | None = None
    abstract: str | None = None
    sections: list[str] | None = None
    cached: bool | None = None
    cache_path: str | None = None
    text: str | None = None
    section_texts: list[dict[str, str]] | None = None
    count: int | None = None
    items: list[Paper] | None = None


class CheckpointResult(Result):
    sha: str
    branch: str
    parent: str
    worktree: str | None
    files: int
    skipped: list[dict[str, Any]]
    skipped_total: int
    seq: int
    ok: bool = True
    # DeepScientist's names: the branch's new head (the sha) and that a commit was made
    # (a checkpoint with nothing to commit is refused here, so always true).
    head: str = ""
    committed: bool = True


class BranchResult(Result):
    branch: str
    branch_kind: str
    start_sha: str
    start_point: str
    worktree: str | None
    worktree_path: str | None
    active: bool
    seq: int
    ok: bool = True


class GitGraphResult(Result):
    graph: dict[str, Any]  # also json_path and svg_path (absolute: where DeepScientist's callers read them)
    svg: str
    json_path: str
    svg_path: str
    seq: int
    ok: bool = True


class PublishBaselineResult(Result):
    baseline_id: str
    variant_ids: list[str]
    path: str
    seq: int
    baseline_registry_entry: dict[str, Any] = {}
    ok: bool = True
    # A retry that completed an earlier publication cut short between its quest and
    # registry appends (nothing new in the quest; the registry entry written now).
    recovered: bool = False


class AttachBaselineResult(Result):
    baseline_id: str
    variant_id: str | None
    confirmed: bool
    seq: int
    attachment: dict[str, Any] = {}  # source_baseline_id, source_variant_id, source_quest
    ok: bool = True


class ConfirmBaselineResult(Result):
    baseline_id: str
    variant_id: str | None
    contract_path: str
    metric_ids: list[str]
    primary_metric: str
    metric_directions: dict[str, str]
    seq: int
    baseline_gate: str = "confirmed"
    confirmed_baseline_ref: dict[str, Any] = {}
    metric_contract_json_path: str = ""
    metric_contract_json_rel_path: str = ""
    overwrite: dict[str, Any] | None = None
    compatibility_verdict: str | None = None
    # Metrics whose direction the caller's metric_directions set against the contract
    # entry's: {metric_id: {"contract": entry's, "used": the caller's}}, and a message.
    direction_overrides: dict[str, dict[str, str]] = {}
    message: str = ""
    ok: bool = True


class WaiveBaselineResult(Result):
    baseline_gate: str
    reason: str
    anchor: str
    seq: int
    ok: bool = True


class MainExperimentResult(Result):
    run_id: str
    baseline_id: str | None
    branch: str
    head_sha: str
    primary_metric: str
    primary: dict[str, Any]  # baseline, value, delta, better
    comparisons: dict[str, dict[str, Any]]
    extra_metric_ids: list[str]
    path: str
    seq: int
    run_md_path: str = ""
    result_json_path: str = ""
    metrics_summary: dict[str, float] = {}
    progress_eval: dict[str, Any] = {}
    evaluation_summary: dict[str, Any] | None = None
    verdict: str = ""
    ok: bool = True


class CampaignSlice(SliceSpec, kw_only=True, frozen=True):
    # A slice as planned (the campaign event's own shape, so not a Result of its own),
    # and where its worktree is.
    worktree_path: str | None
    worktree_root: str | None = None  # DeepScientist's name for worktree_path


class CampaignResult(Result):
    campaign_id: str
    parent_run_id: str | None
    parent_branch: str
    parent_sha: str
    slices: list[CampaignSlice]
    path: str
    seq: int
    ok: bool = True
    parent_worktree_root: str | None = None  # the parent branch's worktree (absolute); null when it has none


class SliceResult(Result):
    campaign_id: str
    slice_id: str
    status: str
    branch: str
    head_sha: str | None
    remaining_slice_ids: list[str]
    campaign_complete: bool
    seq: int
    completed: bool = False  # DeepScientist's name for campaign_complete
    next_slice: dict[str, Any] | None = None
    metrics_summary: dict[str, float] = {}
    evaluation_summary: dict[str, Any] | None = None
    path: str = ""
    ok: bool = True
    # DeepScientist's names: the file holding the slice's result (the campaign's JSON,
    # absolute) and, once the campaign is complete, the parent branch work goes back to.
    result_json_path: str = ""
    returned_to_branch: str | None = None


class ScoreboardResult(Result):
    scoreboard: dict[str, Any]
    ok: bool = True


class FrontierResult(Result):
    optimization_frontier: dict[str, Any]
    ok: bool = True
