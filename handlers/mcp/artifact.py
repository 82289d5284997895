"""The `artifact` MCP namespace: quest records, git branches and checkpoints, baselines
and metric contracts, main experiments, analysis campaigns, summary, git graph, arXiv.

Thin adapters: each tool takes its command (``ds_events.services.artifacts.commands``)
and calls one service function. The interaction tools (``interact``,
``get_interaction``) are added by :mod:`handlers.mcp.artifact_interact`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ds_events.home import Quest
from ds_events.services import artifacts as service
from ds_events.services.artifacts import (
    Arxiv,
    ArxivResult,
    AttachBaseline,
    AttachBaselineResult,
    BranchResult,
    CampaignResult,
    Checkpoint,
    CheckpointResult,
    ConfirmBaseline,
    ConfirmBaselineResult,
    CreateAnalysisCampaign,
    FrontierResult,
    GetMethodScoreboard,
    GetOptimizationFrontier,
    GitGraphResult,
    MainExperimentResult,
    OverwriteBaseline,
    PrepareBranch,
    PublishBaseline,
    PublishBaselineResult,
    Record,
    RecordAnalysisSlice,
    RecordMainExperiment,
    RecordResult,
    RefreshSummary,
    RenderGitGraph,
    ScoreboardResult,
    SliceResult,
    SummaryResult,
    WaiveBaseline,
    WaiveBaselineResult,
    arxiv as arxiv_service,
    checkpoints as git_service,
)

from . import artifact_interact, artifact_paper, artifact_research
from .binding import QuestBinding
from .context import NamespaceState, ToolContext
from .namespace import Namespace, NamespaceServer
from .tools import READ_ONLY, writes

__all__ = ["build_server", "INSTRUCTIONS", "ArtifactState"]

INSTRUCTIONS = """\
Quest state: records, ideas, branches, checkpoints, baselines, experiments, analysis campaigns, the user.
Record what you decide and learn with `record`; branch the quest repository per idea or
run with `prepare_branch` (you get a worktree under .ds/worktrees/ and later
`checkpoint`s commit it); confirm the baseline and its metric contract with
`confirm_baseline` (or waive the gate with `waive_baseline`) before
`record_main_experiment`; split follow-up analysis into slices with
`create_analysis_campaign` and report each with `record_analysis_slice`;
`get_method_scoreboard` and `get_optimization_frontier` say where the results stand.
Errors are JSON objects with a stable `error` code and the details needed to fix the
call; when a call fails nothing was written."""


@dataclass
class ArtifactState(NamespaceState):
    """What the artifact tools share beyond the quest: the arXiv client, when one was
    given (tests give a fake; None: the arXiv API, reached only when a paper is fetched)."""

    arxiv_fetcher: arxiv_service.Fetcher | None = None


def build_server(binding: QuestBinding, *, arxiv_fetcher: arxiv_service.Fetcher | None = None) -> NamespaceServer[ArtifactState]:
    """The `artifact` server for ``binding``; ``arxiv_fetcher`` replaces the arXiv API client."""

    def open_state(_quest: Quest, _actor: str) -> ArtifactState:
        return ArtifactState(arxiv_fetcher=arxiv_fetcher)

    ns = Namespace("artifact", binding, instructions=INSTRUCTIONS, open_state=open_state)
    _records(ns)
    _git(ns)
    _baselines(ns)
    _campaigns(ns)
    _results(ns)
    artifact_interact.register(ns)
    artifact_research.register(ns)
    artifact_paper.register(ns)
    return ns.server()


def _records(ns: Namespace[ArtifactState]) -> None:
    @ns.tool(writes(destructive=False, idempotent=False))
    def record(tc: ToolContext[ArtifactState], cmd: Record) -> RecordResult:
        """Record a quest artifact; it is stored as artifacts/<kind dir>/<artifact_id>.json.
        A refused call changes nothing.

        Use it for every idea, decision, progress note, answer, milestone, run, report,
        approval or graph you want the quest to remember. What each kind needs is in the
        payload's schema: idea, milestone, baseline, graph need `title` (a report without
        one is titled from its summary's first line, else its report_type); decision
        needs `verdict`, `action` and `reason`; progress and answer need `message`; run
        needs `run_kind`; approval needs `verdict`. A decision with `next_anchor` (scout,
        baseline, idea, experiment, analysis-campaign, write, finalize, decision) also
        moves the quest to that stage, forward or back, with the decision's reason.

        Returns: artifact_id, kind, path, branch (the active branch), seq.

        Examples:
          record(payload={"kind": "idea", "title": "Label smoothing 0.1", "summary": "..."})
          record(payload={"kind": "decision", "verdict": "promising", "action": "launch_experiment",
                          "reason": "smoke run beat the baseline", "next_anchor": "experiment"})
        """
        return service.record(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))
    def refresh_summary(tc: ToolContext[ArtifactState], cmd: RefreshSummary) -> SummaryResult:
        """Refresh SUMMARY.md (rendered from the quest log) and return its markdown.
        A refused call changes nothing.

        Call it after a milestone or before handing over, with a short `reason`.
        Returns: path, markdown, seq.
        Example: refresh_summary(reason="main experiment recorded")
        """
        return service.refresh_summary(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))  # the first read adds the paper to the quest's library
    async def arxiv(tc: ToolContext[ArtifactState], cmd: Arxiv) -> ArxivResult:
        """Read an arXiv paper through the local cache (fetched once, then served offline),
        or list the quest's paper library.
        A refused call changes nothing.

        The first time this quest reads a paper it enters the quest's library.
        mode="read" (default): the paper with its full text (full_text=false: the overview
        only). mode="list" with paper_id: that paper's metadata and section titles;
        without paper_id: the library, newest first.

        Returns: ok, mode; for a paper: paper_id, title, authors, published, abstract,
        sections, cached, and when read in full text and section_texts; for the library:
        count and items (arxiv_id, title, authors, published, abstract, added_at). Without
        a network an uncached paper fails with `arxiv_offline`.
        Examples: arxiv(paper_id="1512.03385", mode="list")
                  arxiv(paper_id="1512.03385", full_text=True)
                  arxiv(mode="list")
        """
        from ..connectors.arxiv import ArxivApiFetcher  # loads aiohttp: only when a paper is fetched

        quest = await tc.quest_async()
        chosen = tc.state.arxiv_fetcher or ArxivApiFetcher(arxiv_service.api_url(quest.home))
        return await arxiv_service.read_arxiv(quest, cmd, chosen)


def _git(ns: Namespace[ArtifactState]) -> None:
    @ns.tool(writes(destructive=False, idempotent=False))
    def checkpoint(tc: ToolContext[ArtifactState], cmd: Checkpoint) -> CheckpointResult:
        """Commit the active worktree (the last branch you prepared), or the quest root.
        A refused call changes nothing.

        Never commits .ds/, virtual environments, caches (__pycache__, node_modules, ...),
        nested repositories or files above the configured size limit; they are listed in
        `skipped` with a reason. Fails with `nothing_to_commit` when nothing changed
        (unless allow_empty=true).

        Returns: sha, branch, parent, worktree, files, skipped, skipped_total, seq.
        Example: checkpoint(message="smoke run: training loop works")
        """
        return git_service.checkpoint(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))  # an existing branch is refused
    def prepare_branch(tc: ToolContext[ArtifactState], cmd: PrepareBranch) -> BranchResult:
        """Create a branch of the quest repository and (by default) a worktree for it.
        A refused call changes nothing.

        Names: run -> run/<run_id>; idea -> idea/<quest>-<idea_id>; analysis ->
        analysis/<idea_id>/<run_id>; paper -> paper/<run_id or idea_id>. The new worktree
        (under .ds/worktrees/) becomes the active one: checkpoint() commits it; work there.

        `create_worktree_flag` is accepted for create_worktree.

        Returns: branch, start_sha, start_point, worktree, worktree_path, active, seq, ok.
        Examples: prepare_branch(run_id="ls-0.1", idea_id="idea-0001")
                  prepare_branch(idea_id="idea-0002", branch_kind="idea", start_point="main")
        """
        return git_service.prepare_branch(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))
    def render_git_graph(tc: ToolContext[ArtifactState], cmd: RenderGitGraph) -> GitGraphResult:
        """Draw the quest's branch graph: JSON (branches, commits, lanes) and SVG.
        A refused call changes nothing.

        Also materialised as artifacts/graphs/git_graph.json and .svg.
        Returns: graph, svg, json_path, svg_path, seq.
        Example: render_git_graph()
        """
        return git_service.render_git_graph(tc.quest, cmd)


def _baselines(ns: Namespace[ArtifactState]) -> None:
    @ns.tool(writes(destructive=False, idempotent=True))  # an id is published once; a retry completes a half-done one
    def publish_baseline(tc: ToolContext[ArtifactState], cmd: PublishBaseline) -> PublishBaselineResult:
        """Register a baseline in the quest and in the home's baseline registry, so this
        quest and the home's other quests can attach and confirm it.
        A refused call changes nothing.

        The payload may carry what confirm_baseline would otherwise need: metrics_summary,
        primary_metric (an id or {metric_id, value}), metric_contract, summary, and
        variants (ids or {variant_id, metrics_summary}; `baseline_variants` is the same),
        default_variant_id. `name` stands for `title`.

        Returns: baseline_id, variant_ids, path, seq, baseline_registry_entry, ok.
        Example: publish_baseline(payload={"baseline_id": "resnet20", "name": "ResNet-20 (He et al.)",
                                           "baseline_variants": [{"variant_id": "cifar10"}],
                                           "metrics_summary": {"top1": 0.916}, "primary_metric": "top1"})
        """
        return service.publish_baseline(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=True))
    def attach_baseline(tc: ToolContext[ArtifactState], cmd: AttachBaseline) -> AttachBaselineResult:
        """Choose a published baseline (and variant) as the reference for main experiments:
        one published in this quest, else one of the home's registry.
        A refused call changes nothing.

        Returns: baseline_id, variant_id, confirmed, seq, attachment, ok.
        Example: attach_baseline(baseline_id="resnet20", variant_id="cifar10")
        """
        return service.attach_baseline(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def confirm_baseline(tc: ToolContext[ArtifactState], cmd: ConfirmBaseline) -> ConfirmBaselineResult:
        """Confirm a baseline's numbers and its metric contract (the yardstick for runs).
        A refused call changes nothing.

        The canonical contract is written to <baseline_path>/json/metric_contract.json.
        Every metric needs a description, a derivation or origin_path, and a source_ref.
        Left out, the contract, metrics_summary, primary_metric and summary come from the
        published or attached baseline. primary_metric: "top1" or {"metric_id": "top1",
        "value": 0.916}. Directions: higher/lower (higher_better, lower_better, maximize,
        minimize also understood). Opens the baseline gate and moves the quest from the
        baseline stage to idea (auto_advance).

        Returns: baseline_id, variant_id, contract_path, metric_ids, primary_metric,
        metric_directions, seq, baseline_gate, confirmed_baseline_ref,
        metric_contract_json_path, ok.
        Example: confirm_baseline(baseline_path="baselines/resnet20", baseline_id="resnet20",
          metric_contract={"metrics": {"top1": {"description": "top-1 accuracy on the test set",
          "derivation": "correct / 10000", "source_ref": "He et al. 2016, Table 6"}},
          "evaluation_protocol": {"split": "test"}}, metrics_summary={"top1": 0.916},
          primary_metric="top1")
        """
        return service.confirm_baseline(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def record_main_experiment(tc: ToolContext[ArtifactState], cmd: RecordMainExperiment) -> MainExperimentResult:
        """Record a main experiment against the confirmed baseline's metric contract.
        A refused call changes nothing.

        Metrics come as metrics_summary {id: number}, as metric_rows [{metric_id, value}],
        or both (agreeing). Every baseline metric id must be there (extras are fine). On
        failure nothing is recorded and the error lists `missing_metric_ids`,
        `baseline_metric_ids`, `baseline_metric_details`, `direction_mismatches` or
        `evaluation_protocol_mismatch`. With the gate waived (waive_baseline) the run is
        recorded without a comparison. An evaluation_protocol given as a sentence is kept
        as {"description": ...}. The narrative (hypothesis, setup, execution,
        results, conclusion), evaluation_summary and evidence_paths are kept and shown
        on the run's page (artifacts/runs/<run_id>.md) beside its JSON. The run lands on
        its branch: the one prepared for run_id, else the active run branch, else
        run/<run_id> made at the active branch's head.

        Returns: run_id, baseline_id, branch, head_sha, primary (baseline, value, delta,
        better), comparisons, extra_metric_ids, path, seq, run_md_path, result_json_path,
        metrics_summary, progress_eval (breakthrough, breakthrough_level, beats_baseline,
        delta_vs_baseline, ...), evaluation_summary, verdict, ok.
        Examples: record_main_experiment(run_id="ls-0.1", title="Label smoothing 0.1",
                                         metrics_summary={"top1": 0.921, "nll": 0.30})
                  record_main_experiment(run_id="ls-0.2", metric_rows=[{"metric_id": "top1", "value": 0.93}],
                                         hypothesis="...", conclusion="...",
                                         evaluation_summary={"takeaway": "...", "next_action": "analysis_campaign"})
        """
        return service.record_main_experiment(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def waive_baseline(tc: ToolContext[ArtifactState], cmd: WaiveBaseline) -> WaiveBaselineResult:
        """Open the baseline gate without a baseline, with a written reason.
        A refused call changes nothing.

        Use it only when no comparable baseline can exist (a new task, no prior method).
        Main experiments are then recorded without a comparison. Refused
        (`baseline_already_confirmed`) once a baseline is confirmed.

        Returns: baseline_gate ("waived"), reason, anchor, seq, ok.
        Example: waive_baseline(reason="new benchmark: no published method to compare with")
        """
        return service.waive_baseline(tc.quest, cmd)

    @ns.tool(writes(destructive=True, idempotent=False))  # replaces the confirmed numbers and contract
    def overwrite_baseline(tc: ToolContext[ArtifactState], cmd: OverwriteBaseline) -> ConfirmBaselineResult:
        """Refresh the confirmed baseline in place: new numbers, an added metric, another variant.
        A refused call changes nothing.

        What you leave out is kept from the confirmation. A change that breaks comparison
        with recorded runs (a metric removed, a direction, the primary metric or the
        evaluation protocol changed) is refused with `protocol_breaking_change` unless
        allow_protocol_breaking_change=true; a new baseline_path needs allow_path_change.

        Returns: what confirm_baseline returns, plus overwrite (change_summary,
        compatibility_verdict, risk_level, added_metric_ids, ...) and compatibility_verdict.
        Example: overwrite_baseline(change_summary="add the f1 metric",
                                    metrics_summary={"top1": 0.916, "nll": 0.31, "f1": 0.9},
                                    metric_contract={...the contract with f1...})
        """
        return service.overwrite_baseline(tc.quest, cmd)


def _campaigns(ns: Namespace[ArtifactState]) -> None:
    @ns.tool(writes(destructive=False, idempotent=False))
    def create_analysis_campaign(tc: ToolContext[ArtifactState], cmd: CreateAnalysisCampaign) -> CampaignResult:
        """Split follow-up analysis into slices, each a child branch with its own worktree.
        A refused call changes nothing.

        Slices branch from the result node: parent_run_id's branch head, else the latest
        main experiment's, else the active branch. A one-slice campaign is fine.

        Returns: campaign_id, parent_run_id, parent_branch, parent_sha, slices (with branch
        analysis/<idea>/<campaign_id>-<slice_id>, worktree, worktree_path), path, seq.
        Example: create_analysis_campaign(campaign_title="Why does LS help?",
          campaign_goal="isolate the calibration effect",
          slices=[{"slice_id": "no-aug", "title": "without augmentation"}])
        """
        return service.create_analysis_campaign(tc.quest, cmd)

    @ns.tool(writes(destructive=False, idempotent=False))
    def record_analysis_slice(tc: ToolContext[ArtifactState], cmd: RecordAnalysisSlice) -> SliceResult:
        """Report one analysis slice's outcome (checkpoint its worktree first).
        A refused call changes nothing.

        Metrics as metrics_summary or metric_rows [{metric_id, value}]; setup, execution,
        results, evidence_paths, evaluation_summary, deviations, claim_impact,
        next_recommendation ... are kept with the slice (dataset_scope="subset" needs
        subset_approval_ref).

        Returns: campaign_id, slice_id, status, branch, head_sha, remaining_slice_ids,
        campaign_complete (also as `completed`), next_slice, metrics_summary,
        evaluation_summary, path, seq, ok.
        Example: record_analysis_slice(campaign_id="campaign-001", slice_id="no-aug",
                                       metrics_summary={"top1": 0.90}, summary="LS still helps")
        """
        return service.record_analysis_slice(tc.quest, cmd)


def _results(ns: Namespace[ArtifactState]) -> None:
    @ns.tool(READ_ONLY)
    def get_method_scoreboard(tc: ToolContext[ArtifactState], cmd: GetMethodScoreboard) -> ScoreboardResult:
        """The quest's research lines (one per idea) with their main runs, each line's best
        run on the primary metric, and the incumbent: the best line by the metric's direction.
        Read-only.

        Returns: scoreboard {primary_metric, direction, entry_count, incumbent_line_key,
        incumbent_title, entries [{line_key, idea_id, title, branch, status, run_count,
        latest_run_id, best_run_id, best_value, delta_vs_baseline, breakthrough, incumbent}]}, ok.
        Example: get_method_scoreboard()
        """
        return service.method_scoreboard(tc.quest, cmd)

    @ns.tool(READ_ONLY)
    def get_optimization_frontier(tc: ToolContext[ArtifactState], cmd: GetOptimizationFrontier) -> FrontierResult:
        """Where optimization stands and what to do next.
        Read-only.

        Returns: optimization_frontier {mode (explore | exploit | fusion | stop),
        frontier_reason, best_run, best_branch, top_branches, candidate_briefs (ideas not
        yet on a branch), implementation_candidates (report records with
        report_type="optimization_candidate"), candidate_backlog, stagnant_branches,
        fusion_candidates, recommended_next_actions}, ok.
        Example: get_optimization_frontier()
        """
        return service.optimization_frontier(tc.quest, cmd)
