"""The `artifact` MCP namespace: quest records, git branches and checkpoints, baselines
and metric contracts, main experiments, analysis campaigns, summary, git graph, arXiv.

Thin adapters over :mod:`ds_events.services.artifacts`, :mod:`ds_events.services.git`
and :mod:`ds_events.artifacts.arxiv`. The interaction tools (``interact`` ...) are added
by :mod:`handlers.mcp.artifact_interact`.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from ds_events.artifacts.arxiv import Fetcher, read_paper
from ds_events.services import artifacts as service
from ds_events.services import git as git_service

from . import artifact_interact
from .common import QuestBinding, ToolContext, new_server, tool_context, tool_errors

__all__ = ["build_server", "INSTRUCTIONS"]

# Free-form JSON arguments are typed Any on purpose: the services validate them and a
# wrong shape then gets our structured error code rather than a generic schema error.
INSTRUCTIONS = """\
Quest state for a research agent. Record what you decide and learn with `record`; branch
the quest repository per idea or run with `prepare_branch` (you get a worktree under
.ds/worktrees/ and later `checkpoint`s commit it); confirm the baseline and its metric
contract with `confirm_baseline` before `record_main_experiment`; split follow-up analysis
into slices with `create_analysis_campaign` and report each with `record_analysis_slice`.
Errors are JSON objects with a stable `error` code and the details needed to fix the call;
when a call fails nothing was written."""

Result = dict[str, Any]


def build_server(binding: QuestBinding, *, arxiv_fetcher: Fetcher | None = None) -> MCPServer[ToolContext]:
    """The `artifact` server for ``binding``; ``arxiv_fetcher`` replaces the arXiv API client."""

    def setup(ctx: ToolContext) -> None:
        ctx.extra["arxiv_fetcher"] = arxiv_fetcher

    server = new_server("artifact", binding, instructions=INSTRUCTIONS, setup=setup)
    _register_records(server)
    _register_git(server)
    _register_baselines(server)
    _register_campaigns(server)
    artifact_interact.register(server)
    return server


def _register_records(server: MCPServer[ToolContext]) -> None:
    @server.tool()
    @tool_errors
    async def record(ctx: Context, payload: Any) -> Result:  # type: ignore[type-arg]
        """Record a quest artifact; it is stored as artifacts/<kind dir>/<artifact_id>.json.

        Use it for every idea, decision, progress note, answer, milestone, run, report,
        approval or graph you want the quest to remember.

        Args:
          payload: an object with `kind` and the fields that kind needs:
            idea, milestone, report, baseline, graph: `title`;
            decision: `verdict`, `action` (continue, launch_experiment,
              launch_analysis_campaign, prepare_branch, attach_baseline, confirm_baseline,
              reuse_baseline, revise_idea, write, finalize, request_user_decision, stop), `reason`;
            progress, answer: `message`;
            run: `run_kind` (e.g. "smoke", "training", "evaluation");
            approval: `verdict` (approved, rejected, changes_requested).
            Optional everywhere: `artifact_id` (else `<kind>-NNNN`), `summary`, `idea_id`,
            `run_id`, `paths` (files inside the quest), and any other JSON fields.

        Returns: artifact_id, kind, path, branch (the active branch), seq.

        Examples:
          record({"kind": "idea", "title": "Label smoothing 0.1", "summary": "..."})
          record({"kind": "decision", "verdict": "promising", "action": "launch_experiment",
                  "reason": "smoke run beat the baseline"})
        """
        return service.record(tool_context(ctx).quest, payload)

    @server.tool()
    @tool_errors
    async def refresh_summary(ctx: Context, reason: str | None = None) -> Result:  # type: ignore[type-arg]
        """Refresh SUMMARY.md (rendered from the quest log) and return its markdown.

        Call it after a milestone or before handing over, with a short `reason`.
        Returns: path, markdown, seq.
        Example: refresh_summary(reason="main experiment recorded")
        """
        return service.refresh_summary(tool_context(ctx).quest, reason)

    @server.tool()
    @tool_errors
    async def arxiv(ctx: Context, paper_id: str, mode: str = "read") -> Result:  # type: ignore[type-arg]
        """Read an arXiv paper through the local cache (fetched once, then served offline).

        Args:
          paper_id: e.g. "2401.01234", "2401.01234v2", "hep-th/9901001", "arXiv:2401.01234".
          mode: "list" for metadata and section titles, "read" (default) for the abstract
            and full text as well.
        Returns: paper_id, title, authors, published, abstract, sections, cached, and with
        mode="read" text and section_texts. Without a network an uncached paper fails with
        `arxiv_offline`.
        Example: arxiv(paper_id="1512.03385", mode="list")
        """
        tc = tool_context(ctx)
        return await read_paper(tc.home, paper_id, mode, tc.extra.get("arxiv_fetcher"))


def _register_git(server: MCPServer[ToolContext]) -> None:
    @server.tool()
    @tool_errors
    async def checkpoint(ctx: Context, message: str, allow_empty: bool = False, branch: str | None = None) -> Result:  # type: ignore[type-arg]
        """Commit the active worktree (the last branch you prepared), or the quest root.

        Never commits .ds/, virtual environments, caches (__pycache__, node_modules, ...),
        nested repositories or files above the configured size limit; they are listed in
        `skipped` with a reason. Fails with `nothing_to_commit` when nothing changed
        (unless allow_empty=true).

        Args:
          message: the commit message.
          allow_empty: commit even when the tree did not change.
          branch: commit this prepared branch's worktree instead ("main" = the quest root).
        Returns: sha, branch, parent, worktree, files, skipped, skipped_total, seq.
        Example: checkpoint(message="smoke run: training loop works")
        """
        return git_service.checkpoint(tool_context(ctx).quest, message, allow_empty=allow_empty, branch=branch)

    @server.tool()
    @tool_errors
    async def prepare_branch(  # type: ignore[no-untyped-def]
        ctx: Context,  # type: ignore[type-arg]
        run_id: str | None = None,
        idea_id: str | None = None,
        branch: str | None = None,
        branch_kind: str = "run",
        create_worktree: bool = True,
        start_point: str | None = None,
    ) -> Result:
        """Create a branch of the quest repository and (by default) a worktree for it.

        Names: run -> run/<run_id>; idea -> idea/<quest>-<idea_id>; analysis ->
        analysis/<idea_id>/<run_id>; paper -> paper/<run_id or idea_id>. An explicit
        `branch` must start with "<branch_kind>/". The new worktree (under .ds/worktrees/)
        becomes the active one: checkpoint() commits it; work there.

        Args:
          run_id, idea_id: ids (letters, digits, '.', '_', '-').
          branch: an explicit name instead of the scheme.
          branch_kind: run (default), idea, analysis, paper.
          create_worktree: false to create the branch only.
          start_point: branch or commit to start from (default: the active branch).
        Returns: branch, start_sha, start_point, worktree, worktree_path, active, seq.
        Examples: prepare_branch(run_id="ls-0.1", idea_id="idea-0001")
                  prepare_branch(idea_id="idea-0002", branch_kind="idea", start_point="main")
        """
        return git_service.prepare_branch(
            tool_context(ctx).quest,
            run_id=run_id,
            idea_id=idea_id,
            branch=branch,
            branch_kind=branch_kind,
            create_worktree=create_worktree,
            start_point=start_point,
        )

    @server.tool()
    @tool_errors
    async def render_git_graph(ctx: Context, max_commits: int = 200) -> Result:  # type: ignore[type-arg]
        """Draw the quest's branch graph: JSON (branches, commits, lanes) and SVG.

        Also materialised as artifacts/graphs/git_graph.json and .svg.
        Returns: graph, svg, json_path, svg_path, seq.
        Example: render_git_graph()
        """
        return git_service.render_git_graph(tool_context(ctx).quest, max_commits=max_commits)


def _register_baselines(server: MCPServer[ToolContext]) -> None:
    @server.tool()
    @tool_errors
    async def publish_baseline(ctx: Context, payload: Any) -> Result:  # type: ignore[type-arg]
        """Register a baseline in the quest so it can be attached and confirmed.

        Args:
          payload: `baseline_id`, `title`; optional `variants` (ids or objects with
            `variant_id`), `baseline_path` (inside the quest), `metrics_summary`
            (flat {metric_id: number}), `source`, `summary`, any other JSON fields.
        Returns: baseline_id, variant_ids, path, seq.
        Example: publish_baseline({"baseline_id": "resnet20", "title": "ResNet-20 (He et al.)",
                                   "variants": ["cifar10"]})
        """
        return service.publish_baseline(tool_context(ctx).quest, payload)

    @server.tool()
    @tool_errors
    async def attach_baseline(ctx: Context, baseline_id: str, variant_id: str | None = None) -> Result:  # type: ignore[type-arg]
        """Choose a published baseline (and variant) as the reference for main experiments.

        Returns: baseline_id, variant_id, confirmed, seq.
        Example: attach_baseline(baseline_id="resnet20", variant_id="cifar10")
        """
        return service.attach_baseline(tool_context(ctx).quest, baseline_id, variant_id)

    @server.tool()
    @tool_errors
    async def confirm_baseline(  # type: ignore[no-untyped-def]
        ctx: Context,  # type: ignore[type-arg]
        baseline_path: str,
        baseline_id: str,
        metric_contract: Any,
        metrics_summary: Any,
        primary_metric: str,
        metric_directions: Any = None,
        summary: str | None = None,
        variant_id: str | None = None,
    ) -> Result:
        """Confirm a baseline's numbers and its metric contract (the yardstick for runs).

        The canonical contract is written to <baseline_path>/json/metric_contract.json.

        Args:
          baseline_path: the baseline's directory inside the quest, e.g. "baselines/resnet20".
          baseline_id: the baseline (published or not).
          metric_contract: {"metrics": {metric_id: {"description", "derivation" or
            "origin_path", "source_ref", optional "direction"}}, optional
            "evaluation_protocol": {...}}. Every metric in metrics_summary needs an entry.
          metrics_summary: flat {metric_id: number}.
          primary_metric: one metric id of metrics_summary.
          metric_directions: {metric_id: "higher" | "lower"} (default higher).
        Returns: baseline_id, contract_path, metric_ids, metric_directions, seq.
        Example: confirm_baseline(baseline_path="baselines/resnet20", baseline_id="resnet20",
          metric_contract={"metrics": {"top1": {"description": "top-1 accuracy on the test set",
          "derivation": "correct / 10000", "source_ref": "He et al. 2016, Table 6"}},
          "evaluation_protocol": {"split": "test"}}, metrics_summary={"top1": 0.916},
          primary_metric="top1")
        """
        return service.confirm_baseline(
            tool_context(ctx).quest,
            baseline_path,
            baseline_id,
            metric_contract,
            metrics_summary,
            primary_metric,
            metric_directions=metric_directions,
            summary=summary,
            variant_id=variant_id,
        )

    @server.tool()
    @tool_errors
    async def record_main_experiment(  # type: ignore[no-untyped-def]
        ctx: Context,  # type: ignore[type-arg]
        run_id: str,
        title: str,
        metrics_summary: Any,
        baseline_id: str | None = None,
        metric_directions: Any = None,
        evaluation_protocol: Any = None,
        summary: str | None = None,
        idea_id: str | None = None,
        branch: str | None = None,
        details: Any = None,
    ) -> Result:
        """Record a main experiment against the confirmed baseline's metric contract.

        Every baseline metric id must be in metrics_summary (extras are fine). On failure
        nothing is recorded and the error lists `missing_metric_ids`, `baseline_metric_ids`,
        `baseline_metric_details`, `direction_mismatches` or `evaluation_protocol_mismatch`.

        Args:
          run_id: the run (its branch run/<run_id> is used when prepared).
          title: one line.
          metrics_summary: flat {metric_id: number}.
          baseline_id: default: the attached confirmed baseline, else the last confirmed.
          metric_directions: {metric_id: "higher"|"lower"}; must agree with the contract.
          evaluation_protocol: must equal the contract's protocol when both are given.
        Returns: run_id, baseline_id, branch, head_sha, primary (baseline, value, delta,
        better), comparisons, extra_metric_ids, path, seq.
        Example: record_main_experiment(run_id="ls-0.1", title="Label smoothing 0.1",
                                        metrics_summary={"top1": 0.921})
        """
        return service.record_main_experiment(
            tool_context(ctx).quest,
            run_id,
            title,
            metrics_summary,
            baseline_id=baseline_id,
            metric_directions=metric_directions,
            evaluation_protocol=evaluation_protocol,
            summary=summary,
            idea_id=idea_id,
            branch=branch,
            details=details,
        )


def _register_campaigns(server: MCPServer[ToolContext]) -> None:
    @server.tool()
    @tool_errors
    async def create_analysis_campaign(  # type: ignore[no-untyped-def]
        ctx: Context,  # type: ignore[type-arg]
        campaign_title: str,
        campaign_goal: str,
        slices: Any,
        parent_run_id: str | None = None,
    ) -> Result:
        """Split follow-up analysis into slices, each a child branch with its own worktree.

        Slices branch from the result node: parent_run_id's branch head, else the latest
        main experiment's, else the active branch. A one-slice campaign is fine.

        Args:
          campaign_title, campaign_goal: what the campaign is for.
          slices: titles, or objects {"slice_id"?, "title", "goal"?} (ids default s1, s2 ...).
          parent_run_id: the main experiment to analyse.
        Returns: campaign_id, parent_run_id, parent_branch, parent_sha, slices (with branch
        analysis/<idea>/<campaign_id>-<slice_id>, worktree, worktree_path), path, seq.
        Example: create_analysis_campaign(campaign_title="Why does LS help?",
          campaign_goal="isolate the calibration effect",
          slices=[{"slice_id": "no-aug", "title": "without augmentation"}])
        """
        return service.create_analysis_campaign(
            tool_context(ctx).quest, campaign_title, campaign_goal, slices, parent_run_id
        )

    @server.tool()
    @tool_errors
    async def record_analysis_slice(  # type: ignore[no-untyped-def]
        ctx: Context,  # type: ignore[type-arg]
        campaign_id: str,
        slice_id: str,
        status: str = "completed",
        metrics_summary: Any = None,
        summary: str | None = None,
        details: Any = None,
    ) -> Result:
        """Report one analysis slice's outcome (checkpoint its worktree first).

        Args:
          status: completed (default), failed, abandoned.
          metrics_summary: flat {metric_id: number}, optional.
        Returns: campaign_id, slice_id, status, branch, head_sha, remaining_slice_ids,
        campaign_complete, seq.
        Example: record_analysis_slice(campaign_id="campaign-001", slice_id="no-aug",
                                       metrics_summary={"top1": 0.90}, summary="LS still helps")
        """
        return service.record_analysis_slice(
            tool_context(ctx).quest,
            campaign_id,
            slice_id,
            status=status,
            metrics_summary=metrics_summary,
            summary=summary,
            details=details,
        )
