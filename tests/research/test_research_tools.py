"""DeepScientist's research loop on our `artifact` server: ideas and their lineage
(submit_idea, activate_branch, list_research_branches, resolve_runtime_refs) and the
turn-start recovery queries, called as its skills call them, through a real stdio MCP
client. Each step checks the fields DeepScientist's callers read and the events that
land in the log; replay rebuilds the idea files byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import mcp
import pytest

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.compat.research_support import LogWatch, artifact_client, confirm_baseline, ok, refused, stdio_artifact


@pytest.mark.slow
async def test_the_idea_lineage_loop_through_a_stdio_client(home: Home, quest: Quest) -> None:
    log = LogWatch(quest)
    async with mcp.Client(stdio_artifact(home)) as c:
        gate = await refused(c, "submit_idea", {"mode": "create", "title": "Too early"})
        assert gate["error"] == "baseline_gate_closed"
        assert log.types() == []  # refused: nothing but the call's own record

        await confirm_baseline(c)
        log.since()
        first = await ok(c, "submit_idea", {
            "mode": "create", "lineage_intent": "continue_line", "title": "Adapter route",
            "problem": "Baseline saturates.", "hypothesis": "A lightweight adapter helps.",
            "mechanism": "Insert a residual adapter.", "decision_reason": "Promote the strongest current idea.",
            "change_layer": "model", "selection_scores": {"impact": 4, "cost": 2},
            "draft_markdown": "# Adapter route draft\n\nInsert a residual adapter after block 3.\n",
            "comment": {"why": "the skill says to record the chosen idea"},
        })  # fmt: skip
        idea1 = first["idea_id"]
        assert first["branch"] == f"idea/q1-{idea1}" and first["branch_no"] == "001"
        assert first["lineage_intent"] == "continue_line" and first["parent_branch"] == "main"
        assert Path(first["worktree_root"]).is_dir() and (Path(first["worktree_root"]) / ".git").is_file()
        assert Path(first["idea_draft_path"]).read_text() == "# Adapter route draft\n\nInsert a residual adapter after block 3.\n"
        assert "A lightweight adapter helps." in Path(first["idea_md_path"]).read_text()
        assert first["next_anchor"] == "experiment"
        events = log.since()
        assert [e["type"] for e in events] == [
            "git.branch_prepared", "research.idea_submitted", "artifact.recorded", "quest.anchor_changed"
        ]  # fmt: skip
        submitted = events[1]
        assert submitted["branch_no"] == "001" and submitted["lineage_intent"] == "continue_line"
        assert submitted["foundation_ref"]["branch"] == "main"

        # The main experiment on its own run branch, grown from the idea's.
        await ok(c, "prepare_branch", {"run_id": "main-001", "idea_id": idea1})
        await ok(c, "checkpoint", {"message": "adapter implemented", "allow_empty": True})
        await ok(c, "record_main_experiment", {"run_id": "main-001", "title": "Adapter", "metrics_summary": {"top1": 0.93}})
        refs = await ok(c, "resolve_runtime_refs")
        assert refs["latest_main_run_id"] == "main-001" and refs["active_idea_id"] == idea1
        assert refs["current_workspace_branch"] == refs["latest_main_run_branch"] == "run/main-001"
        assert Path(refs["latest_main_result_json"]).is_file()
        state = await ok(c, "get_quest_state", {"detail": "summary"})
        assert state["quest_state"]["active_idea_id"] == idea1
        assert state["quest_state"]["baseline_gate"] == "confirmed" and state["quest_state"]["active_anchor"] == "experiment"
        docs = await ok(c, "read_quest_documents", {"names": ["brief", "status"], "mode": "excerpt"})
        assert docs["count"] == 2 and "A quest for tests." in docs["items"][0]["content"]
        convo = await ok(c, "get_conversation_context", {"limit": 5})
        assert convo["count"] >= 0 and convo["latest_user_message"] is None

        listed = await ok(c, "list_research_branches")
        rows = {r["branch_name"]: r for r in listed["branches"]}
        assert listed["count"] == 2 == len(rows)
        assert rows[first["branch"]]["branch_no"] == "001" and rows[first["branch"]]["idea_id"] == idea1
        assert rows["run/main-001"]["latest_main_experiment"]["run_id"] == "main-001"
        assert rows["run/main-001"]["has_main_result"] is True and rows["run/main-001"]["is_active_head"] is True

        log.since()
        second = await ok(c, "submit_idea", {
            "mode": "create", "lineage_intent": "continue_line", "title": "Run-informed route",
            "hypothesis": "The best measured branch is the right foundation.",
            "foundation_ref": {"kind": "run", "ref": "main-001"},
            "foundation_reason": "Carry forward the strongest measured branch.",
        })  # fmt: skip
        assert second["branch_no"] == "002" and second["lineage_intent"] == "continue_line"
        assert second["foundation_ref"]["kind"] == "run" and second["foundation_ref"]["ref"] == "main-001"
        assert second["parent_branch"] == "run/main-001" and Path(second["worktree_root"]).is_dir()
        assert [e["type"] for e in log.since()] == ["git.branch_prepared", "research.idea_submitted", "artifact.recorded"]

        listed = await ok(c, "list_research_branches")
        rows = {r["branch_name"]: r for r in listed["branches"]}
        assert listed["count"] == 3
        assert rows[second["branch"]]["branch_no"] == "002"
        assert rows[second["branch"]]["foundation_reason"] == "Carry forward the strongest measured branch."
        assert rows[first["branch"]]["change_layer"] == "model" and rows[first["branch"]]["updated_at"]
        assert listed["active_head_branch"] == second["branch"]

        activated = await ok(c, "activate_branch", {"branch": first["branch"]})
        assert activated["idea_id"] == idea1 and activated["branch"] == first["branch"]
        assert activated["worktree_root"] == first["worktree_root"] and activated["worktree_created"] is False
        # The idea's main run (main-001, on its own run/ branch) counts: on to the decision.
        assert activated["next_anchor"] == "decision" and activated["latest_main_run_id"] == "main-001"
        events = log.since()
        assert [e["type"] for e in events] == ["research.branch_activated", "quest.anchor_changed"]
        assert events[0]["activated_by"] == "branch" and events[0]["idea_id"] == idea1
        refs = await ok(c, "resolve_runtime_refs")
        assert refs["current_workspace_branch"] == first["branch"]
        assert refs["research_head_branch"] == second["branch"]

        by_run = await ok(c, "activate_branch", {"run_id": "main-001", "promote_to_head": True})
        assert by_run["branch"] == "run/main-001" and by_run["next_anchor"] == "decision"
        assert by_run["latest_main_run_id"] == "main-001"
        assert [e["type"] for e in log.since()] == ["research.branch_activated"]  # the anchor is decision already
        refs = await ok(c, "resolve_runtime_refs")
        assert refs["research_head_branch"] == refs["current_workspace_branch"] == "run/main-001"

        mapped = await ok(c, "get_research_map_status", {"detail": "summary", "locale": "en"})
        status = mapped["research_map_status"]
        for key in ("canvas_summary", "runtime_refs", "activation_refs", "recommended_activation_ref", "node_history",
                    "usage_notes", "git", "quest_state", "global_status"):  # fmt: skip
            assert key in status, key
        assert status["git"]["head_commit"] and status["git"]["current_ref"] == "run/main-001"
        assert status["node_history"]["ancestor_refs"][:1] == [first["branch"]]
        assert status["canvas_summary"]["node_count"] >= 4
        glob = await ok(c, "get_global_status", {"detail": "brief"})
        assert glob["global_status"]["latest_run_id"] == "main-001" and "main-001" in glob["global_status"]["summary_text"]
        assert log.types() == []  # the queries appended nothing

    # Replay rebuilds the idea pages and drafts byte for byte.
    quest.close()
    files = sorted((quest.root / "ideas").rglob("*.md"))
    assert len(files) == 4
    before = {p: p.read_bytes() for p in files}
    assert replay_quest(quest.root, quest_id="q1").files_written == []
    for p in files:
        p.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert {p: p.read_bytes() for p in files} == before


async def test_an_analysis_campaign_is_recovered_as_active_with_its_next_pending_slice(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        await ok(client, "submit_idea", {"title": "Label smoothing", "hypothesis": "calibration improves"})
        await ok(client, "record_main_experiment", {"run_id": "ls-1", "title": "LS", "metrics_summary": {"top1": 0.92}})
        none_open = await refused(client, "get_analysis_campaign", {"campaign_id": "active"})
        assert none_open["error"] == "no_active_campaign"
        made = await ok(client, "create_analysis_campaign", {"campaign_title": "Why", "campaign_goal": "isolate it",
                                                             "slices": ["no-aug", "no-ls"]})  # fmt: skip
        view = await ok(client, "get_analysis_campaign", {"campaign_id": "active"})
        assert view["campaign_id"] == made["campaign_id"] and view["next_pending_slice_id"] == "s1"
        assert view["pending_slice_count"] == 2 and view["is_active"] is True
        refs = await ok(client, "resolve_runtime_refs")
        assert refs["active_analysis_campaign_id"] == made["campaign_id"] and refs["next_pending_slice_id"] == "s1"
        assert refs["analysis_parent_branch"] == made["parent_branch"]
        busy = await refused(client, "activate_branch", {"branch": "main"})
        assert busy["error"] == "campaign_active"
        await ok(client, "record_analysis_slice", {"campaign_id": made["campaign_id"], "slice_id": "s1"})
        assert (await ok(client, "get_analysis_campaign", {}))["next_pending_slice_id"] == "s2"
        await ok(client, "record_analysis_slice", {"campaign_id": made["campaign_id"], "slice_id": "s2"})
        assert (await refused(client, "get_analysis_campaign", {"campaign_id": "active"}))["error"] == "no_active_campaign"
        done = await ok(client, "get_analysis_campaign", {"campaign_id": made["campaign_id"]})
        assert done["campaign_complete"] is True and done["next_pending_slice_id"] is None and done["completed_slice_count"] == 2
        assert (await refused(client, "get_analysis_campaign", {"campaign_id": "campaign-999"}))["error"] == "unknown_campaign"


async def test_lineage_intent_branch_alternative_grows_a_sibling_from_the_parent(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        first = await ok(client, "submit_idea", {"title": "A", "idea_id": "idea-a"})
        child = await ok(client, "submit_idea", {"title": "A child", "idea_id": "idea-b", "lineage_intent": "child"})
        assert child["parent_branch"] == first["branch"] and child["lineage_intent"] == "continue_line"
        sibling = await ok(client, "submit_idea", {"title": "B sibling", "idea_id": "idea-c", "lineage_intent": "sibling"})
        assert sibling["parent_branch"] == first["branch"] and sibling["lineage_intent"] == "branch_alternative"
        assert [first["branch_no"], child["branch_no"], sibling["branch_no"]] == ["001", "002", "003"]
        by_branch = await ok(client, "submit_idea", {"title": "From main", "idea_id": "idea-d", "foundation_ref": "main"})
        assert by_branch["foundation_ref"]["kind"] == "branch" and by_branch["parent_branch"] == "main"
        assert by_branch["lineage_intent"] is None  # neither the workspace nor its parent


async def test_a_candidate_is_recorded_without_a_branch_then_promoted_and_revised(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        log = LogWatch(quest)
        cand = await ok(client, "submit_idea", {"title": "Maybe mixup", "submission_mode": "candidate", "idea_id": "mix"})
        assert "branch" not in cand and cand["promotable"] is True and cand["submission_mode"] == "candidate"
        assert [e["type"] for e in log.since()] == ["research.idea_submitted"]
        assert not (quest.root / ".ds" / "worktrees" / "idea__q1-mix").exists()
        line = await ok(client, "submit_idea", {"title": "Mixup", "idea_id": "mix", "source_candidate_id": "mix"})
        assert line["branch"] == "idea/q1-mix" and line["branch_no"] == "001" and line["source_candidate_id"] == "mix"
        again = await refused(client, "submit_idea", {"title": "Mixup again", "idea_id": "mix"})
        assert again["error"] == "idea_exists"
        revised = await ok(client, "submit_idea", {"mode": "revise", "title": "Mixup, alpha 0.2", "hypothesis": "smaller alpha"})
        assert revised["idea_id"] == "mix" and revised["branch"] == "idea/q1-mix" and revised["branch_no"] == "001"
        assert "smaller alpha" in Path(revised["idea_md_path"]).read_text()
        assert "Mixup, alpha 0.2" in Path(revised["idea_md_path"]).read_text()
        wrong = await refused(client, "submit_idea", {"mode": "revise", "lineage_intent": "continue_line"})
        assert wrong["error"] == "lineage_not_revisable"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"mode": "rewrite", "title": "x"}, "invalid_mode"),
        ({"submission_mode": "draft", "title": "x"}, "invalid_submission_mode"),
        ({"title": "x", "lineage_intent": "cousin"}, "invalid_lineage_intent"),
        ({"title": ""}, "missing_fields"),
        ({"title": "x", "foundation_ref": {"kind": "run", "ref": "nope"}}, "unknown_foundation"),
        ({"title": "x", "foundation_ref": {"kind": "planet"}}, "invalid_foundation_ref"),
        ({"title": "x", "foundation_ref": "no/such-branch"}, "unknown_foundation"),
        ({"title": "x", "idea_id": "../evil"}, "invalid_id"),
        ({"title": "x", "mode": "revise", "idea_id": "ghost"}, "unknown_idea"),
        ({"title": "x", "colour": "red"}, "unknown_argument"),
    ],
)
async def test_a_bad_submit_idea_is_refused_with_its_code_and_writes_nothing(
    home: Home, quest: Quest, args: dict, code: str
) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        log = LogWatch(quest)
        worktrees = sorted((quest.root / ".ds" / "worktrees").glob("*")) if (quest.root / ".ds" / "worktrees").exists() else []
        branches = sorted(quest.repo().branches.local)
        assert (await refused(client, "submit_idea", args))["error"] == code
        assert log.types() == []
        assert sorted(quest.repo().branches.local) == branches
        assert (sorted((quest.root / ".ds" / "worktrees").glob("*")) if worktrees else []) == worktrees
        assert not (quest.root / "ideas").exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({}, "missing_fields"),
        ({"branch": "idea/none"}, "unknown_branch"),
        ({"idea_id": "ghost"}, "unknown_idea"),
        ({"run_id": "ghost"}, "unknown_run"),
        ({"branch": "main", "anchor": "party"}, "invalid_anchor"),
    ],
)
async def test_a_bad_activate_branch_is_refused_with_its_code_and_writes_nothing(
    home: Home, quest: Quest, args: dict, code: str
) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        log = LogWatch(quest)
        assert (await refused(client, "activate_branch", args))["error"] == code
        assert log.types() == []


async def test_activating_a_branch_without_a_worktree_makes_one_and_recovery_reads_it(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        await ok(client, "prepare_branch", {"run_id": "bare", "create_worktree": False})
        refused_ = await refused(client, "activate_branch", {"branch": "run/bare", "create_worktree_if_missing": False})
        assert refused_["error"] == "worktree_missing"
        made = await ok(client, "activate_branch", {"branch": "run/bare", "anchor": "analysis"})
        assert made["worktree_created"] is True and (Path(made["worktree_root"]) / ".git").is_file()
        assert made["next_anchor"] == "analysis-campaign"
        refs = await ok(client, "resolve_runtime_refs")
        assert refs["current_workspace_root"] == made["worktree_root"]


async def test_recovery_queries_read_the_conversation_documents_and_state(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        from ds_events.services.quest.lifecycle import PostMessage, post_message

        post_message(quest, PostMessage(text="Please focus on CIFAR-10 only."))
        await ok(client, "interact", {"message": "Noted: CIFAR-10 only.", "kind": "progress"})
        post_message(quest, PostMessage(text="And keep the budget under 4 GPU hours."))
        convo = await ok(client, "get_conversation_context", {"limit": 2, "include_attachments": True})
        assert [i["role"] for i in convo["items"]] == ["assistant", "user"]
        assert convo["items"][1]["content"] == "And keep the budget under 4 GPU hours." and convo["items"][0]["attachments"] == []
        assert convo["latest_user_message"]["content"].startswith("And keep") and convo["total"] == 3
        docs = await ok(client, "read_quest_documents", {"names": ["active_user_requirements", "summary"], "mode": "full"})
        reqs = docs["items"][0]
        assert reqs["exists"] and "CIFAR-10 only" in reqs["content"] and "4 GPU hours" in reqs["content"]
        assert docs["items"][1]["exists"] and docs["items"][1]["path"].endswith("SUMMARY.md")
        full = await ok(client, "get_quest_state", {"detail": "full"})
        assert full["quest_state"]["pending_user_message_count"] >= 1
        assert {"counts", "paths", "active_interactions", "recent_artifacts", "recent_runs", "idea_lines"} <= set(full["quest_state"])
        glob = await ok(client, "get_global_status", {"detail": "full", "locale": "zh"})
        assert glob["global_status"]["current_stage"] == "scout" and glob["global_status"]["latest_run_id"] is None
        for tool, args, code in [
            ("read_quest_documents", {"names": ["diary"]}, "unknown_document"),
            ("read_quest_documents", {"mode": "all"}, "invalid_mode"),
            ("read_quest_documents", {"max_lines": 0}, "invalid_limit"),
            ("get_conversation_context", {"limit": 1000}, "invalid_limit"),
            ("get_quest_state", {"detail": "everything"}, "invalid_detail"),
            ("get_global_status", {"detail": "summary"}, "invalid_detail"),
            ("get_research_map_status", {"detail": "brief"}, "invalid_detail"),
        ]:
            assert (await refused(client, tool, args))["error"] == code, (tool, args)


async def test_the_git_tool_commits_the_activated_branch(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        first = await ok(client, "submit_idea", {"title": "A", "idea_id": "idea-a"})
        await ok(client, "submit_idea", {"title": "B", "idea_id": "idea-b"})
        await ok(client, "activate_branch", {"idea_id": "idea-a"})
        (Path(first["worktree_root"]) / "a.txt").write_text("on a\n")
        done = await ok(client, "git", {"action": "commit", "message": "work on a"})
        assert done["result"]["branch"] == first["branch"]
        assert quest.repo().branches.local[first["branch"]].peel().message.startswith("work on a")


async def test_checkpoint_commits_the_activated_branch(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as client:
        await confirm_baseline(client)
        first = await ok(client, "submit_idea", {"title": "A", "idea_id": "idea-a"})
        await ok(client, "submit_idea", {"title": "B", "idea_id": "idea-b"})
        await ok(client, "activate_branch", {"idea_id": "idea-a"})
        (Path(first["worktree_root"]) / "a.txt").write_text("on a\n")
        done = await ok(client, "checkpoint", {"message": "work on a"})
        assert done["branch"] == first["branch"]
