"""The workflow projection folds hand-built events: one entry per meaningful event,
changed files newest first and distinct, a bounded window with exact counts."""

from __future__ import annotations

from ds_events.events import Event
from ds_events.events.artifact import ArtifactRecorded, BaselineConfirmed, GitCheckpointed
from ds_events.events.core import ConversationMessage, LogRecovered, QuestAnchorChanged, QuestCreated
from ds_events.events.memory import CardWritten
from ds_events.events.tool import ToolCallFinished, ToolCallStarted
from projections import fold, quest_projections, workflow as wf


def _numbered(events: list[Event]) -> list[Event]:
    import msgspec

    return [msgspec.structs.replace(e, seq=i, ts=f"2026-01-01T00:00:{i % 60:02d}Z") for i, e in enumerate(events, 1)]


def test_workflow_is_a_registered_quest_projection() -> None:
    assert {"workflow", "node_traces"} <= {p.name for p in quest_projections()}


def test_one_entry_per_meaningful_event_and_none_for_bookkeeping() -> None:
    events = _numbered([
        QuestCreated(title="ResNet", brief="reproduce it"),
        ConversationMessage(role="user", content="please   start\nnow"),
        QuestAnchorChanged(anchor="baseline"),
        ArtifactRecorded(artifact_id="idea-0001", kind="idea", payload={"title": "Warmup", "summary": "5 epochs"}),
        GitCheckpointed(sha="abc", message="first\nbody", branch="main"),
        LogRecovered(reason="torn", offset=0, length=1, quarantine_path="q"),
    ])  # fmt: skip
    state = fold(wf.PROJECTION, events)
    kinds = [(e.seq, e.entry_kind) for e in state.entries]
    assert kinds == [(1, "quest"), (2, "message"), (3, "quest"), (4, "artifact"), (5, "checkpoint")]
    assert state.entries[1].summary == "please start now"
    assert state.entries[3].title == "idea: Warmup" and state.entries[3].ref == "idea-0001"
    assert state.entries[4].summary == "first"
    assert state.counts == {"quest": 2, "message": 1, "artifact": 1, "checkpoint": 1}
    assert state.last_seq == 6


def test_changed_files_are_newest_first_distinct_and_come_from_what_events_say() -> None:
    events = _numbered([
        ArtifactRecorded(artifact_id="run-0001", kind="run", payload={"paths": ["runs/1/log.txt"]}),
        CardWritten(card_id="k-1", kind="knowledge", title="t"),
        BaselineConfirmed(baseline_id="b", baseline_path="baselines/b", contract_path="baselines/b/json/metric_contract.json",
                          contract={}, metrics_summary={}, primary_metric="acc"),
        ArtifactRecorded(artifact_id="run-0001", kind="run", payload={"paths": ["runs/1/log.txt"]}),
    ])  # fmt: skip
    state = fold(wf.PROJECTION, events)
    newest_first = list(reversed(state.changed_files))
    assert newest_first == [
        "runs/1/log.txt",
        "artifacts/runs/run-0001.json",
        "baselines/b/json/metric_contract.json",
        "memory/knowledge/k-1.md",
    ]


def test_tool_calls_make_entries_and_a_finish_updates_its_started_entry() -> None:
    events = _numbered([
        ToolCallStarted(call_id="c1", namespace="bash_exec", tool="bash_exec"),
        ToolCallFinished(call_id="c2", namespace="memory", tool="write", status="error", error_code="invalid_kind"),
        ToolCallFinished(call_id="c1", namespace="bash_exec", tool="bash_exec", status="ok"),
    ])  # fmt: skip
    state = fold(wf.PROJECTION, events)
    assert [(e.ref, e.title, e.status, e.summary) for e in state.entries] == [
        ("c1", "bash_exec.bash_exec", "ok", ""),
        ("c2", "memory.write", "error", "invalid_kind"),
    ]
    assert state.counts == {"tool_call": 2}


def test_the_window_is_bounded_and_counts_cover_the_whole_history() -> None:
    events = []
    for i in range(5000):
        if i % 2:
            events.append(ConversationMessage(role="user", content=f"m{i}"))
        else:
            events.append(ArtifactRecorded(artifact_id=f"progress-{i}", kind="progress", payload={"message": "x"}))
    state = fold(wf.PROJECTION, _numbered(events))
    assert len(state.entries) == wf.WINDOW
    assert [e.seq for e in state.entries] == list(range(5001 - wf.WINDOW, 5001))
    assert state.counts == {"message": 2500, "artifact": 2500}
    assert len(state.changed_files) == wf.WINDOW
    assert state.changed_files[-1] == "artifacts/progress/progress-4998.json"
