"""services/read_models on a quest built by the real services: the branch view against
the real pygit2 repository, node traces, errors with stable codes, the SVG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from ds_events.errors import Invalid, NotFound
from ds_events.home import Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts.commands import Checkpoint, PrepareBranch, Record
from ds_events.services.quest import read_models as read_models
from projections.canvas_svg import render_svg
from tests.read_models.support import build_quest

_NODE_FIELDS = {
    "ref", "label", "branch_kind", "tier", "mode", "parent_ref", "compare_base", "current", "head", "updated_at",
    "subject", "commit_count", "ahead", "behind", "run_id", "run_kind", "idea_id", "worktree_root", "latest_metric",
    "latest_summary", "recent_artifacts",
}  # fmt: skip


def test_branch_view_reads_git_refs_and_joins_quest_records(quest: Quest) -> None:
    made = build_quest(quest)
    run_dir = quest.root / ".ds" / "worktrees" / "run__warm-1"
    (run_dir / "train.py").write_text("print('train')\n")
    git.checkpoint(quest, Checkpoint(message="train script", branch="run/warm-1"))
    git.prepare_branch(quest, PrepareBranch(branch="paper/draft", branch_kind="paper", create_worktree=False,
                                            start_point="run/warm-1"))  # fmt: skip
    graph = read_models.canvas(quest, "branch")
    nodes = {n["ref"]: n for n in graph["nodes"]}
    assert set(nodes) == {"main", "run/warm-1", "paper/draft"}
    assert all(_NODE_FIELDS <= set(n) for n in nodes.values())
    repo = quest.repo()
    run = nodes["run/warm-1"]
    assert run["head"] == str(repo.branches.local["run/warm-1"].target)
    assert (run["parent_ref"], run["ahead"], run["behind"], run["commit_count"]) == ("main", 1, 0, 1)
    assert run["compare_base"] == str(repo.branches.local["main"].target)
    assert (run["run_id"], run["idea_id"], run["mode"], run["tier"]) == ("warm-1", made["idea"], "worktree", 1)
    assert run["subject"] == "train script" and run["recent_artifacts"] == ["run-0001"]
    paper = nodes["paper/draft"]
    assert (paper["parent_ref"], paper["tier"], paper["mode"], paper["ahead"]) == ("run/warm-1", 2, "ref", 0)
    assert nodes["main"]["parent_ref"] is None and nodes["main"]["tier"] == 0
    assert [n["ref"] for n in graph["nodes"] if n["current"]] == ["run/warm-1"]  # a branch without worktree is not activated
    assert {(e["source"], e["target"], e["relation"]) for e in graph["edges"]} == {
        ("main", "run/warm-1", "branch"), ("run/warm-1", "paper/draft", "branch"),
    }  # fmt: skip
    assert graph["views"]["ideas"] == [
        {"idea_id": made["idea"], "title": "Linear warmup", "branch": "main", "branches": ["run/warm-1"], "seq": 5}
    ]
    assert graph["views"]["analysis"] == []


def test_workflow_and_node_traces_follow_the_log_as_it_grows(quest: Quest) -> None:
    build_quest(quest)
    before = read_models.workflow(quest, limit=3)
    assert [e["entry_kind"] for e in before["entries"]] == ["memory", "message", "artifact"]
    assert all({"seq", "ts", "entry_kind", "title", "summary"} <= set(e) for e in before["entries"])
    assert "status" not in before["entries"][0] and before["entries"][1]["summary"] == "Smoke run done."
    assert before["changed_files"][:2] == [f"memory/knowledge/{before['entries'][0]['ref']}.md", "runs/warm-1/log.txt"]
    artifacts.record(quest, Record(payload={"kind": "milestone", "title": "Smoke passes"}))
    after = read_models.workflow(quest)
    assert after["seq"] == before["seq"] + 1 and after["entries"][0]["title"] == "milestone: Smoke passes"
    traces = read_models.node_traces(quest)
    kinds = {n["node_kind"] for n in traces["nodes"]}
    assert kinds == {"event_node", "stage_node", "branch_node"}
    one = read_models.node_trace(quest, "milestone:milestone-0001")
    assert one["stage"] == "experiment" and one["actions"][0]["type"] == "artifact.recorded"
    stage = read_models.node_trace(quest, "stage:run/warm-1:experiment")
    assert [r["ref"] for r in stage["related"]] == ["run:run-0001", "milestone:milestone-0001"]
    branch = read_models.node_trace(quest, "branch:run/warm-1")
    assert branch["node_kind"] == "branch_node" and branch["related"][0]["ref"] == "stage:run/warm-1:experiment"


def test_bad_input_raises_stable_codes_and_changes_nothing(quest: Quest) -> None:
    build_quest(quest)
    seq = quest.log.last_seq
    with pytest.raises(NotFound) as unknown:
        read_models.node_trace(quest, "idea:nope")
    assert unknown.value.to_dict()["error"] == "unknown_node" and unknown.value.to_dict()["ref"] == "idea:nope"
    for view in ("graph", "", "BRANCH"):
        with pytest.raises(Invalid) as bad:
            read_models.canvas(quest, view)
        assert bad.value.code == "invalid_view"
    with pytest.raises(Invalid) as bad_svg:
        read_models.canvas_svg(quest, "tree")
    assert bad_svg.value.code == "invalid_view"
    for limit in (0, -1, 10_000, True):
        with pytest.raises(Invalid) as bad_limit:
            read_models.workflow(quest, limit=limit)
        assert bad_limit.value.code == "invalid_limit"
    assert quest.log.last_seq == seq


@pytest.mark.parametrize("view", ["branch", "event", "stage"])
def test_svg_parses_and_shows_every_node_label(quest: Quest, view: str) -> None:
    build_quest(quest)
    artifacts.record(quest, Record(payload={"kind": "idea", "title": 'a <b> & "c" idea'}))
    graph = read_models.canvas(quest, view)
    svg = read_models.canvas_svg(quest, view)
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert graph["nodes"] and all(n["label"] in titles for n in graph["nodes"])
    lines = list(root.iter("{http://www.w3.org/2000/svg}line"))
    assert len(lines) == len(graph["edges"])
    assert render_svg(graph) == svg  # deterministic


def test_svg_escapes_labels_and_lays_edges_downwards() -> None:
    graph = {"nodes": [{"id": "a", "label": "</svg><script>"}, {"id": "b", "label": "b & c"}],
             "edges": [{"source": "a", "target": "b", "relation": "x\"y"}]}  # fmt: skip
    root = ET.fromstring(render_svg(graph))
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == ["</svg><script>", "b & c"]
    (line,) = root.iter("{http://www.w3.org/2000/svg}line")
    assert float(line.get("y2")) > float(line.get("y1"))
