"""The Canvas in a real browser: each view draws the daemon's nodes as an SVG graph, and
clicking a node shows its details (git state, metrics against the baseline, artifact
payload, changed files, related actions) as ``/api/quests/{id}/nodes/{ref}`` serves them."""

from __future__ import annotations

import re
import urllib.parse
import uuid
from typing import Any

import pytest

from ds_events.home import Home

from .harness import Server


def _node(page: Any, node_id: str) -> Any:
    return page.locator(f'#canvas .node[data-id="{node_id}"]')


def _details(server: Server, quest_id: str, ref: str) -> dict[str, Any]:
    status, body = server.api(f"/api/quests/{quest_id}/nodes/{urllib.parse.quote(ref, safe='')}")
    assert status == 200, body
    return body


@pytest.mark.parametrize("view", ["branch", "event", "stage"])
def test_each_canvas_view_draws_every_node_and_edge_of_the_daemon(open_page: Any, server: Server, demo: tuple[Home, str], view: str) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    status, doc = server.api(f"/api/quests/{quest_id}/canvas?view={view}")
    assert status == 200 and doc["nodes"]
    page = open_page(server, f"/q/{quest_id}")
    page.locator(f'#canvas .tab[data-view="{view}"]').click()
    expect(page.locator("#canvas .board")).to_have_attribute("data-view", view)
    expect(page.locator("#canvas .node")).to_have_count(len(doc["nodes"]))
    drawn = page.locator("#canvas .node").evaluate_all("els => els.map(e => e.dataset.id)")
    assert sorted(drawn) == sorted(n["id"] for n in doc["nodes"])
    edges = page.locator("#canvas path.edge").evaluate_all("els => els.map(e => [e.dataset.source, e.dataset.target])")
    assert sorted(edges) == sorted([e["source"], e["target"]] for e in doc["edges"])


def test_clicking_a_branch_node_shows_its_git_state_metrics_and_changed_files(page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    run_branch = next(n for n in server.api(f"/api/quests/{quest_id}/canvas?view=branch")[1]["nodes"] if n["run_kind"] == "main_experiment")
    want = _details(server, quest_id, f"branch:{run_branch['id']}")
    page.locator(f'.quest-row[data-quest="{quest_id}"]').click()  # from the list, as a person would
    _node(page, run_branch["id"]).click()
    details = page.locator("#details")
    expect(details.locator(".node-title")).to_have_attribute("data-node", f"branch:{run_branch['id']}")
    git = want["git"]
    expect(details.locator(".d-git code").first).to_have_attribute("title", git["head_commit"])
    expect(details.locator(".ahead-behind")).to_contain_text(f"{git['ahead']} ahead, {git['behind']} behind {git['parent_ref']}")
    metric = want["metrics"]["primary_metric"]
    comparison = want["metrics"]["comparisons"][metric]
    row = details.locator(f'.d-metrics tr[data-metric="{metric}"]')
    expect(row.locator("td").nth(0)).to_have_text(_num(comparison["value"]))
    expect(row.locator("td").nth(1)).to_have_text(_num(comparison["baseline"]))
    expect(row.locator("td").nth(2)).to_have_class(re.compile("delta-up" if comparison["better"] else "delta-down"))
    files = [f["path"] for f in want["changed_files"]["files"]]
    assert files, "the run branch changed no file: the demo should commit its results"
    expect(details.locator(".d-files li code")).to_have_text(files)
    expect(details.locator(".d-artifact pre")).to_contain_text(want["artifact"]["id"])


def test_clicking_an_event_node_shows_its_artifact_payload_and_a_stage_node_its_events(page: Any, server: Server, demo: tuple[Home, str]) -> None:
    from playwright.sync_api import expect

    _, quest_id = demo
    page.goto(server.page_url(f"/q/{quest_id}"))
    page.locator('#canvas .tab[data-view="event"]').click()
    expect(page.locator("#canvas .board")).to_have_attribute("data-view", "event")
    decision = next(n for n in server.api(f"/api/quests/{quest_id}/canvas?view=event")[1]["nodes"] if n["event_kind"] == "decision")
    want = _details(server, quest_id, decision["id"])
    _node(page, decision["id"]).click()
    details = page.locator("#details")
    expect(details.locator(".node-title")).to_have_attribute("data-node", decision["id"])
    expect(details.locator(".d-artifact pre")).to_contain_text(want["artifact"]["payload"]["payload"]["reason"])
    expect(details.locator(".d-related li")).to_have_count(len(want["node"]["actions"]))
    expect(details.locator(".d-git dd").first).to_have_text(decision["branch"])

    page.locator('#canvas .tab[data-view="stage"]').click()
    expect(page.locator("#canvas .board")).to_have_attribute("data-view", "stage")
    stage = server.api(f"/api/quests/{quest_id}/canvas?view=stage")[1]["nodes"][0]
    _node(page, stage["id"]).press("Enter")  # the keyboard selects too
    expect(details.locator(".node-title")).to_have_attribute("data-node", stage["id"])
    expect(details.locator(".d-related li")).to_have_count(len(stage["event_refs"]))
    expect(_node(page, stage["id"])).to_have_class(re.compile(r"\bselected\b"))


def _num(x: float) -> str:
    """How the page prints a metric (six significant digits, no trailing zeros)."""
    return f"{x:.6g}"


def test_the_canvas_follows_records_another_process_appends(page: Any, server: Server) -> None:
    from playwright.sync_api import expect

    from ds_events.home import Quest
    from ds_events.services import artifacts
    from ds_events.services.artifacts.commands import Record

    quest_id = f"web-canvas-{uuid.uuid4().hex[:8]}"
    assert server.api("/api/quests", "POST", {"title": "Canvas follows the log", "id": quest_id})[0] == 201
    page.goto(server.page_url(f"/q/{quest_id}"))
    page.locator('#canvas .tab[data-view="event"]').click()
    expect(page.locator("#canvas .board")).to_contain_text("Nothing here yet.")
    with Quest(server.home, quest_id, actor="mcp:artifact") as quest:
        made = artifacts.record(quest, Record(payload={"kind": "decision", "verdict": "go", "action": "continue", "reason": "drawn live"}))
    _node(page, f"decision:{made.artifact_id}").click()  # appears without a reload
    expect(page.locator("#details .d-artifact pre")).to_contain_text("drawn live")



def test_the_selected_nodes_details_follow_what_another_process_appends(page: Any, server: Server) -> None:
    """The details pane is not a snapshot: when the log moves, the Canvas redraws and the
    node still selected has its details fetched again (here: a new related action)."""
    from playwright.sync_api import expect

    from ds_events.home import Quest
    from ds_events.services import artifacts
    from ds_events.services.artifacts.commands import Record

    quest_id = f"web-details-{uuid.uuid4().hex[:8]}"
    assert server.api("/api/quests", "POST", {"title": "Details follow the log", "id": quest_id})[0] == 201
    with Quest(server.home, quest_id, actor="mcp:artifact") as quest:
        artifacts.record(quest, Record(payload={"kind": "decision", "verdict": "go", "action": "continue", "reason": "first"}))
    page.goto(server.page_url(f"/q/{quest_id}"))
    _node(page, "main").click()
    related = page.locator("#details .d-related li")
    first = server.api(f"/api/quests/{quest_id}/nodes/branch:main")[1]["node"]
    before = len(first["related"]) + len(first.get("actions") or [])
    expect(related).to_have_count(before)
    with Quest(server.home, quest_id, actor="mcp:artifact") as quest:
        artifacts.record(quest, Record(payload={"kind": "decision", "verdict": "go", "action": "continue", "reason": "second, live"}))
    want = server.api(f"/api/quests/{quest_id}/nodes/branch:main")[1]["node"]
    assert len(want["related"]) + len(want.get("actions") or []) > before  # the daemon's answer did change
    expect(related).to_have_count(len(want["related"]) + len(want.get("actions") or []))  # no reload, no click
    expect(page.locator("#details .node-title")).to_have_attribute("data-node", "branch:main")

def test_the_layout_places_every_node_apart_with_edges_pointing_down_even_around_a_cycle(page: Any) -> None:
    nodes = [{"id": c} for c in "abcdefg"]
    edges = [["a", "b"], ["b", "c"], ["c", "a"], ["a", "d"], ["d", "e"], ["b", "e"], ["x", "a"], ["f", "f"]]  # a cycle, an unknown end, a self loop
    placed = page.evaluate(
        """async ([nodes, edges]) => {
            const { layout } = await import("/static/layout.js");
            const g = layout(nodes, edges.map(([source, target]) => ({ source, target })), { w: 100, h: 40 });
            return { nodes: Object.fromEntries(g.nodes), edges: g.edges.map(e => [e.source, e.target, e.back]), width: g.width, height: g.height };
        }""",
        [nodes, edges],
    )
    boxes = placed["nodes"]
    assert sorted(boxes) == list("abcdefg")
    for a in boxes:
        for b in boxes:
            if a < b:
                ba, bb = boxes[a], boxes[b]
                assert ba["x"] + 100 <= bb["x"] or bb["x"] + 100 <= ba["x"] or ba["y"] != bb["y"], f"{a} and {b} overlap"
    assert all(0 <= p["x"] and p["x"] + 100 <= placed["width"] and p["y"] + 40 <= placed["height"] for p in boxes.values())
    kept = {(s, t): back for s, t, back in placed["edges"]}
    assert set(kept) == {("a", "b"), ("b", "c"), ("c", "a"), ("a", "d"), ("d", "e"), ("b", "e")}  # unknown ends and self loops left out
    assert [k for k, back in kept.items() if back] == [("c", "a")]  # the one edge that closes the cycle
    for (s, t), back in kept.items():
        if not back:
            assert boxes[t]["y"] > boxes[s]["y"], f"{s} -> {t} does not point down"
