"""The git primitives below the services: the Rollback every side-effecting command uses,
and commits that move a branch only from the parent they were staged on."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from ds_events.artifacts import git as git_ops
from ds_events.errors import Conflict
from ds_events.home import Quest

from .support import git_ok


def test_a_rollback_undoes_newest_first_when_its_block_raises_and_notes_a_step_that_fails() -> None:
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("cannot undo this one")

    with pytest.raises(ValueError) as caught:
        with git_ops.Rollback() as undo:
            undo.add(done.append, "first")
            undo.add(fail)
            undo.add(done.append, "last")
            raise ValueError("the append failed")
    assert done == ["last", "first"]  # a failing step does not stop the others
    assert any("cannot undo this one" in note for note in caught.value.__notes__)


def test_a_kept_rollback_undoes_nothing_and_one_left_without_keep_undoes_everything() -> None:
    done: list[str] = []
    with git_ops.Rollback() as undo:
        undo.add(done.append, "x")
        undo.keep()
    assert done == []
    with git_ops.Rollback() as undo:  # ended without keep(): e.g. given up to try again
        undo.add(done.append, "y")
    assert done == ["y"]


def test_a_staged_tree_is_not_committed_over_a_branch_that_moved_since(quest: Quest) -> None:
    repo = pygit2.Repository(str(quest.root))
    (quest.root / "a.py").write_text("a = 1\n")
    staged = git_ops.stage_tree(repo, 1 << 20)
    git_ok(quest.root, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "moved")
    moved = git_ok(quest.root, "rev-parse", "main").strip()
    with git_ops.Rollback() as undo, pytest.raises(Conflict) as caught:
        git_ops.commit_staged(staged, "ours", undo)
    assert caught.value.code == "branch_moved" and caught.value.details["found"] == moved
    assert git_ok(quest.root, "rev-parse", "main").strip() == moved


def test_an_undone_commit_moves_the_branch_back_but_leaves_a_later_commit_alone(quest: Quest) -> None:
    repo = pygit2.Repository(str(quest.root))
    parent = git_ok(quest.root, "rev-parse", "main").strip()
    (quest.root / "a.py").write_text("a = 1\n")
    with git_ops.Rollback() as undo:
        sha = git_ops.commit_staged(git_ops.stage_tree(repo, 1 << 20), "undone", undo)
        assert git_ok(quest.root, "rev-parse", "main").strip() == sha
    assert git_ok(quest.root, "rev-parse", "main").strip() == parent
    with git_ops.Rollback() as undo:
        git_ops.commit_staged(git_ops.stage_tree(repo, 1 << 20), "ours", undo)
        git_ok(quest.root, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "theirs")
        theirs = git_ok(quest.root, "rev-parse", "main").strip()
    assert git_ok(quest.root, "rev-parse", "main").strip() == theirs  # never thrown away


def test_the_trailer_is_the_last_paragraph_of_the_message() -> None:
    assert git_ops.with_trailer("subject\n\nbody\n\n", 7, "ab" * 16) == f"subject\n\nbody\n\nDS-Log-Head: 7 {'ab' * 16}\n"


def test_a_reserved_name_is_held_until_released(quest: Quest) -> None:
    repo = pygit2.Repository(str(quest.root))
    head = git_ok(quest.root, "rev-parse", "main").strip()
    assert git_ops.reserve(repo, "campaign-001", head)
    assert not git_ops.reserve(repo, "campaign-001", head)
    git_ops.release(repo, "campaign-001")
    assert git_ops.reserve(repo, "campaign-001", head)
    assert Path(quest.root, ".git/refs/ds/reserved/campaign-001").is_file()
