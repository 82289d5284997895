"""The research route the stage skills teach, played with concrete values through the real
servers (in-process MCP clients on a real quest, real bash_exec sessions, real git
branches), stage by stage, in each skill's order.

Each stage makes exactly the tools its skill's "Tool calls" section names, so a skill
that starts naming another tool, or a tool whose arguments or preconditions change
under a skill (a workdir that must exist, a checkpoint before a result, a payload field
the record tool refuses), fails here. The values are concrete where a skill writes
placeholders; the calls' shapes are the skills'.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from ds_events.home import Home, Quest
from ds_events.services.interactions import mailbox as interactions
from ds_events.services.runtime.skills import SKILL_NAMES, load_skill, tool_calls
from tests.mcp_support import open_clients, verify_every_log

from .test_skills import _section


class Route:
    """Calls tools through the clients, fails on any error, remembers who called what."""

    def __init__(self, clients: dict[str, Any]) -> None:
        self.clients = clients
        self.stage = ""
        self.called: dict[str, set[str]] = defaultdict(set)

    async def __call__(self, ref: str, **args: Any) -> dict[str, Any]:
        namespace, tool = ref.split(".")
        result = await self.clients[namespace].call_tool(tool, args)
        assert not result.is_error, f"{self.stage}: {ref}({args}) -> {result.content[0].text}"
        self.called[self.stage].add(ref)
        return result.structured_content


async def test_the_route_the_skills_teach_runs_on_the_real_servers(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        call = Route(clients)

        call.stage = "scout"
        await call("memory.search", query="cifar10 image classification accuracy", kind="papers", scope="both", limit=8)
        await call("memory.search", query="cifar10", kind="knowledge", scope="both", limit=5)
        await call("memory.list_recent", kind="decisions", limit=5)
        await call("memory.search", query="cifar10 setup", kind="templates", scope="global", limit=3)
        await call("artifact.arxiv", paper_id="1512.03385", mode="list")
        await call("artifact.arxiv", paper_id="1512.03385", mode="read")
        await call("bash_exec.bash_exec", command="echo entry points: train.py eval.py", mode="await", wait_timeout_seconds=60)
        await call("memory.write", kind="papers", title="ResNet-20 reaches 91.25% top-1 on CIFAR-10", body="Table 6.", tags=["cifar10"])
        await call("artifact.record", payload={"kind": "report", "title": "Task frame", "summary": "CIFAR-10, test split, top1 higher"})
        await call("artifact.interact", message="Frame: CIFAR-10 top-1. Proposed baseline: ResNet-20.", kind="milestone")
        await _decide(call, "frame_ready", "continue", "baseline")

        call.stage = "baseline"
        await call("memory.search", query="resnet20 reproduce environment", kind="episodes", scope="both", limit=8)
        await call("memory.search", query="resnet20 cifar10", kind="knowledge", scope="both", limit=5)
        await call("memory.read_memory", task_description="reproduce resnet20 on cifar10", top_k=5)
        await call(
            "artifact.publish_baseline",
            payload={"baseline_id": "rn20", "title": "ResNet-20 (He et al.)", "baseline_path": "baselines/rn20", "source": "paper"},
        )
        await call("artifact.attach_baseline", baseline_id="rn20")
        await call(
            "bash_exec.bash_exec",
            command="mkdir -p baselines/rn20 && cd baselines/rn20 && echo smoke ok",
            mode="await",
            wait_timeout_seconds=60,
        )
        job = await call("bash_exec.bash_exec", command=_write_metrics(0.912), mode="detach", workdir="baselines/rn20", timeout_seconds=600)
        done = await call("bash_exec.bash_exec", mode="await", id=job["id"], wait_timeout_seconds=60)
        assert done["done"] and done["status"] == "completed"
        await call("bash_exec.bash_exec", mode="read", id=job["id"], tail=200)
        await call("artifact.checkpoint", message="baseline rn20: eval script and measured metrics", branch="main")
        confirmed = await call(
            "artifact.confirm_baseline",
            baseline_path="baselines/rn20",
            baseline_id="rn20",
            metric_contract={
                "metrics": {
                    "top1": {
                        "description": "top-1 accuracy on the test split",
                        "origin_path": "baselines/rn20/results/metrics.json",
                        "source_ref": "eval.py",
                        "direction": "higher",
                    }
                },
                "evaluation_protocol": {"split": "test", "command": "python eval.py"},
            },
            metrics_summary=_metrics(quest, "baselines/rn20"),
            primary_metric="top1",
            summary="measured 0.912, reported 0.9125",
        )
        assert confirmed["metric_ids"] == ["top1"]
        await call(
            "memory.append_memory",
            record_type="working_solution",
            summary="ResNet-20 evaluation runs on CPU",
            detail="python eval.py --device cpu",
            session_id="run-1",
        )
        await call("artifact.interact", message="Baseline ResNet-20 confirmed: top1 = 0.912.", kind="milestone")
        await _decide(call, "baseline_confirmed", "confirm_baseline", "idea")

        call.stage = "idea"
        await call("memory.search", query="overconfident predictions", kind="ideas", scope="both", limit=8)
        await call("memory.search", query="label smoothing classification", kind="papers", scope="both", limit=8)
        await call("memory.list_recent", kind="decisions", limit=5)
        await call("memory.search", query="label smoothing failed", kind="episodes", limit=5)
        state = await call("artifact.get_quest_state", detail="summary")
        assert state["quest_state"]["baseline_gate"] == "confirmed"
        lines = await call("artifact.list_research_branches")
        assert lines["branches"] == []  # no idea line yet
        await call("artifact.arxiv", paper_id="1512.00567", mode="read")
        await call("bash_exec.bash_exec", command="echo 'confidence histogram: skewed'", mode="await", wait_timeout_seconds=60)
        submitted = await call(
            "artifact.submit_idea", mode="create", lineage_intent="continue_line", title="Label smoothing 0.1",
            problem="overconfident predictions", hypothesis="soft targets improve top-1", mechanism="smoothed targets",
            method_brief="cross-entropy with label smoothing 0.1", expected_gain="+0.5 top-1", risks=["no gain at this size"],
            decision_reason="cheapest; mixup costs more epochs", foundation_reason="the confirmed baseline",
            next_target="experiment", draft_markdown="# Label smoothing 0.1\n\nFalsified if top-1 does not rise.\n",
        )  # fmt: skip
        idea = submitted["idea_id"]
        assert submitted["branch"] == f"idea/{quest.id}-{idea}" and submitted["next_anchor"] == "experiment"
        assert quest.state("status").anchor == "experiment"
        await call(
            "memory.write", kind="ideas", title="Label smoothing selected over mixup for calibration", body="cheaper", tags=["cifar10"]
        )
        await call("artifact.interact", message="Selected: label smoothing 0.1.", kind="milestone")

        call.stage = "experiment"
        await call("memory.search", query="label smoothing training run", kind="episodes", scope="both", limit=8)
        await call("memory.search", query="pytorch resnet pitfalls", kind="knowledge", scope="both", limit=5)
        await call("memory.read_memory", task_description="implement and run label smoothing", top_k=5)
        await call("memory.search", query="label smoothing", kind="ideas", limit=3)
        refs = await call("artifact.resolve_runtime_refs")
        assert refs["active_idea_id"] == idea and refs["current_workspace_branch"] == submitted["branch"]
        assert refs["current_workspace_root"] == submitted["worktree_root"]
        board = await call("artifact.get_method_scoreboard")
        # The new line is on the board, unmeasured: the confirmed baseline is the bar.
        assert [(e["line_key"], e["best_run_id"]) for e in board["scoreboard"]["entries"]] == [(idea, None)]
        assert board["scoreboard"]["incumbent_line_key"] is None
        worktree = submitted["worktree"]
        await call(
            "bash_exec.bash_exec",
            command="echo 'smoothing = 0.1' > train_config.py && echo smoke ok",
            mode="await",
            workdir=worktree,
            wait_timeout_seconds=60,
        )
        await call("artifact.checkpoint", message="ls-0.1: label smoothing 0.1 in the loss")
        job = await call("bash_exec.bash_exec", command=_write_metrics(0.921), mode="detach", workdir=worktree, timeout_seconds=600)
        await call("artifact.interact", message=f"Main run ls-0.1 started ({job['id']}).", kind="progress")
        assert (await call("bash_exec.bash_exec", mode="await", id=job["id"], wait_timeout_seconds=60))["done"]
        await call("bash_exec.bash_exec", mode="read", id=job["id"], tail=100)
        await call("artifact.checkpoint", message="ls-0.1: results")
        main = await call(
            "artifact.record_main_experiment",
            run_id="ls-0.1",
            title="Label smoothing 0.1",
            metrics_summary=_metrics(quest, worktree),
            idea_id=idea,
            hypothesis="soft targets improve top-1",
            setup="ResNet-20, CIFAR-10, 3 epochs",
            execution=f"bash_exec {job['id']}",
            results="0.921 vs 0.912",
            conclusion="beats the baseline",
            evidence_paths=["results/metrics.json"],
            summary="beats the baseline",
        )
        assert main["primary"]["better"] is True and main["branch"] == "run/ls-0.1"
        assert main["progress_eval"]["beats_baseline"] is True
        await call(
            "memory.write", kind="episodes", title="ls-0.1 gains 0.9 points of top-1 over ResNet-20", body="0.921 vs 0.912", tags=["ls"]
        )
        await call("artifact.interact", message="ls-0.1: top1 0.921 vs baseline 0.912 (+0.009).", kind="milestone")
        await _decide(call, "win", "launch_analysis_campaign", "analysis-campaign")

        call.stage = "analysis-campaign"
        await call("memory.search", query="ls-0.1 ablation robustness", kind="episodes", scope="both", limit=8)
        await call("memory.list_recent", kind="decisions", limit=5)
        await call("memory.search", query="label smoothing analysis", kind="knowledge", scope="both", limit=5)
        campaign = await call(
            "artifact.create_analysis_campaign",
            campaign_title="Does label smoothing help without augmentation?",
            campaign_goal="isolate the effect of augmentation",
            slices=[{"slice_id": "no-aug", "title": "without augmentation", "goal": "is the gain still there"}],
            parent_run_id="ls-0.1",
        )
        piece = campaign["slices"][0]
        job = await call("bash_exec.bash_exec", command=_write_metrics(0.90), mode="detach", workdir=piece["worktree"], timeout_seconds=600)
        await call("bash_exec.bash_exec", mode="await", id=job["id"], wait_timeout_seconds=60)
        await call("artifact.checkpoint", message="campaign-001/no-aug: results", branch=piece["branch"])
        recorded = await call(
            "artifact.record_analysis_slice",
            campaign_id=campaign["campaign_id"],
            slice_id="no-aug",
            status="completed",
            metrics_summary=_metrics(quest, piece["worktree"]),
            summary="the gain holds",
            details={"bash_session": job["id"]},
        )
        assert recorded["campaign_complete"] is True
        await call("artifact.interact", message="no-aug: 0.90; 0 slices left.", kind="progress")
        await call(
            "memory.write", kind="knowledge", title="Label smoothing helps ResNet-20 even without augmentation", body="0.90", tags=["ls"]
        )
        await call("artifact.interact", message="Augmentation is not the cause. Next: write.", kind="milestone")
        await _decide(call, "claim supported", "write", "write")

        call.stage = "write"
        await call("memory.search", query="label smoothing related work", kind="papers", scope="both", limit=10)
        await call("memory.list_recent", kind="decisions", limit=10)
        await call("memory.search", query="ls-0.1 results", kind="episodes", limit=8)
        await call("memory.search", query="report structure", kind="templates", scope="both", limit=3)
        summary = await call("artifact.refresh_summary", reason="before writing")
        assert "rn20" in summary["markdown"]
        paper = await call("artifact.prepare_branch", run_id="ls-0.1", branch_kind="paper", start_point="run/ls-0.1")
        assert paper["branch"] == "paper/ls-0.1"
        await call("artifact.arxiv", paper_id="1512.00567", mode="list")
        await call(
            "bash_exec.bash_exec",
            command="mkdir -p paper && echo '# Label smoothing' > paper/main.md",
            mode="await",
            workdir=paper["worktree"],
            wait_timeout_seconds=60,
        )
        await call("artifact.render_git_graph", max_commits=200)
        await call("artifact.checkpoint", message="paper: draft of the results section")
        await call(
            "artifact.record",
            payload={
                "kind": "report",
                "title": "Label smoothing on CIFAR-10",
                "summary": "...",
                "branch": paper["branch"],
                "files": ["paper/main.md"],
            },
        )
        await call(
            "memory.write", kind="templates", title="Short result report: claim, table, ablation, limits", body="outline", tags=["writing"]
        )
        await call("artifact.interact", message="Draft ready on paper/ls-0.1.", kind="milestone")
        await _decide(call, "draft_ready", "finalize", "finalize")

        call.stage = "finalize"
        await call("memory.list_recent", kind="decisions", limit=20)
        await call("memory.search", query="failed route lesson", kind="episodes", limit=10)
        await call("memory.search", query="final report", kind="templates", scope="global", limit=3)
        audit = await call("memory.audit", scope="quest")
        lesson = (
            await call("memory.write", kind="knowledge", title="Label smoothing 0.1 is a cheap top-1 gain for small ResNets", body="merged")
        )["id"]
        await call("memory.promote_to_global", card_id=lesson)
        await call("artifact.checkpoint", message="finalize: summary and graph", branch="main")
        await call("artifact.render_git_graph")
        await call("artifact.record", payload={"kind": "report", "title": "Final state", "summary": "supported: ..."})
        await call("artifact.refresh_summary", reason="quest finalized")
        request = await call(
            "artifact.interact",
            kind="decision_request",
            message="Final state: ... Close?",
            reply_schema={"decision_type": "quest_completion_approval"},
            options=[{"id": "approve", "label": "Close the quest", "recommended": True}, {"id": "continue", "label": "Continue"}],
        )
        assert request["interaction_status"] == "waiting" and request["open_request_count"] == 1 and audit["ok"] is True
        # The user answers; the next turn is a decision turn that acts on the reply.
        interactions.reply(quest, interactions.Reply(interaction_id=request["interaction_id"], text="close it", option_id="approve"))

        call.stage = "decision"
        await call("memory.list_recent", kind="decisions", limit=8)
        await call("memory.search", query="close the quest", kind="ideas", limit=5)
        await call("memory.search", query="close the quest", kind="episodes", scope="both", limit=5)
        looked = await call("artifact.get_interaction", interaction_id=request["interaction_id"])
        assert looked["interaction"]["status"] == "answered"
        taken = await call("artifact.interact", message="Got it: close. Next: nothing.", kind="progress")
        assert [m["text"] for m in taken["recent_inbound_messages"]] == ["close it"]
        assert taken["recent_inbound_messages"][0]["reply_to_interaction_id"] == request["interaction_id"]
        frontier = (await call("artifact.get_optimization_frontier"))["optimization_frontier"]
        assert frontier["best_run"]["run_id"] == "ls-0.1"
        # The quest closes standing on its best line: that run's branch becomes the head.
        head = await call("artifact.activate_branch", run_id=frontier["best_run"]["run_id"], promote_to_head=True, anchor="finalize")
        assert head["branch"] == "run/ls-0.1" and quest.state("research").research_head_branch == "run/ls-0.1"
        await call("bash_exec.bash_exec", mode="list")
        await call(
            "artifact.record",
            payload={"kind": "decision", "verdict": "close", "action": "stop", "reason": "user approved", "next_anchor": "finalize"},
        )
        await call("artifact.record", payload={"kind": "approval", "verdict": "approved", "summary": "close"})
        await call("memory.write", kind="decisions", title="Quest closed after label smoothing result was written up", body="approved")
        await call("artifact.interact", kind="answer", message="Decided: stop.", reply_to_interaction_id=request["interaction_id"])
        closed = await call("artifact.complete_quest", summary="Label smoothing 0.1 helps a small ResNet; written up.")
        assert closed["status"] == "completed" and quest.state("status").status == "completed"

    for name in SKILL_NAMES:
        named = {f"{c.namespace}.{c.tool}" for c in tool_calls(_section(load_skill(name).body, "Tool calls")) if c.called}
        assert call.called[name] == named, f"{name}: route calls {sorted(call.called[name] ^ named)} differently from its skill"
    assert verify_every_log(home) == {}


async def _decide(call: Route, verdict: str, action: str, next_anchor: str) -> None:
    await call(
        "artifact.record",
        payload={"kind": "decision", "verdict": verdict, "action": action, "reason": "evidence", "next_anchor": next_anchor},
    )


def _write_metrics(top1: float) -> str:
    return f"mkdir -p results && echo '{{\"top1\": {top1}}}' > results/metrics.json"


def _metrics(quest: Quest, where: str) -> dict[str, float]:
    """The metrics a run wrote: a result is read from the run's output, never typed in."""
    return json.loads((quest.root / where / "results" / "metrics.json").read_text())
