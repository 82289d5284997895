"""The `artifacts` projection never changes a record it has put in its state: a later
event replaces the record (and any list or dict inside it) with a new one, so whoever
was handed a record keeps seeing what it was when they got it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from ds_events.home import Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

from .support import confirm_args


def test_records_handed_out_do_not_change_when_later_events_update_them(quest: Quest) -> None:
    artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "first idea"}))
    branch = git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1"))
    artifacts.publish_baseline(quest, cmd.PublishBaseline(payload={"baseline_id": "resnet20", "title": "ResNet-20"}))
    artifacts.create_analysis_campaign(
        quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b"]), create_worktrees=False
    )
    state = quest.state("artifacts")
    held: dict[str, Any] = {
        "recent ideas": state.recent["idea"],
        "branch": state.branches["run/r1"],
        "baseline": state.baselines["resnet20"],
        "campaign": state.campaigns["campaign-001"],
        "slice": state.campaigns["campaign-001"].slices[0],
        "quest status": state.quest,
    }
    before = {name: msgspec.to_builtins(value) for name, value in held.items()}

    # One event that updates each record held above.
    artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "second idea"}))
    assert branch.worktree_path is not None
    (Path(branch.worktree_path) / "train.py").write_text("print('train')\n")
    checkpoint = git_service.checkpoint(quest, cmd.Checkpoint(message="train"))
    artifacts.confirm_baseline(quest, cmd.ConfirmBaseline(**confirm_args()))
    artifacts.record_analysis_slice(quest, cmd.RecordAnalysisSlice(campaign_id="campaign-001", slice_id="s1"))

    after = {name: msgspec.to_builtins(value) for name, value in held.items()}
    assert after == before
    # ... while the state itself moved on.
    now = quest.state("artifacts")
    assert now.recent["idea"] == ["idea-0001", "idea-0002"]
    assert now.branches["run/r1"].head_sha == checkpoint.sha
    assert now.baselines["resnet20"].confirmed is not None
    assert [s.status for s in now.campaigns["campaign-001"].slices] == ["completed", "pending"]
    assert now.quest.counts["artifact.recorded"] == before["quest status"]["counts"]["artifact.recorded"] + 1
