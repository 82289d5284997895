"""Where a session may run: inside the quest or a worktree, never in .git or .ds, and
every refusal of a workdir is a structured error that starts and writes nothing."""

from __future__ import annotations

import os

import pytest

from ds_events.errors import Invalid
from ds_events.services import bash as service
from ds_events.services.bash.commands import StartSession

from .support import start


def _refused(quest, workdir) -> Invalid:
    before = quest.log.last_seq
    with pytest.raises(Invalid) as info:
        start(quest, "touch ran-here", workdir=workdir)
    assert quest.log.last_seq == before
    assert not (quest.root / ".ds" / "bash_exec").exists()
    assert info.value.code and str(info.value)
    return info.value


@pytest.mark.parametrize("workdir", [".git", ".git/refs", ".ds", ".ds/snapshots", f"{os.sep}GIT"])
def test_the_quests_git_and_ds_areas_are_refused_as_workdirs(quest, workdir):
    (quest.root / ".ds" / "snapshots").mkdir(parents=True, exist_ok=True)
    if workdir == f"{os.sep}GIT":  # the same area by its absolute path
        workdir = str(quest.root / ".git")
    err = _refused(quest, workdir)
    assert err.code == "workdir_not_allowed" and err.details["area"] in (".git", ".ds")


def test_a_symlink_into_the_ds_area_is_refused_too(quest):
    os.symlink(quest.root / ".ds", quest.root / "runtime")
    assert _refused(quest, "runtime").code == "workdir_not_allowed"


def test_a_worktrees_ds_area_is_refused_but_the_worktree_under_ds_worktrees_is_allowed(quest):
    tree = quest.root / ".ds" / "worktrees" / "wt"
    tree.parent.mkdir(parents=True)
    quest.repo().add_worktree("wt", str(tree))
    (tree / ".ds").mkdir()
    assert _refused(quest, ".ds/worktrees/wt/.ds").code == "workdir_not_allowed"
    spec = service.prepare_start(quest, StartSession(command="pwd", workdir=".ds/worktrees/wt"))
    assert spec.workdir == tree.resolve() and spec.workdir_recorded == ".ds/worktrees/wt"


@pytest.mark.parametrize(
    "workdir, says",
    [
        ("a" * 300, "too long"),
        ("sub/" + "b" * 256, "too long"),
        ("loop", "loop of symbolic links"),
        ("bad\ud800name", "cannot be used as a path"),
    ],
    ids=["name-too-long", "nested-name-too-long", "symlink-loop", "lone-surrogate"],
)
def test_a_workdir_the_file_system_cannot_resolve_gets_a_structured_error(quest, workdir, says):
    (quest.root / "sub").mkdir()
    os.symlink("loop", quest.root / "loop")
    err = _refused(quest, workdir)
    assert err.code == "invalid_workdir" and says in str(err)
    assert len(str(err)) < 300  # the message quotes a long workdir shortened
