"""The research view keeps each idea's latest ``research.idea_submitted`` event (not a
copy of its fields): a revision keeps the lineage the idea was created with; the stored
lines keep their shape; a snapshot of the shape before (projection version 1) is
refused and the view folded again from the log, never decoded into the new shape."""

from __future__ import annotations

import json
from pathlib import Path

from ds_events.events import decode_line, encode
from ds_events.events.research import IdeaSubmitted
from ds_events.home import Home
from projections import fold, research as research_view

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def _numbered(*events: IdeaSubmitted) -> list[IdeaSubmitted]:
    import msgspec

    return [msgspec.structs.replace(e, seq=i, ts=f"2026-01-01T00:00:{i:02d}Z") for i, e in enumerate(events, 1)]


def test_an_idea_is_its_latest_event_and_a_revision_keeps_the_lineage_it_was_created_with() -> None:
    created, revised = _numbered(
        IdeaSubmitted(idea_id="idea-0001", title="Warmup", branch="idea/q-idea-0001", branch_no="001", worktree="wt/1",
                      parent_branch="main", lineage_intent="continue_line", foundation_reason="the baseline",
                      foundation_ref={"kind": "branch", "ref": "main", "branch": "main", "label": "branch main"},
                      hypothesis="warmup helps", details={"mechanism_family": "schedule"}),
        # A revision that names other lineage (a hand-made event: the service copies the old one).
        IdeaSubmitted(idea_id="idea-0001", title="Warmup, longer", mode="revise", branch="idea/elsewhere",
                      parent_branch="other", foundation_ref={"kind": "branch", "ref": "other", "branch": "other"},
                      hypothesis="10 epochs of warmup help"),
    )  # fmt: skip
    first = fold(research_view.PROJECTION, [created])
    assert first.ideas["idea-0001"].submitted is created  # the event itself, not a copy of it
    state = fold(research_view.PROJECTION, [created, revised])
    idea = state.ideas["idea-0001"]
    assert (idea.revisions, idea.created_seq, idea.created_at, idea.updated_seq) == (1, 1, created.ts, 2)
    kept = idea.submitted
    assert (kept.title, kept.hypothesis, kept.mode, kept.seq) == ("Warmup, longer", "10 epochs of warmup help", "revise", 2)
    assert (kept.branch, kept.branch_no, kept.worktree, kept.parent_branch) == ("idea/q-idea-0001", "001", "wt/1", "main")
    assert kept.foundation_ref == created.foundation_ref and kept.foundation_reason == "the baseline"
    assert kept.details == {}  # the text is the revision's (the service merges the details itself)
    page = research_view.render(state)["ideas/idea-0001/idea.md"].decode()
    assert "# Idea idea-0001: Warmup, longer" in page and "- revisions: 1" in page and "branch main — the baseline" in page


def test_the_recorded_idea_lines_keep_their_exact_bytes() -> None:
    lines = [line for line in (FIXTURES / "demo_quest.jsonl").read_bytes().splitlines() if b'"research.' in line]
    assert lines, "the demo log records an idea"
    for line in lines:
        assert encode(decode_line(line)) == line


def test_a_snapshot_of_the_version_before_is_refused_and_the_view_folded_again(home: Home) -> None:
    quest = home.create_quest("Snapshots", quest_id="qs")
    quest.emit(IdeaSubmitted(idea_id="idea-0001", title="Warmup", submission_mode="candidate", hypothesis="it helps"))
    quest.views.save_snapshots()
    path = quest.views.snapshot_dir / "research.json"
    quest.close()
    snap = json.loads(path.read_bytes())
    assert snap["version"] == research_view.PROJECTION.version == 2
    assert snap["state"]["ideas"]["idea-0001"]["submitted"]["type"] == "research.idea_submitted"

    def reopened_with(version: int, state: dict[str, object]) -> research_view.State:
        path.write_text(json.dumps({**snap, "version": version, "state": state}))
        with home.open_quest("qs") as again:
            return again.state("research")

    # A snapshot of this version is used as it is (it says what the log does not).
    planted = {**snap["state"], "active_idea_id": "from-the-snapshot"}
    assert reopened_with(2, planted).active_idea_id == "from-the-snapshot"
    # Version 1 kept the idea's fields flat: refused, whether its state would decode
    # into the new shape (no ideas) or not (a flat idea).
    assert reopened_with(1, planted).active_idea_id is None
    flat = {**snap["state"], "ideas": {"idea-0001": {"idea_id": "idea-0001", "title": "Old copy", "hypothesis": "x"}}}
    state = reopened_with(1, flat)
    assert state.ideas["idea-0001"].submitted.title == "Warmup" and state.ideas["idea-0001"].submitted.hypothesis == "it helps"
