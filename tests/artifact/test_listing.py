"""The artifacts domain's listings (``services/artifacts/listing.py``): the newest records
with the counts per kind, and the branch graph, as the daemon serves them."""

from __future__ import annotations

import msgspec
import pytest

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.services.artifacts.checkpoints import checkpoint
from ds_events.services.artifacts.commands import Checkpoint, Record
from ds_events.services.artifacts.listing import ArtifactList, branch_graph, list_artifacts
from ds_events.services.artifacts.records import record


def _record(quest: Quest, kind: str, title: str) -> str:
    return record(quest, Record(payload={"kind": kind, "title": title})).artifact_id


def test_the_newest_records_oldest_first_with_the_counts_of_every_kind(quest: Quest) -> None:
    ideas = [_record(quest, "idea", f"idea {i}") for i in range(4)]
    milestone = _record(quest, "milestone", "m")
    listed = list_artifacts(quest, limit=3)
    assert isinstance(listed, ArtifactList)
    assert [r.artifact_id for r in listed.records] == [ideas[2], ideas[3], milestone]
    assert listed.counts == {"idea": 4, "milestone": 1} and listed.quest_id == "q1"
    assert listed.seq == quest.log.last_seq
    only = list_artifacts(quest, limit=2, kind="idea")
    assert [r.artifact_id for r in only.records] == ideas[2:]
    assert only.counts == listed.counts  # the counts are the quest's, whatever the filter


def test_a_kind_the_quest_has_none_of_is_invalid_filter_naming_the_kinds(quest: Quest) -> None:
    with pytest.raises(Invalid) as refused:
        list_artifacts(quest, limit=5, kind="idea")
    assert refused.value.code == "invalid_filter" and "none" in refused.value.message
    _record(quest, "milestone", "m")
    with pytest.raises(Invalid) as refused:
        list_artifacts(quest, limit=5, kind="idea")
    assert refused.value.details == {"argument": "kind"} and "milestone" in refused.value.message


def test_the_answer_encodes_as_the_route_always_did(quest: Quest) -> None:
    """The result is typed; its JSON is the dict the route built before (same keys, same
    order, the records as their builtins)."""
    _record(quest, "idea", "x")
    listed = list_artifacts(quest, limit=10)
    before = {"quest_id": listed.quest_id, "seq": listed.seq, "counts": listed.counts, "records": msgspec.to_builtins(listed.records)}
    assert msgspec.json.encode(listed) == msgspec.json.encode(before)


def test_the_branch_graph_names_the_quest_first_and_is_truncated_at_max_commits(quest: Quest) -> None:
    for i in range(3):
        checkpoint(quest, Checkpoint(message=f"commit {i}", allow_empty=True))
    graph = branch_graph(quest, max_commits=2)
    assert list(graph) == ["quest_id", "active_branch", "branches", "commits", "truncated"]
    assert graph["quest_id"] == "q1" and graph["active_branch"] == "main"
    assert [b["name"] for b in graph["branches"]] == ["main"]
    assert len(graph["commits"]) == 2 and graph["truncated"]
    assert [c["message"] for c in graph["commits"]] == ["commit 1", "commit 2"]  # oldest first
    assert not branch_graph(quest, max_commits=100)["truncated"]
