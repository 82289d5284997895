"""The artifacts domain: records, baselines, main runs, analysis campaigns, the home baseline registry, git checkpoints and branches, arXiv papers.

``commands`` is the domain's contract: the commands and results its MCP tools, HTTP
routes and CLI commands take and return. The verbs live in the modules beside it and
are re-exported here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .commands import (
        Record as Record,
        RefreshSummary as RefreshSummary,
        ReadArxiv as ReadArxiv,
        Checkpoint as Checkpoint,
        PrepareBranch as PrepareBranch,
        RenderGitGraph as RenderGitGraph,
        PublishBaseline as PublishBaseline,
        AttachBaseline as AttachBaseline,
        ConfirmBaseline as ConfirmBaseline,
        RecordMainExperiment as RecordMainExperiment,
        CreateAnalysisCampaign as CreateAnalysisCampaign,
        RecordAnalysisSlice as RecordAnalysisSlice,
        WaiveBaseline as WaiveBaseline,
        OverwriteBaseline as OverwriteBaseline,
        GetMethodScoreboard as GetMethodScoreboard,
        GetOptimizationFrontier as GetOptimizationFrontier,
        RecordResult as RecordResult,
        SummaryResult as SummaryResult,
        PaperResult as PaperResult,
        CheckpointResult as CheckpointResult,
        BranchResult as BranchResult,
        GitGraphResult as GitGraphResult,
        PublishBaselineResult as PublishBaselineResult,
        AttachBaselineResult as AttachBaselineResult,
        ConfirmBaselineResult as ConfirmBaselineResult,
        MainExperimentResult as MainExperimentResult,
        CampaignSlice as CampaignSlice,
        CampaignResult as CampaignResult,
        SliceResult as SliceResult,
        WaiveBaselineResult as WaiveBaselineResult,
        ScoreboardResult as ScoreboardResult,
        FrontierResult as FrontierResult,
    )
    from .checkpoints import (
        BRANCH_KINDS as BRANCH_KINDS,
        checkpoint as checkpoint,
        prepare_branch as prepare_branch,
        render_git_graph as render_git_graph,
        git_graph as git_graph,
        append_recording as append_recording,
    )
    from .records import (
        record as record,
        publish_baseline as publish_baseline,
        registry_state as registry_state,
        unregistered_publications as unregistered_publications,
        complete_registry as complete_registry,
        attach_baseline as attach_baseline,
        confirm_baseline as confirm_baseline,
        record_main_experiment as record_main_experiment,
        create_analysis_campaign as create_analysis_campaign,
        record_analysis_slice as record_analysis_slice,
        refresh_summary as refresh_summary,
        waive_baseline as waive_baseline,
        overwrite_baseline as overwrite_baseline,
        method_scoreboard as method_scoreboard,
        optimization_frontier as optimization_frontier,
        registry_entry as registry_entry,
        open_registry as open_registry,
        SLICE_STATUSES as SLICE_STATUSES,
    )
    from .arxiv import (
        Fetcher as Fetcher,
        DEFAULT_API_URL as DEFAULT_API_URL,
        Arxiv as Arxiv,
        ArxivResult as ArxivResult,
        api_url as api_url,
        read_arxiv as read_arxiv,
        read_paper as read_paper,
        normalise_paper_id as normalise_paper_id,
        parse_atom as parse_atom,
        MODES as MODES,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": ("Record", "RefreshSummary", "ReadArxiv", "Checkpoint", "PrepareBranch", "RenderGitGraph", "PublishBaseline", "AttachBaseline", "ConfirmBaseline", "RecordMainExperiment", "CreateAnalysisCampaign", "RecordAnalysisSlice", "WaiveBaseline", "OverwriteBaseline", "GetMethodScoreboard", "GetOptimizationFrontier", "RecordResult", "SummaryResult", "PaperResult", "CheckpointResult", "BranchResult", "GitGraphResult", "PublishBaselineResult", "AttachBaselineResult", "ConfirmBaselineResult", "MainExperimentResult", "CampaignSlice", "CampaignResult", "SliceResult", "WaiveBaselineResult", "ScoreboardResult", "FrontierResult"),
    "checkpoints": ("BRANCH_KINDS", "checkpoint", "prepare_branch", "render_git_graph", "git_graph", "append_recording"),
    "records": ("record", "publish_baseline", "registry_state", "unregistered_publications", "complete_registry", "attach_baseline", "confirm_baseline", "record_main_experiment", "create_analysis_campaign", "record_analysis_slice", "refresh_summary", "waive_baseline", "overwrite_baseline", "method_scoreboard", "optimization_frontier", "registry_entry", "open_registry", "SLICE_STATUSES"),
    "arxiv": ("Fetcher", "DEFAULT_API_URL", "Arxiv", "ArxivResult", "api_url", "read_arxiv", "read_paper", "normalise_paper_id", "parse_atom", "MODES"),
})
