"""The artifacts domain: records, baselines and their confirmation, main experiments,
analysis campaigns, the home baseline registry, git checkpoints and branches, arXiv
papers.

``commands`` and ``results`` are the domain's contract: the commands its MCP tools, HTTP
routes and CLI commands take, and the answers they return. The verbs live in the modules
beside them, one concept each (``records``, ``baselines``, ``confirmations``,
``experiments``, ``campaigns``, ``queries``, ``listing``, ``registry``, ``checkpoints``,
``arxiv``),
and are re-exported here; ``errors`` catalogues the codes they raise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ds_events.services import lazy_exports

if TYPE_CHECKING:
    from .arxiv import (
        DEFAULT_API_URL as DEFAULT_API_URL,
    )
    from .arxiv import (
        MODES as MODES,
    )
    from .arxiv import (
        Fetcher as Fetcher,
    )
    from .arxiv import (
        api_url as api_url,
    )
    from .arxiv import (
        normalise_paper_id as normalise_paper_id,
    )
    from .arxiv import (
        parse_atom as parse_atom,
    )
    from .arxiv import (
        read_arxiv as read_arxiv,
    )
    from .arxiv import (
        read_paper as read_paper,
    )
    from .baselines import (
        attach_baseline as attach_baseline,
    )
    from .baselines import (
        publish_baseline as publish_baseline,
    )
    from .baselines import (
        waive_baseline as waive_baseline,
    )
    from .campaigns import (
        SLICE_STATUSES as SLICE_STATUSES,
    )
    from .campaigns import (
        create_analysis_campaign as create_analysis_campaign,
    )
    from .campaigns import (
        record_analysis_slice as record_analysis_slice,
    )
    from .checkpoints import (
        BRANCH_KINDS as BRANCH_KINDS,
    )
    from .checkpoints import (
        append_recording as append_recording,
    )
    from .checkpoints import (
        checkpoint as checkpoint,
    )
    from .checkpoints import (
        git_graph as git_graph,
    )
    from .checkpoints import (
        prepare_branch as prepare_branch,
    )
    from .checkpoints import (
        render_git_graph as render_git_graph,
    )
    from .commands import (
        Arxiv as Arxiv,
    )
    from .commands import (
        AttachBaseline as AttachBaseline,
    )
    from .commands import (
        Checkpoint as Checkpoint,
    )
    from .commands import (
        ConfirmBaseline as ConfirmBaseline,
    )
    from .commands import (
        CreateAnalysisCampaign as CreateAnalysisCampaign,
    )
    from .commands import (
        GetMethodScoreboard as GetMethodScoreboard,
    )
    from .commands import (
        GetOptimizationFrontier as GetOptimizationFrontier,
    )
    from .commands import (
        OverwriteBaseline as OverwriteBaseline,
    )
    from .commands import (
        PrepareBranch as PrepareBranch,
    )
    from .commands import (
        PublishBaseline as PublishBaseline,
    )
    from .commands import (
        ReadArxiv as ReadArxiv,
    )
    from .commands import (
        Record as Record,
    )
    from .commands import (
        RecordAnalysisSlice as RecordAnalysisSlice,
    )
    from .commands import (
        RecordMainExperiment as RecordMainExperiment,
    )
    from .commands import (
        RefreshSummary as RefreshSummary,
    )
    from .commands import (
        RenderGitGraph as RenderGitGraph,
    )
    from .commands import (
        WaiveBaseline as WaiveBaseline,
    )
    from .confirmations import (
        confirm_baseline as confirm_baseline,
    )
    from .confirmations import (
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
        optimization_frontier as optimization_frontier,
    )
    from .records import (
        record as record,
    )
    from .records import (
        refresh_summary as refresh_summary,
    )
    from .registry import (
        complete_registry as complete_registry,
    )
    from .registry import (
        open_registry as open_registry,
    )
    from .registry import (
        registry_entry as registry_entry,
    )
    from .registry import (
        registry_state as registry_state,
    )
    from .registry import (
        unregistered_publications as unregistered_publications,
    )
    from .results import (
        ArxivResult as ArxivResult,
    )
    from .results import (
        AttachBaselineResult as AttachBaselineResult,
    )
    from .results import (
        BranchResult as BranchResult,
    )
    from .results import (
        CampaignResult as CampaignResult,
    )
    from .results import (
        CampaignSlice as CampaignSlice,
    )
    from .results import (
        CheckpointResult as CheckpointResult,
    )
    from .results import (
        ConfirmBaselineResult as ConfirmBaselineResult,
    )
    from .results import (
        FrontierResult as FrontierResult,
    )
    from .results import (
        GitGraphResult as GitGraphResult,
    )
    from .results import (
        MainExperimentResult as MainExperimentResult,
    )
    from .results import (
        PaperResult as PaperResult,
    )
    from .results import (
        PublishBaselineResult as PublishBaselineResult,
    )
    from .results import (
        RecordResult as RecordResult,
    )
    from .results import (
        ScoreboardResult as ScoreboardResult,
    )
    from .results import (
        SliceResult as SliceResult,
    )
    from .results import (
        SummaryResult as SummaryResult,
    )
    from .results import (
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
    "listing": (
        "ArtifactList", "BranchGraph", "GraphBranch", "GraphCommit", "list_artifacts", "branch_graph",
    ),
    "queries": (
        "method_scoreboard", "optimization_frontier",
    ),
    "registry": (
        "open_registry", "registry_state", "registry_entry", "unregistered_publications", "complete_registry",
    ),
    "checkpoints": (
        "BRANCH_KINDS", "checkpoint", "prepare_branch", "render_git_graph", "git_graph", "append_recording",
    ),
    "arxiv": (
        "Fetcher", "DEFAULT_API_URL", "api_url", "read_arxiv", "read_paper", "normalise_paper_id", "parse_atom",
        "MODES",
    ),
})
