"""The paper chain in DeepScientist's forms, through a real stdio `artifact` server:
outlines (candidate, select — which opens the ``paper/…`` branch — revise, list), the
writing plan, the bundle, the paper contract and its health, and the validators. Each
step checks the fields DeepScientist's callers read and the events in the log; refused
calls write nothing; replay rebuilds the paper files byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp
import pygit2

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.compat.research_support import LogWatch, artifact_client, ok, refused

PAPER_VIEW: dict[str, Any] = {
    "paper_type": "full_empirical",
    "outline_maturity": "mature",
    "story_spine": {"problem": "Small-data fine-tuning overfits.", "gap": "Adapters were never tested below 1k examples.",
                    "method": "A residual adapter after block 3.", "main_result": "Top-1 rises by 1.2 points.",
                    "scope_limit": "One architecture, one dataset."},
    "narrative_strategy": {"central_thesis": "Residual adapters make small-data fine-tuning reliable.",
                           "central_insight": "Capacity placed late regularises better than capacity placed early."},
    "core_claims": [{"claim_id": "C1", "claim": "The adapter beats full fine-tuning below 1k examples.",
                     "evidence_needed": ["r1"], "what_would_falsify_it": "No gain over three seeds."}],
    "evidence_grounding": {"observed_facts": ["r1 reaches 0.92 top-1"], "allowed_interpretations": ["late capacity helps"],
                           "must_not_claim": ["state of the art"]},
    "method_abstraction": {"intuition": "Add capacity where features are task-specific.",
                           "mechanism_steps": ["insert adapter", "freeze backbone"]},
    "evaluation_plan": {"setting": "CIFAR-10 subsets", "datasets_or_benchmarks": ["CIFAR-10"]},
    "analysis_plan": [
        {"analysis_id": f"A{n}", "title": title, "analysis_role": "ablation", "reviewer_question": "why?",
         "target_display": f"Table {n}", "main_or_appendix": "main", "claim_links": ["C1"]}
        for n, title in enumerate(["adapter depth", "data size", "seeds", "placement"], start=1)
    ],
}  # fmt: skip
DETAILED = {
    "title": "Residual adapters for small data",
    "research_questions": ["Do adapters help below 1k examples?"],
    "experimental_designs": ["ablate the adapter"],
    "contributions": ["a residual adapter"],
    "sections": [{"section_id": "results", "title": "Results", "required_items": ["r1"]}],
    "evidence_view": {"appendix_reproducibility": ["seeds 0-2"]},
    "paper_view": PAPER_VIEW,
}


async def _research_line(c: mcp.Client) -> dict[str, Any]:
    """A waived baseline, an idea branch and a main experiment on it: where a paper starts."""
    await ok(c, "waive_baseline", {"reason": "exploratory quest"})
    idea = await ok(c, "submit_idea", {"title": "Residual adapter", "problem": "small data overfits"})
    await ok(c, "record_main_experiment", {"run_id": "r1", "metrics_summary": {"acc": 0.92}, "summary": "adapter run"})
    return idea


def _paper_files(quest: Quest) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted((quest.root / "paper").rglob("*")) if p.is_file()}


def _check_replay(quest: Quest) -> None:
    """Replay leaves the paper files as they are; deleted, it writes them back byte for byte."""
    quest.close()
    before = _paper_files(quest)
    assert before
    assert replay_quest(quest.root, quest_id="q1").files_written == []
    for p in before:
        p.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert _paper_files(quest) == before


async def test_outlines_are_submitted_selected_on_a_paper_branch_revised_and_listed(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        idea = await _research_line(c)
        log = LogWatch(quest)
        empty = await ok(c, "list_paper_outlines")
        assert empty["selected_outline_ref"] is None and empty["count"] == 0 and empty["outlines"] == []
        assert log.types() == []

        candidate = await ok(c, "submit_paper_outline", {
            "mode": "candidate", "title": "Residual adapters", "note": "first cut", "detailed_outline": DETAILED,
            "comment": "outline before the campaign"})  # fmt: skip
        assert candidate["outline_id"] == "outline-001" and candidate["mode"] == "candidate"
        assert candidate["tool_name"] == "submit_paper_outline" and candidate["status"] == "candidate"
        assert candidate["paths"]["outline_path"] == "paper/outlines/candidates/outline-001.json"
        assert candidate["selected_outline_ref"] is None and candidate["paper_branch"] is None
        [event] = log.since()
        assert event["type"] == "paper.outline_submitted" and event["mode"] == "candidate"
        outline = event["outline"]
        assert outline["story_spine"]["gap"] == PAPER_VIEW["story_spine"]["gap"]
        assert outline["core_claims"][0]["claim_id"] == "C1" and len(outline["planned_analyses"]) == 4
        assert outline["evidence_boundaries"]["must_not_claim"] == ["state of the art"]
        assert outline["extra"] == {"evidence_view": {"appendix_reproducibility": ["seeds 0-2"]}}
        second = await ok(c, "submit_paper_outline", {"title": "A plainer story", "detailed_outline": {"contributions": ["x"]}})
        assert second["outline_id"] == "outline-002"
        log.since()

        # Refusals write nothing: an unknown outline, a bad mode, a malformed outline.
        assert (await refused(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-009"}))["error"] == "unknown_outline"
        assert (await refused(c, "submit_paper_outline", {"mode": "choose"}))["error"] == "invalid_argument"
        bad = await refused(c, "submit_paper_outline", {"detailed_outline": {"paper_view": {"core_claims": "one claim"}}})
        assert bad["error"] == "invalid_field"
        assert (await refused(c, "submit_paper_outline", {"mode": "revise"}))["error"] == "missing_fields"
        assert log.types() == []

        selected = await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-001",
                                                        "selected_reason": "clearest story"})  # fmt: skip
        assert selected["mode"] == "select" and selected["status"] == "selected"
        assert selected["selected_outline_ref"] == "outline-001"
        assert selected["paper_branch"] == "paper/r1" and selected["next_anchor"] == "write"
        assert selected["paths"]["selected_outline_path"] == "paper/selected_outline.json"
        assert selected["worktree_root"] and Path(selected["worktree_root"], ".git").is_file()
        assert [e["type"] for e in log.since()] == ["git.branch_prepared", "paper.outline_submitted", "quest.anchor_changed"]
        branch = pygit2.Repository(str(quest.root)).branches.local["paper/r1"]
        assert str(branch.peel(pygit2.Commit).id) == str(pygit2.Repository(str(quest.root)).branches.local[idea["branch"]].peel(pygit2.Commit).id)
        refs = await ok(c, "resolve_runtime_refs")
        assert refs["current_workspace_branch"] == "paper/r1" and refs["selected_outline_ref"] == "outline-001"
        # a selected outline is revised, not resubmitted as a candidate
        assert (await refused(c, "submit_paper_outline", {"outline_id": "outline-001", "title": "x"}))["error"] == "outline_selected"
        assert log.types() == []

        revised = await ok(c, "submit_paper_outline", {"mode": "revise", "title": "Residual adapters, revised",
                                                       "selected_reason": "tighter title"})  # fmt: skip
        assert revised["outline_id"] == "outline-001" and revised["status"] == "revised"
        assert revised["paper_branch"] == "paper/r1"  # the paper keeps its branch
        assert revised["paths"]["revised_outline_path"] == "paper/outlines/revisions/outline-001.json"
        [event] = log.since()
        assert event["type"] == "paper.outline_submitted" and event["outline"]["title"] == "Residual adapters, revised"
        assert event["outline"]["story_spine"] == outline["story_spine"]  # what was not given stays

        listed = await ok(c, "list_paper_outlines")
        assert listed["selected_outline_ref"] == "outline-001" and listed["count"] == 2
        by_id = {o["outline_id"]: o for o in listed["outlines"]}
        assert by_id["outline-001"]["is_selected"] and by_id["outline-001"]["status"] == "revised"
        assert by_id["outline-002"]["status"] == "candidate" and not by_id["outline-002"]["is_selected"]
        assert listed["selected_outline"]["paper_view"]["core_claims"][0]["claim_id"] == "C1"
        assert listed["selected_outline"]["detailed_outline"]["evidence_view"] == DETAILED["evidence_view"]
        assert log.types() == []

    selected_file = quest.root / "paper" / "selected_outline.json"
    assert '"outline_id": "outline-001"' in selected_file.read_text()
    assert "tighter title" in (quest.root / "paper" / "outline_selection.md").read_text()
    _check_replay(quest)


async def _selected_paper(c: mcp.Client) -> dict[str, Any]:
    """A research line with the outline above selected: the paper branch is open."""
    await _research_line(c)
    await ok(c, "submit_paper_outline", {"mode": "candidate", "title": "Residual adapters", "detailed_outline": DETAILED})
    return await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-001", "selected_reason": "clearest"})


async def test_the_writing_plan_is_compiled_from_the_selected_outline(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await _research_line(c)
        await ok(c, "submit_paper_outline", {"title": "Residual adapters", "detailed_outline": DETAILED})
        log = LogWatch(quest)
        refusal = await refused(c, "compile_outline_to_writing_plan", {})
        assert refusal["error"] == "no_selected_outline" and refusal["outline_candidates"] == ["outline-001"]
        assert (await refused(c, "compile_outline_to_writing_plan", {"detail": "everything"}))["error"] == "invalid_argument"
        assert log.types() == []
        await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-001"})
        log.since()

        plan = await ok(c, "compile_outline_to_writing_plan", {"detail": "full", "comment": "before drafting"})
        assert plan["outline_id"] == "outline-001" and plan["detail"] == "full"
        assert plan["writing_plan_path"] == "paper/writing_plan.json" and plan["writing_plan_md_path"] == "paper/writing_plan.md"
        body = plan["writing_plan"]
        assert body["validation_ok"] is True, body["validation_blockers"]
        jobs = [j["job_id"] for j in body["writing_jobs"]]
        assert jobs == ["intro", "method", "evaluation", "results", "A1", "A2", "A3", "A4", "limitations", "abstract"]
        by_id = {j["job_id"]: j for j in body["writing_jobs"]}
        assert by_id["results"]["evidence_lookup"] == ["r1"] and by_id["A1"]["claim_links"] == ["C1"]
        assert "state of the art" in by_id["limitations"]["must_do"]
        assert body["core_claims"][0]["claim_id"] == "C1" and body["story_spine"]["gap"]
        [event] = log.since()
        assert event["type"] == "paper.writing_plan_compiled" and len(event["jobs"]) == 10
        summary = await ok(c, "compile_outline_to_writing_plan", {})
        assert len(summary["writing_plan"]["writing_jobs"]) == 8  # summary shows the first eight jobs

    assert "### intro: Introduction" in (quest.root / "paper" / "writing_plan.md").read_text()
    _check_replay(quest)


DRAFT = """# Residual adapters for small data

## Introduction

Small-data fine-tuning overfits; a residual adapter fixes it.

## Method

We insert an adapter after block 3.

## Experiments

| setting | top-1 |
|---|---|
| adapter | 0.92 |

![gain](figures/gain.png)

## Conclusion

Late capacity regularises.
"""


def _write_manuscript(worktree: Path) -> None:
    paper = worktree / "paper"
    (paper / "figures").mkdir(parents=True)
    (paper / "draft.md").write_text(DRAFT)
    (paper / "references.bib").write_text("@article{he2016, title={Deep Residual Learning}}\n")
    (paper / "figures" / "gain.png").write_bytes(b"\x89PNG fake")
    (paper / "latex").mkdir()
    (paper / "latex" / "main.tex").write_text("\\section{Introduction}\nText.\n\\begin{table}x\\end{table}\n")


async def test_a_bundle_records_the_manuscript_its_files_and_claims_on_the_paper_branch(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        selected = await _selected_paper(c)
        worktree = Path(selected["worktree_root"])
        log = LogWatch(quest)
        assert (await refused(c, "submit_paper_bundle", {}))["error"] == "missing_manuscript"
        _write_manuscript(worktree)
        (worktree / "notes.md").write_text("not under paper/\n")
        (worktree / "paper" / "leak.md").symlink_to("/etc/hostname")
        for args, code in (
            ({"draft_path": "../../../../etc/passwd"}, "path_outside_quest"),
            ({"draft_path": "/etc/hostname"}, "path_outside_quest"),
            ({"draft_path": "paper/leak.md"}, "path_outside_root"),  # a link out of the quest
            ({"draft_path": "paper/missing.md"}, "paper_file_missing"),
            ({"draft_path": "notes.md"}, "manuscript_outside_paper"),
            ({"figure_paths": [".git/config"]}, "path_not_allowed"),
            ({"package_type": "camera_ready"}, "invalid_package_type"),
            ({"claims": [{"claim_id": "C1"}]}, "missing_fields"),
        ):
            assert (await refused(c, "submit_paper_bundle", args))["error"] == code, args
        assert log.types() == []

        bundle = await ok(c, "submit_paper_bundle", {
            "title": "Residual adapters", "summary": "first full draft", "latex_root_path": "paper/latex",
            "figure_paths": ["paper/figures/gain.png"],
            "claims": [{"claim_id": "C1", "statement": "The adapter reaches 0.92 top-1.", "evidence": ["r1"], "section": "Experiments"}],
        })  # fmt: skip
        assert bundle["tool_name"] == "submit_paper_bundle" and bundle["bundle_id"] == "bundle-001"
        assert bundle["package_type"] == "draft_checkpoint" and bundle["selected_outline_ref"] == "outline-001"
        assert bundle["paper_branch"] == "paper/r1" and bundle["next_anchor"] == "write"
        wt = selected["worktree_root"][len(str(quest.root)) + 1:]
        assert bundle["manuscript_paths"] == [f"{wt}/paper/draft.md", f"{wt}/paper/latex/main.tex"]
        roles = {f["role"]: f for f in bundle["files"]}
        assert set(roles) == {"draft", "latex", "references", "figure"}  # the bibliography found by default
        assert len(roles["draft"]["sha256"]) == 64 and roles["draft"]["bytes"] == len(DRAFT.encode())
        facts = bundle["manuscript_facts"]
        assert facts["sections_found"] == ["introduction", "method", "experiments", "conclusion"]
        assert facts["figure_count"] == 1 and facts["table_count"] == 2 and facts["language_violations"] == []
        assert bundle["paths"]["manifest_path"] == "paper/paper_bundle_manifest.json" and bundle["claim_count"] == 1
        events = log.since()
        assert [e["type"] for e in events] == ["paper.bundle_submitted"]  # the quest is in write already
        assert events[0]["manuscript_paths"] == bundle["manuscript_paths"] and events[0]["claim_stamp"] is None

        # a submission package needs clean wording: a manuscript naming the quest is refused
        (worktree / "paper" / "draft.md").write_text(DRAFT + "\nThis quest ran on a worktree.\n")
        refusal = await refused(c, "submit_paper_bundle", {"package_type": "submission"})
        assert refusal["error"] == "not_submission_ready"
        # and a required outline item nobody resolved blocks any bundle
        needs = {**DETAILED, "sections": [{"section_id": "analysis", "title": "Analysis", "required_items": ["depth-ablation"]}]}
        await ok(c, "submit_paper_outline", {"mode": "revise", "detailed_outline": needs})
        log.since()
        refusal = await refused(c, "submit_paper_bundle", {})
        assert refusal["error"] == "paper_contract_incomplete"
        assert refusal["unresolved_required_items"] == [{"section_id": "analysis", "item_id": "depth-ablation"}]
        assert log.types() == []

    manifest = (quest.root / "paper" / "paper_bundle_manifest.json").read_text()
    assert '"bundle_id": "bundle-001"' in manifest and '"figure_paths": [' in manifest
    _check_replay(quest)


async def test_the_contract_its_health_and_the_validators_say_what_blocks_the_paper(home: Home, quest: Quest) -> None:
    async with artifact_client(home) as c:
        await _research_line(c)
        log = LogWatch(quest)
        health = await c.call_tool("get_paper_contract_health", {"detail": "summary"})
        assert not health.is_error and health.structured_content is not None
        assert health.structured_content["ok"] is False and "submit_paper_outline" in health.structured_content["message"]
        assert (await c.call_tool("get_paper_contract", {})).structured_content["ok"] is False
        outline = await c.call_tool("validate_academic_outline", {})
        assert outline.structured_content["ok"] is False
        await ok(c, "submit_paper_outline", {"title": "Thin", "detailed_outline": {"contributions": ["a thing"]}})
        await ok(c, "submit_paper_outline", {"title": "Residual adapters", "detailed_outline": DETAILED})
        log.since()
        candidates = (await c.call_tool("get_paper_contract_health", {})).structured_content["outline_candidates"]
        assert [o["outline_id"] for o in candidates] == ["outline-001", "outline-002"]

        # a thin outline is not a paper plan: its health says so and recommends repairing it
        await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-001"})
        thin = (await c.call_tool("validate_academic_outline", {"detail": "full"})).structured_content
        assert thin["ok"] is False and "core_claims is empty" not in thin["academic_outline_validation"]["blockers"]
        assert any("mechanism_steps" in b for b in thin["academic_outline_validation"]["blockers"])
        h = (await ok(c, "get_paper_contract_health", {}))["paper_contract_health"]
        assert h["academic_outline_ready"] is False and h["writing_ready"] is False
        assert h["recommended_action"] == "repair_academic_outline_with_paper_outline"

        await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-002"})
        log.since()
        good = await ok(c, "validate_academic_outline", {})
        v = good["academic_outline_validation"]
        assert v["academic_outline_ready"] and v["analysis_plan_ready"] and v["claim_count"] == 1 and v["analysis_count"] == 4
        h = (await ok(c, "get_paper_contract_health", {"detail": "full"}))["paper_contract_health"]
        assert h["selected_outline_ref"] == "outline-002" and h["paper_branch"] == "paper/r1"
        assert h["contract_ok"] and h["writing_ready"] and h["required_count"] == h["ready_required_count"] == 1
        assert h["writing_plan_ready"] is False and h["recommended_action"] == "compile_outline_to_writing_plan"
        assert h["draft_status"] == "missing" and h["manuscript_ready"] is False and h["unresolved_required_items"] == []
        contract = (await ok(c, "get_paper_contract", {"detail": "full"}))["paper_contract_bundle"]
        assert contract["selected_outline_ref"] == "outline-002"
        body = contract["paper_contract"]
        assert body["story_spine"]["problem"] and body["core_claims"][0]["claim_id"] == "C1"
        assert body["evidence_boundaries"]["must_not_claim"] == ["state of the art"] and len(body["planned_analyses"]) == 4
        assert body["sections"][0]["resolved_items"] == ["r1"] and body["sections"][0]["status"] == "ready"
        summary = (await ok(c, "get_paper_contract", {"detail": "summary"}))["paper_contract_bundle"]["paper_contract"]
        assert summary["sections"][0]["required_item_count"] == 1
        assert log.types() == []  # queries and validators append nothing

        # the manuscript as it is now: wording and coverage
        worktree = quest.root / ".ds" / "worktrees" / "paper__r1"
        _write_manuscript(worktree)
        (worktree / "paper" / "draft.md").write_text(DRAFT + "\nWe ran this on the paper/r1 worktree.\n")
        lang = (await c.call_tool("validate_manuscript_language", {"detail": "full"})).structured_content
        found = lang["manuscript_language_validation"]
        assert lang["ok"] is False and found["blocker_count"] == 2 and found["file_count"] == 2
        assert {(x["term"], x["line"]) for x in found["violations"]} == {("worktree", 23), ("research branch", 23)}
        coverage = (await ok(c, "validate_manuscript_coverage", {"minimum_sections": 5}))["manuscript_coverage"]
        assert coverage["draft_present"] and coverage["canonical_sections"] == ["introduction", "method", "experiments", "conclusion"]
        assert coverage["language_firewall_ok"] is False and coverage["manuscript_ready"] is False
        assert coverage["table_count"] == 2 and coverage["figure_count"] == 1
        (worktree / "paper" / "draft.md").write_text(DRAFT)
        clean = await ok(c, "validate_manuscript_language", {})
        assert clean["manuscript_language_validation"]["blocker_count"] == 0
        coverage = (await ok(c, "validate_manuscript_coverage", {"minimum_sections": 5}))["manuscript_coverage"]
        assert coverage["manuscript_ready"] is True and coverage["submission_ready"] is False
        assert "no compiled PDF" in coverage["submission_blockers"]
        assert log.types() == []

        await ok(c, "compile_outline_to_writing_plan", {})
        await ok(c, "submit_paper_bundle", {"latex_root_path": "paper/latex", "figure_paths": ["paper/figures/gain.png"]})
        h = (await ok(c, "get_paper_contract_health", {}))["paper_contract_health"]
        assert h["bundle_status"] == "present" and h["draft_checkpoint_ready"] and h["manuscript_ready"]
        assert h["submission_ready"] is False and h["recommended_action"] == "prepare_submission_package"

    state = (quest.root / "paper" / "paper_line_state.json").read_text()
    assert '"manuscript_ready": true' in state
    _check_replay(quest)


async def test_a_writing_facing_campaign_ties_its_slices_to_outline_items(home: Home, quest: Quest) -> None:
    paper_fields = {
        "campaign_title": "Depth ablation", "campaign_goal": "Does depth matter?", "research_questions": ["RQ-depth"],
        "experimental_designs": ["ablate depth"],
        "todo_items": [{"todo_id": "todo-001", "slice_id": "depth", "item_id": "depth-ablation", "section_id": "analysis",
                        "research_question": "RQ-depth", "paper_role": "main_text", "claim_links": ["C1"]}],
        "slices": [{"slice_id": "depth", "title": "Adapter depth", "goal": "vary the depth"}],
    }  # fmt: skip
    async with artifact_client(home) as c:
        await _research_line(c)
        needs = {**DETAILED, "sections": [{"section_id": "analysis", "title": "Analysis", "required_items": ["depth-ablation"]}]}
        await ok(c, "submit_paper_outline", {"title": "Residual adapters", "detailed_outline": needs})
        log = LogWatch(quest)
        refusal = await refused(c, "create_analysis_campaign", paper_fields)
        assert refusal["error"] == "no_selected_outline" and "selected_outline_ref" in refusal["message"]
        assert refusal["outline_candidates"] == ["outline-001"]
        assert log.types() == []
        await ok(c, "submit_paper_outline", {"mode": "select", "outline_id": "outline-001"})
        refusal = await refused(c, "create_analysis_campaign", {**paper_fields, "selected_outline_ref": "outline-777"})
        assert refusal["error"] == "no_selected_outline"
        log.since()

        campaign = await ok(c, "create_analysis_campaign", {**paper_fields, "selected_outline_ref": "outline-001"})
        [event] = [e for e in log.since() if e["type"] == "artifact.analysis_campaign_created"]
        assert event["selected_outline_ref"] == "outline-001" and event["slice_items"] == {"depth": "depth-ablation"}
        assert event["research_questions"] == ["RQ-depth"] and event["todo_items"][0]["todo_id"] == "todo-001"
        h = (await ok(c, "get_paper_contract_health", {"detail": "full"}))["paper_contract_health"]
        assert h["unresolved_required_items"] == [{"section_id": "analysis", "item_id": "depth-ablation"}]
        assert h["blocking_open_supplementary_count"] == 1 and h["writing_ready"] is False
        assert h["recommended_next_stage"] == "analysis-campaign"

        await ok(c, "record_analysis_slice", {"campaign_id": campaign["campaign_id"], "slice_id": "depth",
                                              "metrics_summary": {"acc": 0.9}, "results": "depth 2 is enough"})  # fmt: skip
        h = (await ok(c, "get_paper_contract_health", {}))["paper_contract_health"]
        assert h["contract_ok"] and h["writing_ready"] and h["unresolved_required_count"] == 0
        assert h["blocking_open_supplementary_count"] == 0
        # a plain campaign (no paper fields) still needs no outline
        await ok(c, "create_analysis_campaign", {"campaign_title": "Seeds", "campaign_goal": "variance", "slices": ["s"]})
    _check_replay(quest)
