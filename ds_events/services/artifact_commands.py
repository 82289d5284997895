"""The commands of the `artifact` namespace and their answers: quest records, branches
and checkpoints, baselines and metric contracts, experiments, analysis campaigns,
summary, arXiv.

Each service function of :mod:`ds_events.services.artifacts`, :mod:`ds_events.services.git`
and :mod:`ds_events.services.arxiv` takes one command below and returns its result
struct (the ``...Result`` classes), which the edge encodes as it is.

Free-form JSON parts (a record's payload, a metric contract, metrics) are decoded as
objects and checked by the services, which answer a wrong shape with their own codes
(``missing_fields``, ``missing_metric_ids`` ...); their JSON schemas tell the caller the
expected shape up front.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from .commands import Command, Result

__all__ = [
    "Record",
    "RefreshSummary",
    "ReadArxiv",
    "Checkpoint",
    "PrepareBranch",
    "RenderGitGraph",
    "PublishBaseline",
    "AttachBaseline",
    "ConfirmBaseline",
    "RecordMainExperiment",
    "CreateAnalysisCampaign",
    "RecordAnalysisSlice",
    "RecordResult",
    "SummaryResult",
    "PaperResult",
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
]

_ID = "letters, digits, '.', '_', '-'"
_METRICS = {
    "type": "object",
    "additionalProperties": {"type": "number"},
    "description": "Flat {metric_id: number}, e.g. {\"top1\": 0.916}.",
}
_DIRECTIONS = {
    "anyOf": [{"type": "object", "additionalProperties": {"type": "string", "enum": ["higher", "lower"]}}, {"type": "null"}]
}
_RECORD_PAYLOAD = {
    "type": "object",
    "properties": {
        "kind": {
            "type": "string",
            "enum": ["idea", "decision", "progress", "answer", "milestone", "run", "report", "approval", "graph", "baseline"],
        },
        "artifact_id": {"type": "string", "description": "Optional id (else <kind>-NNNN)."},
        "title": {"type": "string", "description": "idea, milestone, report, baseline, graph: required."},
        "summary": {"type": "string"},
        "verdict": {"type": "string", "description": "decision: required; approval: approved | rejected | changes_requested."},
        "action": {
            "type": "string",
            "description": (
                "decision: continue | launch_experiment | launch_analysis_campaign | prepare_branch | attach_baseline | "
                "confirm_baseline | reuse_baseline | revise_idea | write | finalize | request_user_decision | stop."
            ),
        },
        "reason": {"type": "string", "description": "decision: required."},
        "message": {"type": "string", "description": "progress, answer: required."},
        "run_kind": {"type": "string", "description": "run: required, e.g. smoke, training, evaluation."},
        "idea_id": {"type": "string"},
        "run_id": {"type": "string"},
        "paths": {"type": "array", "items": {"type": "string"}, "description": "Files inside the quest."},
    },
    "required": ["kind"],
    "additionalProperties": True,
}
_BASELINE_PAYLOAD = {
    "type": "object",
    "properties": {
        "baseline_id": {"type": "string"},
        "title": {"type": "string"},
        "variants": {
            "type": "array",
            "items": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"variant_id": {"type": "string"}}}]},
        },
        "baseline_path": {"type": "string", "description": "The baseline's directory inside the quest."},
        "metrics_summary": _METRICS,
        "source": {"type": "string"},
        "summary": {"type": "string"},
    },
    "required": ["baseline_id", "title"],
    "additionalProperties": True,
}
_CONTRACT = {
    "type": "object",
    "properties": {
        "metrics": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "derivation": {"type": "string"},
                    "origin_path": {"type": "string"},
                    "source_ref": {"type": "string"},
                    "direction": {"type": "string", "enum": ["higher", "lower"]},
                },
                "required": ["description", "source_ref"],
            },
        },
        "evaluation_protocol": {"type": ["object", "string"], "description": "How it is evaluated: an object, or a sentence."},
    },
    "required": ["metrics"],
}
_SLICES = {
    "type": "array",
    "minItems": 1,
    "maxItems": 32,
    "items": {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "properties": {"slice_id": {"type": "string"}, "title": {"type": "string"}, "goal": {"type": "string"}},
                "required": ["title"],
            },
        ]
    },
}
_OBJECT_OR_NULL = {"anyOf": [{"type": "object"}, {"type": "null"}]}


class Record(Command):
    payload: Annotated[dict[str, Any], Meta(
        description="The artifact: `kind` and the fields that kind needs, plus any other JSON fields.",
        extra_json_schema=_RECORD_PAYLOAD,
    )]


class RefreshSummary(Command):
    reason: Annotated[str | None, Meta(description="Why the summary is refreshed, e.g. \"main experiment recorded\".")] = None


class ReadArxiv(Command):
    paper_id: Annotated[str, Meta(description="e.g. \"2401.01234\", \"2401.01234v2\", \"hep-th/9901001\", \"arXiv:2401.01234\".")]
    mode: Annotated[str, Meta(description="\"list\" for metadata and section titles, \"read\" for the abstract and full text too.")] = "read"


class Checkpoint(Command):
    message: Annotated[str, Meta(description="The commit message.")]
    allow_empty: Annotated[bool, Meta(description="Commit even when the tree did not change.")] = False
    branch: Annotated[str | None, Meta(description=(
        "Commit this prepared branch's worktree instead of the active one (\"main\" = the quest root). "
        "When null: the active worktree."
    ))] = None


class PrepareBranch(Command):
    run_id: Annotated[str | None, Meta(description=f"The run's id ({_ID}).")] = None
    idea_id: Annotated[str | None, Meta(description=f"The idea's id ({_ID}).")] = None
    branch: Annotated[str | None, Meta(description="An explicit branch name instead of the scheme; must start with \"<branch_kind>/\".")] = None
    branch_kind: Annotated[str, Meta(description="run | idea | analysis | paper.")] = "run"
    create_worktree: Annotated[bool, Meta(description="false to create the branch only.")] = True
    start_point: Annotated[str | None, Meta(description="Branch or commit to start from. When null: the active branch.")] = None


class RenderGitGraph(Command):
    max_commits: Annotated[int, Meta(description="1-2000: newest commits to include.")] = 200


class PublishBaseline(Command):
    payload: Annotated[dict[str, Any], Meta(
        description="The baseline: baseline_id, title, optional variants, baseline_path, metrics_summary, source, summary.",
        extra_json_schema=_BASELINE_PAYLOAD,
    )]


class AttachBaseline(Command):
    baseline_id: Annotated[str, Meta(description="A published baseline.")]
    variant_id: Annotated[str | None, Meta(description="One of its variants.")] = None


class ConfirmBaseline(Command):
    baseline_path: Annotated[str, Meta(description="The baseline's directory inside the quest, e.g. \"baselines/resnet20\".")]
    baseline_id: Annotated[str, Meta(description="The baseline (published or not).")]
    metric_contract: Annotated[dict[str, Any], Meta(
        description=(
            "{\"metrics\": {metric_id: {\"description\", \"derivation\" or \"origin_path\", \"source_ref\", optional "
            "\"direction\"}}, optional \"evaluation_protocol\": {...}}. Every metric of metrics_summary needs an entry."
        ),
        extra_json_schema=_CONTRACT,
    )]
    metrics_summary: Annotated[dict[str, Any], Meta(description="Flat {metric_id: number}.", extra_json_schema=_METRICS)]
    primary_metric: Annotated[str, Meta(description="One metric id of metrics_summary.")]
    metric_directions: Annotated[dict[str, Any] | None, Meta(
        description="{metric_id: \"higher\" | \"lower\"}; a metric not named is higher-is-better.",
        extra_json_schema=_DIRECTIONS,
    )] = None
    summary: Annotated[str | None, Meta(description="A short note on the baseline.")] = None
    variant_id: Annotated[str | None, Meta(description="The variant confirmed, if the baseline has variants.")] = None


class RecordMainExperiment(Command):
    run_id: Annotated[str, Meta(description="The run (its branch run/<run_id> is used when prepared).")]
    title: Annotated[str, Meta(description="One line.")]
    metrics_summary: Annotated[dict[str, Any], Meta(description="Flat {metric_id: number}.", extra_json_schema=_METRICS)]
    baseline_id: Annotated[str | None, Meta(description=(
        "The baseline compared against. When null: the attached confirmed baseline, else the last confirmed."
    ))] = None
    metric_directions: Annotated[dict[str, Any] | None, Meta(
        description="{metric_id: \"higher\" | \"lower\"}; must agree with the contract.", extra_json_schema=_DIRECTIONS
    )] = None
    evaluation_protocol: Annotated[dict[str, Any] | str | None, Meta(
        description=(
            "How the run was evaluated: an object, or a sentence (kept as {\"description\": ...}). "
            "Must equal the contract's protocol when both are given."
        ),
    )] = None
    summary: Annotated[str | None, Meta(description="What the run showed.")] = None
    idea_id: Annotated[str | None, Meta(description="The idea tested. When null: the run branch's idea.")] = None
    branch: Annotated[str | None, Meta(description="The run's branch. When null: the branch prepared for run_id, else the active one.")] = None
    details: Annotated[dict[str, Any] | None, Meta(description="Any other JSON facts about the run.", extra_json_schema=_OBJECT_OR_NULL)] = None


class CreateAnalysisCampaign(Command):
    campaign_title: Annotated[str, Meta(description="What the campaign is, in one line.")]
    campaign_goal: Annotated[str, Meta(description="What it should find out.")]
    slices: Annotated[list[Any], Meta(
        description="1-32 slices: titles, or objects {\"slice_id\"?, \"title\", \"goal\"?} (ids default s1, s2 ...).",
        extra_json_schema=_SLICES,
    )]
    parent_run_id: Annotated[str | None, Meta(description=(
        "The main experiment to analyse. When null: the latest main experiment, else the active branch."
    ))] = None


class RecordAnalysisSlice(Command):
    campaign_id: Annotated[str, Meta(description="e.g. \"campaign-001\".")]
    slice_id: Annotated[str, Meta(description="One slice of the campaign.")]
    status: Annotated[str, Meta(description="completed | failed | abandoned.")] = "completed"
    metrics_summary: Annotated[dict[str, Any] | None, Meta(
        description="Flat {metric_id: number}, optional.", extra_json_schema={"anyOf": [_METRICS, {"type": "null"}]}
    )] = None
    summary: Annotated[str | None, Meta(description="What the slice showed.")] = None
    details: Annotated[dict[str, Any] | None, Meta(description="Any other JSON facts.", extra_json_schema=_OBJECT_OR_NULL)] = None


# -- results ------------------------------------------------------------------------------
# Field names and order are those of the answers the tools gave as plain dicts; an
# optional field is still sent (as null) so a caller always finds every key.


class RecordResult(Result):
    artifact_id: str
    kind: str
    path: str
    branch: str
    seq: int


class SummaryResult(Result):
    path: str
    markdown: str
    seq: int


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


class CheckpointResult(Result):
    sha: str
    branch: str
    parent: str
    worktree: str | None
    files: int
    skipped: list[dict[str, Any]]
    skipped_total: int
    seq: int


class BranchResult(Result):
    branch: str
    branch_kind: str
    start_sha: str
    start_point: str
    worktree: str | None
    worktree_path: str | None
    active: bool
    seq: int


class GitGraphResult(Result):
    graph: dict[str, Any]
    svg: str
    json_path: str
    svg_path: str
    seq: int


class PublishBaselineResult(Result):
    baseline_id: str
    variant_ids: list[str]
    path: str
    seq: int


class AttachBaselineResult(Result):
    baseline_id: str
    variant_id: str | None
    confirmed: bool
    seq: int


class ConfirmBaselineResult(Result):
    baseline_id: str
    variant_id: str | None
    contract_path: str
    metric_ids: list[str]
    primary_metric: str
    metric_directions: dict[str, str]
    seq: int


class MainExperimentResult(Result):
    run_id: str
    baseline_id: str
    branch: str
    head_sha: str
    primary_metric: str
    primary: dict[str, Any]  # baseline, value, delta, better
    comparisons: dict[str, dict[str, Any]]
    extra_metric_ids: list[str]
    path: str
    seq: int


class CampaignSlice(Result):
    slice_id: str
    title: str
    goal: str
    branch: str
    worktree: str | None
    worktree_path: str | None


class CampaignResult(Result):
    campaign_id: str
    parent_run_id: str | None
    parent_branch: str
    parent_sha: str
    slices: list[CampaignSlice]
    path: str
    seq: int


class SliceResult(Result):
    campaign_id: str
    slice_id: str
    status: str
    branch: str
    head_sha: str | None
    remaining_slice_ids: list[str]
    campaign_complete: bool
    seq: int
