"""The artifacts domain: records, baselines and their confirmation, main experiments,
analysis campaigns, the home baseline registry, git checkpoints and branches, arXiv
papers.

``commands`` and ``results`` are the domain's contract: the commands its MCP tools, HTTP
routes and CLI commands take, and the answers they return. The verbs live in the modules
beside them, one concept each (``records``, ``baselines``, ``confirmations``,
``experiments``, ``campaigns``, ``queries``, ``listing``, ``registry``, ``checkpoints``,
``arxiv``), and are re-exported here; ``errors`` catalogues the codes they raise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .arxiv import (
        DEFAULT_API_URL as DEFAULT_API_URL,
        MODES as MODES,
        Fetcher as Fetcher,
        api_url as api_url,
        normalise_paper_id as normalise_paper_id,
        parse_atom as parse_atom,
        read_arxiv as read_arxiv,
        read_paper as read_paper,
    )
    from .baselines import (
        attach_baseline as attach_baseline,
        publish_baseline as publish_baseline,
        waive_baseline as waive_baseline,
    )
    from .campaigns import (
        SLICE_STATUSES as SLICE_STATUSES,
        create_analysis_campaign as create_analysis_campaign,
        record_analysis_slice as record_analysis_slice,
    )
    from .checkpoints import (
        BRANCH_KINDS as BRANCH_KINDS,
        append_recording as append_recording,
        checkpoint as checkpoint,
        git_graph as git_graph,
        prepare_branch as prepare_branch,
        render_git_graph as render_git_graph,
        undo_unrecorded_checkpoints as undo_unrecorded_checkpoints,
    )
    from .commands import (
        Arxiv as Arxiv,
        AttachBaseline as AttachBaseline,
        Checkpoint as Checkpoint,
        ConfirmBaseline as ConfirmBaseline,
        CreateAnalysisCampaign as CreateAnalysisCampaign,
        GetMethodScoreboard as GetMethodScoreboard,
        GetOptimizationFrontier as GetOptimizationFrontier,
        OverwriteBaseline as OverwriteBaseline,
        PrepareBranch as PrepareBranch,
        PublishBaseline as PublishBaseline,
        ReadArxiv as ReadArxiv,
        Record as Record,
        RecordAnalysisSlice as RecordAnalysisSlice,
        RecordMainExperiment as RecordMainExperiment,
        RefreshSummary as RefreshSummary,
        RenderGitGraph as RenderGitGraph,
        WaiveBaseline as WaiveBaseline,
    )
    from .confirmations import (
        confirm_baseline as confirm_baseline,
        overwrite_baseline as overwrite_baseline,
    )
    from .experiments import (
        record_main_experiment as record_main_experiment,
    )
    from .listing import (
        ArtifactList as ArtifactList,
        BranchGraph as BranchGraph,
        GraphBranch as GraphBranch,
        GraphCommit as GraphCommit,
        branch_graph as branch_graph,
        list_artifacts as list_artifacts,
    )
    from .queries import (
        method_scoreboard as method_scoreboard,
        optimization_frontier as optimization_frontier,
    )
    from .records import (
        record as record,
        refresh_summary as refresh_summary,
    )
    from .registry import (
        complete_registry as complete_registry,
        open_registry as open_registry,
        registry_entry as registry_entry,
        registry_state as registry_state,
        unregistered_publications as unregistered_publications,
    )
    from .results import (
        ArxivResult as ArxivResult,
        AttachBaselineResult as AttachBaselineResult,
        BranchResult as BranchResult,
        CampaignResult as CampaignResult,
        CampaignSlice as CampaignSlice,
        CheckpointResult as CheckpointResult,
        ConfirmBaselineResult as ConfirmBaselineResult,
        FrontierResult as FrontierResult,
        GitGraphResult as GitGraphResult,
        MainExperimentResult as MainExperimentResult,
        PaperResult as PaperResult,
        PublishBaselineResult as PublishBaselineResult,
        RecordResult as RecordResult,
        ScoreboardResult as ScoreboardResult,
        SliceResult as SliceResult,
        SummaryResult as SummaryResult,
        WaiveBaselineResult as WaiveBaselineResult,
    )

__all__, __getattr__ = lazy_exports(__name__, {
    "commands": (
        "Record", "RefreshSummary", "Arxiv", "ReadArxiv", "Checkpoint", "PrepareBranch", "RenderGitGraph",
        "PublishBaseline", "AttachBaseline", "ConfirmBaseline", "RecordMainExperiment", "CreateAnalysisCampaign",
        "RecordAnalysisSlice", "WaiveBaseline", "OverwriteBaseline", "GetMethodScoreboard", "GetOptimizationFrontier",
    ),
    "results": (
        "RecordResult", "SummaryResult", "PaperResult", "ArxivResult", "CheckpointResult", "BranchResult",
        "GitGraphResult", "PublishBaselineResult", "AttachBaselineResult", "ConfirmBaselineResult",
        "MainExperimentResult", "CampaignSlice", "CampaignResult", "SliceResult", "WaiveBaselineResult",
        "ScoreboardResult", "FrontierResult",
    ),
    "records": (
        "record", "refresh_summary",
    ),
    "baselines": (
        "publish_baseline", "attach_baseline", "waive_baseline",
    ),
    "confirmations": (
        "confirm_baseline", "overwrite_baseline",
    ),
    "experiments": (
        "record_main_experiment",
    ),
    "campaigns": (
        "create_analysis_campaign", "record_analysis_slice", "SLICE_STATUSES",
    ),
    "queries": (
        "method_scoreboard", "optimization_frontier",
    ),
    "listing": (
        "ArtifactList", "BranchGraph", "GraphBranch", "GraphCommit", "list_artifacts", "branch_graph",
    ),
    "registry": (
        "open_registry", "registry_state", "registry_entry", "unregistered_publications", "complete_registry",
    ),
    "checkpoints": (
        "BRANCH_KINDS", "checkpoint", "prepare_branch", "render_git_graph", "git_graph", "append_recording",
        "undo_unrecorded_checkpoints",
    ),
    "arxiv": (
        "Fetcher", "DEFAULT_API_URL", "api_url", "read_arxiv", "read_paper", "normalise_paper_id", "parse_atom",
        "MODES",
    ),
})
