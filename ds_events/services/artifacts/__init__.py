"""The artifacts domain: records, baselines, main runs, analysis campaigns, the home
baseline registry, git checkpoints and branches, arXiv papers.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .arxiv import (
        DEFAULT_API_URL as DEFAULT_API_URL,
        MODES as MODES,
        Arxiv as Arxiv,
        ArxivResult as ArxivResult,
        Fetcher as Fetcher,
        api_url as api_url,
        normalise_paper_id as normalise_paper_id,
        parse_atom as parse_atom,
        read_arxiv as read_arxiv,
        read_paper as read_paper,
    )
    from .checkpoints import (
        BRANCH_KINDS as BRANCH_KINDS,
        append_recording as append_recording,
        checkpoint as checkpoint,
        git_graph as git_graph,
        prepare_branch as prepare_branch,
        render_git_graph as render_git_graph,
    )
    from .commands import (
        AttachBaseline as AttachBaseline,
        AttachBaselineResult as AttachBaselineResult,
        BranchResult as BranchResult,
        CampaignResult as CampaignResult,
        CampaignSlice as CampaignSlice,
        Checkpoint as Checkpoint,
        CheckpointResult as CheckpointResult,
        ConfirmBaseline as ConfirmBaseline,
        ConfirmBaselineResult as ConfirmBaselineResult,
        CreateAnalysisCampaign as CreateAnalysisCampaign,
        FrontierResult as FrontierResult,
        GetMethodScoreboard as GetMethodScoreboard,
        GetOptimizationFrontier as GetOptimizationFrontier,
        GitGraphResult as GitGraphResult,
        MainExperimentResult as MainExperimentResult,
        OverwriteBaseline as OverwriteBaseline,
        PaperResult as PaperResult,
        PrepareBranch as PrepareBranch,
        PublishBaseline as PublishBaseline,
        PublishBaselineResult as PublishBaselineResult,
        ReadArxiv as ReadArxiv,
        Record as Record,
        RecordAnalysisSlice as RecordAnalysisSlice,
        RecordMainExperiment as RecordMainExperiment,
        RecordResult as RecordResult,
        RefreshSummary as RefreshSummary,
        RenderGitGraph as RenderGitGraph,
        ScoreboardResult as ScoreboardResult,
        SliceResult as SliceResult,
        SummaryResult as SummaryResult,
        WaiveBaseline as WaiveBaseline,
        WaiveBaselineResult as WaiveBaselineResult,
    )
    from .listing import (
        ArtifactList as ArtifactList,
        BranchGraph as BranchGraph,
        GraphBranch as GraphBranch,
        GraphCommit as GraphCommit,
        branch_graph as branch_graph,
        list_artifacts as list_artifacts,
    )
    from .records import (
        SLICE_STATUSES as SLICE_STATUSES,
        attach_baseline as attach_baseline,
        complete_registry as complete_registry,
        confirm_baseline as confirm_baseline,
        create_analysis_campaign as create_analysis_campaign,
        method_scoreboard as method_scoreboard,
        open_registry as open_registry,
        optimization_frontier as optimization_frontier,
        overwrite_baseline as overwrite_baseline,
        publish_baseline as publish_baseline,
        record as record,
        record_analysis_slice as record_analysis_slice,
        record_main_experiment as record_main_experiment,
        refresh_summary as refresh_summary,
        registry_entry as registry_entry,
        registry_state as registry_state,
        unregistered_publications as unregistered_publications,
        waive_baseline as waive_baseline,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "Record", "RefreshSummary", "ReadArxiv", "Checkpoint", "PrepareBranch", "RenderGitGraph", "PublishBaseline",
        "AttachBaseline", "ConfirmBaseline", "RecordMainExperiment", "CreateAnalysisCampaign", "RecordAnalysisSlice",
        "WaiveBaseline", "OverwriteBaseline", "GetMethodScoreboard", "GetOptimizationFrontier", "RecordResult",
        "SummaryResult", "PaperResult", "CheckpointResult", "BranchResult", "GitGraphResult", "PublishBaselineResult",
        "AttachBaselineResult", "ConfirmBaselineResult", "MainExperimentResult", "CampaignSlice", "CampaignResult",
        "SliceResult", "WaiveBaselineResult", "ScoreboardResult", "FrontierResult",
    ),
    "checkpoints": (
        "BRANCH_KINDS", "checkpoint", "prepare_branch", "render_git_graph", "git_graph", "append_recording",
    ),
    "records": (
        "record", "publish_baseline", "registry_state", "unregistered_publications", "complete_registry",
        "attach_baseline", "confirm_baseline", "record_main_experiment", "create_analysis_campaign",
        "record_analysis_slice", "refresh_summary", "waive_baseline", "overwrite_baseline", "method_scoreboard",
        "optimization_frontier", "registry_entry", "open_registry", "SLICE_STATUSES",
    ),
    "arxiv": (
        "Fetcher", "DEFAULT_API_URL", "Arxiv", "ArxivResult", "api_url", "read_arxiv", "read_paper",
        "normalise_paper_id", "parse_atom", "MODES",
    ),
    "listing": ("ArtifactList", "BranchGraph", "GraphBranch", "GraphCommit", "list_artifacts", "branch_graph"),
})  # fmt: skip
