"""A symbolic link inside the quest (planted by an agent's shell, or copied in with the
quest) never leads a materialised artifact file, or a worktree, out of the quest.

A command whose files would land outside is refused with ``path_outside_root`` *before*
its event is appended: the log is unchanged and nothing is written outside. A link
planted after the event is in the log is refused at materialisation (live and on
replay), reported in ``Views.refused``, and nothing is written through it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.log import EventLog
from ds_events.replay import replay_quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd
from ds_events.views import Views

from .support import CONTRACT, confirm_args, git_ok


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    return d


def plant(quest: Quest, rel: str, target: Path) -> None:
    """Make ``rel`` (a directory inside the quest, or a file) a link to ``target``."""
    link = quest.root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def refused(quest: Quest, call: Callable[[], Any], outside: Path) -> Invalid:
    seq, refs = quest.log.last_seq, git_ok(quest.root, "for-each-ref")
    with pytest.raises(Invalid) as caught:
        call()
    assert caught.value.code == "path_outside_root" and caught.value.message
    assert quest.log.last_seq == seq, "a refused call appended its event"
    assert git_ok(quest.root, "for-each-ref") == refs
    assert sorted(p.name for p in outside.rglob("*")) == [], "something was written outside the quest"
    return caught.value


def confirm(quest: Quest) -> cmd.ConfirmBaselineResult:
    return artifacts.confirm_baseline(quest, cmd.ConfirmBaseline(**confirm_args()))


def test_confirm_baseline_is_refused_when_the_contracts_directory_leads_outside(quest: Quest, outside: Path) -> None:
    plant(quest, "baselines/resnet20/json", outside)
    err = refused(quest, lambda: confirm(quest), outside)
    assert err.details.get("field") == "baseline_path"


def test_confirm_baseline_is_refused_when_the_baseline_records_directory_leads_outside(quest: Quest, outside: Path) -> None:
    plant(quest, "artifacts/baselines", outside)
    refused(quest, lambda: confirm(quest), outside)


def test_a_record_is_refused_when_its_kind_directory_leads_outside(quest: Quest, outside: Path) -> None:
    plant(quest, "artifacts/ideas", outside)
    refused(quest, lambda: artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": "x"})), outside)
    artifacts.record(quest,
        cmd.Record(payload={"kind": "decision", "verdict": "go", "action": "continue", "reason": "r"}))  # others still work


def _campaign(slices: list[Any]) -> cmd.CreateAnalysisCampaign:
    return cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=slices)


def _run_setup(quest: Quest) -> None:
    confirm(quest)


def _campaign_setup(quest: Quest) -> None:
    artifacts.create_analysis_campaign(quest, _campaign(["a"]))


CASES: list[tuple[str, str, Callable[[Quest], None] | None, Callable[[Quest], Any]]] = [
    ("publish_baseline", "artifacts/baselines", None,
     lambda q: artifacts.publish_baseline(q, cmd.PublishBaseline(payload={"baseline_id": "b1", "title": "B"}))),
    ("record_main_experiment", "artifacts/runs", _run_setup,
     lambda q: artifacts.record_main_experiment(q, cmd.RecordMainExperiment(
         run_id="run1", title="R", metrics_summary={"top1": 0.93, "nll": 0.3}, evaluation_protocol=CONTRACT["evaluation_protocol"]))),
    ("create_analysis_campaign", "artifacts/campaigns", None,
     lambda q: artifacts.create_analysis_campaign(q, _campaign(["a", "b"]))),
    ("record_analysis_slice", "artifacts/campaigns/campaign-001.json", _campaign_setup,
     lambda q: artifacts.record_analysis_slice(
         q, cmd.RecordAnalysisSlice(campaign_id="campaign-001", slice_id="s1", metrics_summary={"top1": 0.9}))),
    ("render_git_graph", "artifacts/graphs", None, lambda q: git_service.render_git_graph(q, cmd.RenderGitGraph())),
    ("refresh_summary", "SUMMARY.md", None, lambda q: artifacts.refresh_summary(q, cmd.RefreshSummary())),
    ("prepare_branch", ".ds/worktrees", None, lambda q: git_service.prepare_branch(q, cmd.PrepareBranch(run_id="r1"))),
]  # fmt: skip


@pytest.mark.parametrize("rel, setup, call", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_command_that_materialises_is_refused_before_appending_when_its_path_leads_outside(
    quest: Quest, outside: Path, rel: str, setup: Callable[[Quest], None] | None, call: Callable[[Quest], Any]
) -> None:
    if setup is not None:
        setup(quest)
    existing = quest.root / rel
    if existing.is_file():  # the file itself becomes a link to a file outside
        existing.unlink()
        target = outside / "victim"
        target.write_text("keep me\n")
        plant(quest, rel, target)
        with pytest.raises(Invalid) as caught:
            call(quest)
        assert caught.value.code == "path_outside_root"
        assert target.read_text() == "keep me\n"
        return
    if existing.is_dir():
        existing.rename(quest.root / (rel + ".moved"))
    plant(quest, rel, outside)
    refused(quest, lambda: call(quest), outside)


def test_a_link_planted_after_the_event_is_never_written_through_live_or_on_replay(quest: Quest, outside: Path) -> None:
    r = confirm(quest)
    contract = quest.root / r.contract_path
    assert contract.is_file()
    # the agent swaps the contract's directory for a link out, then the quest moves on
    json_dir = contract.parent
    for p in json_dir.iterdir():
        p.unlink()
    json_dir.rmdir()
    json_dir.symlink_to(outside)
    artifacts.publish_baseline(quest, cmd.PublishBaseline(payload={"baseline_id": "resnet20-v2", "title": "a later event"}))
    assert list(outside.iterdir()) == []
    result = replay_quest(quest.root, quest_id=quest.id)  # does not fail, writes the rest
    assert list(outside.iterdir()) == []
    assert "artifacts/baselines/resnet20.json" in result.files_written or (quest.root / "artifacts/baselines/resnet20.json").is_file()
    log = EventLog(quest.root / ".ds/events.jsonl", quest_id=quest.id, actor="test")
    try:
        views = Views(log, quest.root)
        views.catch_up()
        views.materialise(full=True)
        assert [line for line in views.refused if line.startswith(r.contract_path)], views.refused
    finally:
        log.close()
    assert list(outside.iterdir()) == []
    json_dir.unlink()  # once the link is gone, the file comes back from the log
    replay_quest(quest.root, quest_id=quest.id)
    assert contract.is_file()
