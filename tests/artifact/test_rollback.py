"""A command that changes the quest repository and then cannot append the event that
records it leaves the repository as it found it, so the log and the repository agree:
no branch, no worktree, no commit the log does not know, and a retry does not meet a
``branch_exists`` of its own making. If the event did reach the log (a sync failed after
the line was written, so the log replays it), the side effects are kept instead, for the
same reason. The appends fail for real (see :mod:`tests.artifact.faults`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ds_events.errors import LogError
from ds_events.home import Home, Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

from .faults import FailingSync, FullDisk
from .support import git, git_ok

APPEND_FAILED = (OSError, LogError)


def repo_state(quest: Quest) -> tuple[str, str]:
    """Every ref and every worktree of the quest repository."""
    return git_ok(quest.root, "for-each-ref"), git_ok(quest.root, "worktree", "list", "--porcelain")


def worktrees_dir(quest: Quest) -> list[str]:
    d = quest.root / ".ds/worktrees"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


@pytest.mark.parametrize("create_worktree", [True, False])
def test_a_failed_append_after_prepare_branch_leaves_no_branch_and_a_retry_succeeds(
    quest: Quest, monkeypatch: pytest.MonkeyPatch, create_worktree: bool
) -> None:
    before, seq = repo_state(quest), quest.log.last_seq
    disk = FullDisk(monkeypatch, quest.root)
    with pytest.raises(APPEND_FAILED):
        git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1", create_worktree=create_worktree))
    assert disk.refused
    assert repo_state(quest) == before and worktrees_dir(quest) == []
    assert quest.log.last_seq == seq
    disk.on = False
    r = git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1", create_worktree=create_worktree))
    assert git_ok(quest.root, "rev-parse", "run/r1").strip() == r.start_sha
    assert worktrees_dir(quest) == (["run__r1"] if create_worktree else [])
    assert git(quest.root, "fsck", "--strict").returncode == 0


@pytest.mark.parametrize("create_worktrees", [True, False])
def test_a_failed_append_after_create_analysis_campaign_removes_every_branch_and_a_retry_gets_the_same_id(
    quest: Quest, monkeypatch: pytest.MonkeyPatch, create_worktrees: bool
) -> None:
    before, seq = repo_state(quest), quest.log.last_seq
    disk = FullDisk(monkeypatch, quest.root)
    with pytest.raises(APPEND_FAILED):
        artifacts.create_analysis_campaign(quest,
            cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b", "c"]), create_worktrees=create_worktrees)
    assert disk.refused
    assert repo_state(quest) == before and worktrees_dir(quest) == []  # the reservation is gone too
    assert quest.log.last_seq == seq
    disk.on = False
    r = artifacts.create_analysis_campaign(quest,
        cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b", "c"]), create_worktrees=create_worktrees)
    assert r.campaign_id == "campaign-001"
    names = git_ok(quest.root, "branch", "--format=%(refname:short)").split()
    assert sorted(n for n in names if n.startswith("analysis/")) == [f"analysis/q1/campaign-001-s{i}" for i in (1, 2, 3)]
    assert len(worktrees_dir(quest)) == (3 if create_worktrees else 0)


@pytest.mark.parametrize("where", ["worktree", "quest root"])
def test_a_failed_append_after_checkpoint_moves_the_branch_back_to_its_parent(
    quest: Quest, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "worktree":
        wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1")).worktree_path)
        branch = "run/r1"
    else:
        wt, branch = quest.root, "main"
    (wt / "train.py").write_text("print('train')\n")
    parent = git_ok(quest.root, "rev-parse", branch).strip()
    seq = quest.log.last_seq
    disk = FullDisk(monkeypatch, quest.root)
    with pytest.raises(APPEND_FAILED):
        git_service.checkpoint(quest, cmd.Checkpoint(message="train", branch=branch))
    assert disk.refused
    assert git_ok(quest.root, "rev-parse", branch).strip() == parent
    assert quest.log.last_seq == seq
    assert (wt / "train.py").read_text() == "print('train')\n"  # the work itself is untouched
    disk.on = False
    r = git_service.checkpoint(quest, cmd.Checkpoint(message="train", branch=branch))
    assert r.parent == parent and git_ok(quest.root, "rev-parse", branch).strip() == r.sha
    assert "train.py" in git_ok(quest.root, "ls-tree", "--name-only", branch).split()
    if where == "worktree":  # (the quest root's SUMMARY.md changes with the checkpoint event)
        assert git_ok(wt, "status", "--porcelain") == ""
    assert git(quest.root, "fsck", "--strict").returncode == 0


def test_after_a_failed_sync_the_written_events_side_effects_are_kept_so_the_log_and_repository_agree(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed sync leaves the line in the file (the log is readable and replays it):
    the branch it records must then exist, not be undone under it."""
    sync = FailingSync(monkeypatch, quest.root)
    with pytest.raises(LogError) as caught:
        git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1"))
    assert sync.failed == 1
    quest.close()
    with home.open_quest("q1") as again:
        [event] = again.log.read(types=["git.branch_prepared"])
        assert event.branch == "run/r1"
        assert git_ok(again.root, "rev-parse", "run/r1").strip() == event.start_sha
        assert worktrees_dir(again) == ["run__r1"]
        assert again.state("artifacts").active_branch == "run/r1"
    # and the caller is told why its failed call left something behind
    assert any("reached the log" in note for note in getattr(caught.value, "__notes__", []))


def test_after_a_failed_sync_a_checkpoint_in_the_log_stays_on_its_branch(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1")).worktree_path)
    (wt / "train.py").write_text("print('train')\n")
    FailingSync(monkeypatch, quest.root)
    with pytest.raises(LogError):
        git_service.checkpoint(quest, cmd.Checkpoint(message="train"))
    quest.close()
    with home.open_quest("q1") as again:
        [event] = again.log.read(types=["git.checkpointed"])
        assert git_ok(again.root, "rev-parse", "run/r1").strip() == event.sha


def test_a_campaign_whose_id_is_taken_while_its_worktrees_are_made_is_refused_and_undone(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-check under the lock: another handle records an artifact with the very id
    the campaign reserved (explicit ids are the one way around the reservation)."""
    import os

    real_mkdir = os.mkdir
    worktrees = os.path.realpath(quest.root / ".ds/worktrees")
    other = home.open_quest("q1", actor="other")
    taken: list[str] = []

    def mkdir(path: object, *args: object, **kwargs: object) -> None:
        if os.path.realpath(path) == worktrees and not taken:  # type: ignore[arg-type]
            taken.append(artifacts.record(other,
                cmd.Record(payload={"kind": "idea", "title": "x", "artifact_id": "campaign-001"})).artifact_id)
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", mkdir)
    before = repo_state(quest)
    try:
        with pytest.raises(Exception) as caught:
            artifacts.create_analysis_campaign(quest, cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a", "b"]))
    finally:
        other.close()
    assert taken == ["campaign-001"]
    assert getattr(caught.value, "code", None) == "artifact_exists"
    assert repo_state(quest) == before and worktrees_dir(quest) == []
    assert quest.log.read(types=["artifact.analysis_campaign_created"]) == []
    monkeypatch.undo()
    assert artifacts.create_analysis_campaign(quest,
        cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=["a"])).campaign_id == "campaign-002"
