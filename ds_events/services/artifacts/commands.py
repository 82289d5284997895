"""The commands of the `artifact` namespace: quest records, branches and checkpoints,
baselines and metric contracts, experiments, analysis campaigns, summary, arXiv.

Each service function of the domain (:mod:`.records`, :mod:`.baselines`,
:mod:`.experiments`, :mod:`.campaigns`, :mod:`.queries`, :mod:`.checkpoints`,
:mod:`.arxiv`) takes one command below and returns its answer, a struct of
:mod:`.results`, which the edge encodes as it is.

Free-form JSON parts (a record's payload, a metric contract, metrics) are decoded as
objects and checked by the services, which answer a wrong shape with their own codes
(``missing_fields``, ``missing_metric_ids`` ...); their JSON schemas tell the caller the
expected shape up front.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta

from ds_events.services.commands import Command

__all__ = [
    "Record",
    "RefreshSummary",
    "Arxiv",
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
    "WaiveBaseline",
    "OverwriteBaseline",
    "GetMethodScoreboard",
    "GetOptimizationFrontier",
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
        "title": {"type": "string", "description": (
            "idea, milestone, baseline, graph: required. report: when empty, its summary's first line (else its report_type)."
        )},
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
_METRIC_ROWS = {
    "anyOf": [
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "metric_id": {"type": "string"},
                    "value": {"type": "number"},
                    "direction": {"type": "string"},
                },
                "required": ["metric_id", "value"],
                "additionalProperties": True,
            },
        },
        {"type": "null"},
    ]
}
_PRIMARY_METRIC = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "properties": {"metric_id": {"type": "string"}, "value": {"type": "number"}, "direction": {"type": "string"}},
            "required": ["metric_id"],
        },
        {"type": "null"},
    ]
}
_STRINGS_OR_NULL = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
_EVALUATION_SUMMARY = {
    "anyOf": [
        {
            "type": "object",
            "properties": {
                k: {"type": "string"}
                for k in ("takeaway", "claim_update", "baseline_relation", "comparability", "failure_mode", "next_action")
            },
            "additionalProperties": True,
        },
        {"type": "null"},
    ]
}
_BASELINE_REFS = {
    "anyOf": [
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "baseline_id": {"type": "string"},
                    "variant_id": {"type": "string"},
                    "reason": {"type": "string"},
                    "benchmark": {"type": "string"},
                    "split": {"type": "string"},
                },
                "additionalProperties": True,
            },
        },
        {"type": "null"},
    ]
}


class Record(Command):
    payload: Annotated[dict[str, Any], Meta(
        description="The artifact: `kind` and the fields that kind needs, plus any other JSON fields.",
        extra_json_schema=_RECORD_PAYLOAD,
    )]


class RefreshSummary(Command):
    reason: Annotated[str | None, Meta(description="Why the summary is refreshed, e.g. \"main experiment recorded\".")] = None


class Arxiv(Command):
    """The ``arxiv`` tool's arguments."""

    paper_id: Annotated[str | None, Meta(description=(
        "e.g. \"2401.01234\", \"2401.01234v2\", \"hep-th/9901001\", \"arXiv:2401.01234\". "
        "When null: only with mode=\"list\", which then lists the quest's paper library."
    ))] = None
    mode: Annotated[str, Meta(description=(
        "\"read\" for the paper with its full text; \"list\" for a paper's metadata and section titles, "
        "or, without paper_id, the quest's paper library. When null: read."
    ))] = "read"
    full_text: Annotated[bool | None, Meta(description=(
        "read: false for the overview only (metadata, abstract, section titles), true for the full text too. "
        "When null: the full text."
    ))] = None


class ReadArxiv(Command):
    paper_id: Annotated[str, Meta(description="e.g. \"2401.01234\", \"2401.01234v2\", \"hep-th/9901001\", \"arXiv:2401.01234\".")]
    mode: Annotated[str, Meta(
        description="\"list\" for metadata and section titles, \"read\" for the abstract and full text too.",
    )] = "read"


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
    branch: Annotated[str | None, Meta(
        description="An explicit branch name instead of the scheme; must start with \"<branch_kind>/\".",
    )] = None
    branch_kind: Annotated[str, Meta(description="run | idea | analysis | paper.")] = "run"
    create_worktree: Annotated[bool, Meta(description="false to create the branch only.")] = True
    start_point: Annotated[str | None, Meta(description="Branch or commit to start from. When null: the active branch.")] = None
    create_worktree_flag: Annotated[bool | None, Meta(description=(
        "DeepScientist's name for create_worktree; when given it decides (it may not contradict an explicit create_worktree)."
    ))] = None


class RenderGitGraph(Command):
    max_commits: Annotated[int, Meta(description="1-2000: newest commits to include.")] = 200


class PublishBaseline(Command):
    payload: Annotated[dict[str, Any], Meta(
        description=(
            "The baseline: baseline_id, title (or name), optional variants (or baseline_variants), default_variant_id, "
            "baseline_path, metrics_summary, primary_metric, metric_contract, source, summary. It enters the home's "
            "baseline registry too, where the home's other quests can attach it."
        ),
        extra_json_schema=_BASELINE_PAYLOAD,
    )]


class AttachBaseline(Command):
    baseline_id: Annotated[str, Meta(description="A baseline published in this quest or in the home's registry.")]
    variant_id: Annotated[str | None, Meta(description="One of its variants.")] = None


class ConfirmBaseline(Command):
    baseline_path: Annotated[str, Meta(description="The baseline's directory inside the quest, e.g. \"baselines/resnet20\".")]
    baseline_id: Annotated[str | None, Meta(description=(
        "The baseline (published or not). When null: the attached baseline, else the last part of baseline_path."
    ))] = None
    metric_contract: Annotated[dict[str, Any] | None, Meta(
        description=(
            "{\"metrics\": {metric_id: {\"description\", \"derivation\" or \"origin_path\", \"source_ref\", optional "
            "\"direction\"}} (or a list of entries with metric_id), optional \"evaluation_protocol\": {...}}. Every metric "
            "of metrics_summary needs an entry. When null: the published or attached baseline's contract."
        ),
        extra_json_schema={"anyOf": [_CONTRACT, {"type": "null"}]},
    )] = None
    metrics_summary: Annotated[dict[str, Any] | None, Meta(
        description="Flat {metric_id: number}. When null: the published or attached baseline's (its variant's) numbers.",
        extra_json_schema={"anyOf": [_METRICS, {"type": "null"}]},
    )] = None
    primary_metric: Annotated[str | dict[str, Any] | None, Meta(
        description=(
            "The headline metric: a metric id, or {\"metric_id\", \"value\"?, \"direction\"?}. When null: the "
            "published baseline's, else the contract's primary_metric_id, else the only metric."
        ),
        extra_json_schema=_PRIMARY_METRIC,
    )] = None
    metric_directions: Annotated[dict[str, Any] | None, Meta(
        description=(
            "{metric_id: \"higher\" | \"lower\"} (also higher_better, lower_better, maximize, minimize ...); "
            "a metric not named is higher-is-better."
        ),
        extra_json_schema=_DIRECTIONS,
    )] = None
    summary: Annotated[str | None, Meta(description="A short note on the baseline. When null: the published baseline's.")] = None
    variant_id: Annotated[str | None, Meta(description=(
        "The variant confirmed, if the baseline has variants. When null: the attached variant, else the default one."
    ))] = None
    baseline_kind: Annotated[str | None, Meta(description="e.g. reproduced, imported, published (kept with the confirmation).")] = None
    auto_advance: Annotated[bool, Meta(description="Move the quest from the baseline stage to idea.")] = True


class WaiveBaseline(Command):
    reason: Annotated[str, Meta(description="Why the quest goes on without a confirmed baseline (kept in the log).")]
    auto_advance: Annotated[bool, Meta(description="Move the quest from the baseline stage to idea.")] = True


class OverwriteBaseline(Command):
    change_summary: Annotated[str, Meta(description="What changed and why the confirmed baseline is refreshed.")]
    baseline_id: Annotated[str | None, Meta(description="The confirmed baseline (only it can be overwritten). When null: it.")] = None
    baseline_path: Annotated[str | None, Meta(description="When null: the confirmed one.")] = None
    variant_id: Annotated[str | None, Meta(description="When null: the confirmed one.")] = None
    summary: Annotated[str | None, Meta(description="When null: the confirmed one.")] = None
    metric_contract: Annotated[dict[str, Any] | None, Meta(
        description="As for confirm_baseline. When null: the confirmed contract.",
        extra_json_schema={"anyOf": [_CONTRACT, {"type": "null"}]},
    )] = None
    metrics_summary: Annotated[dict[str, Any] | None, Meta(
        description="When null: the confirmed numbers.", extra_json_schema={"anyOf": [_METRICS, {"type": "null"}]}
    )] = None
    primary_metric: Annotated[str | dict[str, Any] | None, Meta(
        description="As for confirm_baseline. When null: the confirmed one.", extra_json_schema=_PRIMARY_METRIC
    )] = None
    metric_directions: Annotated[dict[str, Any] | None, Meta(description="As for confirm_baseline.", extra_json_schema=_DIRECTIONS)] = None
    allow_path_change: Annotated[bool, Meta(description="Allow a different baseline_path.")] = False
    allow_protocol_breaking_change: Annotated[bool, Meta(description=(
        "Allow removed metrics, changed directions, another primary metric or another evaluation protocol."
    ))] = False
    overwrite_scope: Annotated[str, Meta(description="A label kept with the overwrite, e.g. full_refresh.")] = "full_refresh"
    supplementary_baselines: Annotated[list[dict[str, Any]] | None, Meta(
        description="Other baselines to keep beside it (kept as given).",
        extra_json_schema=_BASELINE_REFS,
    )] = None


class GetMethodScoreboard(Command):
    """The method scoreboard (no arguments but ``comment``)."""


class GetOptimizationFrontier(Command):
    """The optimisation frontier (no arguments but ``comment``)."""


class RecordMainExperiment(Command):
    run_id: Annotated[str, Meta(description="The run's id, e.g. \"main-001\".")]
    title: Annotated[str, Meta(description="One line. When empty: the run id.")] = ""
    metrics_summary: Annotated[dict[str, Any] | None, Meta(
        description="{metric_id: number}; this, metric_rows or both (agreeing).",
        extra_json_schema={"anyOf": [_METRICS, {"type": "null"}]},
    )] = None
    metric_rows: Annotated[list[dict[str, Any]] | None, Meta(
        description="Rows; other keys (split, seed ...) are kept; a metric in several rows needs metrics_summary.",
        extra_json_schema=_METRIC_ROWS,
    )] = None
    baseline_id: Annotated[str | None, Meta(description=(
        "The baseline compared. When null: the attached, else the last confirmed."
    ))] = None
    metric_directions: Annotated[dict[str, Any] | None, Meta(
        description="Per metric; must agree with the contract.", extra_json_schema=_DIRECTIONS
    )] = None
    evaluation_protocol: Annotated[dict[str, Any] | str | None, Meta(
        description="An object or a sentence; must equal the contract's protocol if both are given.",
    )] = None
    summary: Annotated[str | None, Meta(description="What the run showed.")] = None
    idea_id: Annotated[str | None, Meta(description="The idea tested. When null: the run branch's.")] = None
    branch: Annotated[str | None, Meta(description=(
        "When null: the one prepared for run_id, else the active run branch, else a new run/<run_id>."
    ))] = None
    details: Annotated[dict[str, Any] | None, Meta(
        description="Other JSON facts.",
        extra_json_schema=_OBJECT_OR_NULL,
    )] = None
    hypothesis: Annotated[str, Meta(description="What the run tested.")] = ""
    setup: Annotated[str, Meta(description="How it was set up.")] = ""
    execution: Annotated[str, Meta(description="What was run.")] = ""
    results: Annotated[str, Meta(description="What came out.")] = ""
    conclusion: Annotated[str, Meta(description="What it means. When empty: the progress verdict's reason.")] = ""
    evaluation_summary: Annotated[dict[str, Any] | None, Meta(
        description="The evaluation in short strings.",
        extra_json_schema=_EVALUATION_SUMMARY,
    )] = None
    evidence_paths: Annotated[list[str] | None, Meta(
        description="Files backing the result, relative to the run's worktree.",
        extra_json_schema=_STRINGS_OR_NULL,
    )] = None
    changed_files: Annotated[list[str] | None, Meta(description="Files the run changed.", extra_json_schema=_STRINGS_OR_NULL)] = None
    config_paths: Annotated[list[str] | None, Meta(description="Config files used.", extra_json_schema=_STRINGS_OR_NULL)] = None
    notes: Annotated[list[str] | None, Meta(description="Short notes.", extra_json_schema=_STRINGS_OR_NULL)] = None
    dataset_scope: Annotated[str, Meta(description="full | subset.")] = "full"
    verdict: Annotated[str, Meta(description=(
        "When empty: supported (a breakthrough), inconclusive (worse than the baseline) or recorded."
    ))] = ""
    status: Annotated[str, Meta(description="completed | failed | partial.")] = "completed"
    baseline_variant_id: Annotated[str | None, Meta(description="If given, must be the confirmed variant.")] = None
    metric_contract: Annotated[dict[str, Any] | None, Meta(description=(
        "Kept as given; comparisons use the confirmed baseline's contract."
    ), extra_json_schema=_OBJECT_OR_NULL)] = None


# A todo item's shape as the schema says it (the rest of its keys are free).
_TODO_ITEM = {"properties": {k: {"type": "string"} for k in ("slice_id", "item_id", "section_id")}}


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
    # The paper fields (a writing-facing campaign): ds_events/services/artifacts/campaign_paper.py.
    selected_outline_ref: Annotated[str | None, Meta(description=(
        "The selected paper outline this campaign supports (writing-facing campaigns). When null with paper fields: "
        "the selected outline."
    ))] = None
    research_questions: Annotated[list[str] | None, Meta(description="The outline's research questions it answers.")] = None
    experimental_designs: Annotated[list[str] | None, Meta(description="The outline's experimental designs it runs.")] = None
    todo_items: Annotated[list[Annotated[dict[str, Any], Meta(extra_json_schema=_TODO_ITEM)]] | None, Meta(description=(
        "[{slice_id, item_id (the outline item the slice resolves), section_id, claim_links, research_question, "
        "experimental_design, paper_role, ...}]."
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
    setup: Annotated[str, Meta(description="How the slice was set up.")] = ""
    execution: Annotated[str, Meta(description="What was run.")] = ""
    results: Annotated[str, Meta(description="What came out.")] = ""
    evidence_paths: Annotated[list[str] | None, Meta(description="Files that back the result.", extra_json_schema=_STRINGS_OR_NULL)] = None
    metric_rows: Annotated[list[dict[str, Any]] | None, Meta(
        description="[{\"metric_id\", \"value\", ...}] as for record_main_experiment.", extra_json_schema=_METRIC_ROWS
    )] = None
    evaluation_summary: Annotated[dict[str, Any] | None, Meta(
        description="As for record_main_experiment.", extra_json_schema=_EVALUATION_SUMMARY
    )] = None
    deviations: Annotated[list[str] | None, Meta(
        description="Where the slice departed from its plan.",
        extra_json_schema=_STRINGS_OR_NULL,
    )] = None
    claim_impact: Annotated[str | None, Meta(description="How it changes the paper's claims.")] = None
    reviewer_resolution: Annotated[str | None, Meta(description="Which reviewer concern it settles.")] = None
    manuscript_update_hint: Annotated[str | None, Meta(description="What to change in the draft.")] = None
    next_recommendation: Annotated[str | None, Meta(description="What to do next.")] = None
    dataset_scope: Annotated[str, Meta(description="full | subset (subset needs subset_approval_ref).")] = "full"
    subset_approval_ref: Annotated[str | None, Meta(description="The approval for a subset run.")] = None
    comparison_baselines: Annotated[list[dict[str, Any]] | None, Meta(
        description="Other baselines compared (kept as given).",
        extra_json_schema=_BASELINE_REFS,
    )] = None
