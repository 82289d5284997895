"""The `artifacts` view's snapshot keeps the events themselves (a main run, a
confirmation, a campaign and a slice's outcome are stored as the events that recorded
them), and a snapshot of an older state shape is refused (by its version) and refolded
from the log, never decoded into the new shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from ds_events.events.artifact import MainExperimentRecorded
from ds_events.home import Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import commands as cmd
from ds_events.views import Views
from projections import fold
from projections.artifacts import PROJECTION, document

from .support import confirm_args


def _built(quest: Quest) -> None:
    artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "label smoothing"}))
    artifacts.confirm_baseline(quest, cmd.ConfirmBaseline(**confirm_args()))
    artifacts.record_main_experiment(
        quest, cmd.RecordMainExperiment(run_id="r1", title="Smoothing 0.1", metrics_summary={"top1": 0.93, "nll": 0.29})
    )
    artifacts.create_analysis_campaign(
        quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b"]), create_worktrees=False
    )
    artifacts.record_analysis_slice(quest, cmd.RecordAnalysisSlice(campaign_id="campaign-001", slice_id="s1", summary="fine"))


def _snapshot(quest: Quest) -> tuple[Path, dict[str, Any]]:
    quest.views.save_snapshots()
    path = quest.views.snapshot_dir / "artifacts.json"
    return path, json.loads(path.read_bytes())


def _reopened(quest: Quest) -> Views:
    return Views(quest.log, quest.root, [PROJECTION], snapshot_dir=quest.views.snapshot_dir).load()


def test_the_snapshot_keeps_the_events_and_a_reopened_view_starts_from_it(quest: Quest) -> None:
    _built(quest)
    _path, snap = _snapshot(quest)
    assert snap["version"] == PROJECTION.version == 6
    state = snap["state"]
    assert state["runs"]["r1"]["type"] == "artifact.main_experiment_recorded" and state["runs"]["r1"]["seq"] > 0
    assert state["baselines"]["resnet20"]["confirmed"]["type"] == "artifact.baseline_confirmed"
    campaign = state["campaigns"]["campaign-001"]
    assert campaign["created"]["type"] == "artifact.analysis_campaign_created"
    assert [s["outcome"] and s["outcome"]["summary"] for s in campaign["slices"]] == ["fine", None]
    views = _reopened(quest)
    assert views.applied == 0  # it started from the snapshot
    assert msgspec.json.encode(views.state("artifacts")) == msgspec.json.encode(fold(PROJECTION, quest.log.read()))


def test_a_snapshot_of_an_older_version_is_refused_and_the_state_refolded(quest: Quest) -> None:
    _built(quest)
    path, snap = _snapshot(quest)
    snap["version"] = 4
    snap["state"]["runs"]["r1"]["title"] = "what an old snapshot said"
    path.write_text(json.dumps(snap))
    views = _reopened(quest)
    assert views.applied == quest.log.last_seq  # refolded from the first event
    assert views.state("artifacts").runs["r1"].title == "Smoothing 0.1"


def test_a_snapshot_in_the_old_shape_is_refused_by_its_version_not_decoded_into_the_new_one(quest: Quest) -> None:
    """Version 4 kept copies (a run as {run, title, ..., seq, ts}). Such a dict would
    decode as the event, silently, without its envelope (no id, no quest): what refuses
    it is the snapshot's version, which the shape change bumped."""
    _built(quest)
    path, snap = _snapshot(quest)
    state = quest.state("artifacts")
    old_run = document(state.runs["r1"])  # the old MainRun shape
    assert msgspec.convert(old_run, MainExperimentRecorded).id == ""  # the hazard the version guards against
    snap["version"] = 4
    snap["state"]["runs"] = {"r1": old_run}
    snap["state"]["records"] = {rid: document(rec) for rid, rec in state.records.items()}  # the old Record shape
    path.write_text(json.dumps(snap))
    views = _reopened(quest)
    assert views.applied == quest.log.last_seq  # refolded from the first event
    assert views.state("artifacts").runs["r1"] == state.runs["r1"] and state.runs["r1"].id


def test_the_run_document_is_the_event_without_its_envelope(quest: Quest) -> None:
    _built(quest)
    run = quest.state("artifacts").runs["r1"]
    doc = document(run)
    assert doc["run"] == "r1" and doc["seq"] == run.seq and doc["ts"] == run.ts
    assert not {"type", "id", "v", "quest_id", "actor", "run_id", "prev", "more"} & set(doc)
    on_disk = json.loads((quest.root / "artifacts/runs/r1.json").read_bytes())
    assert {k: on_disk[k] for k in doc} == doc  # the materialised record holds the same document
