"""A checkpoint killed -9 between its commit and its ``git.checkpointed`` (its rollback
never runs) leaves the branch on a commit the log does not record: the next checkpoint,
or a host starting up (``undo_unrecorded_checkpoints``), moves the branch back first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2

from ds_events.home import Home, Quest
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

REPO = Path(__file__).resolve().parents[2]
_CHECKPOINT = """
import sys
from ds_events.home import Home
from ds_events.services.artifacts import checkpoints, commands
quest = Home(sys.argv[1]).open_quest("q1", actor="test")
checkpoints.checkpoint(quest, commands.Checkpoint(message="killed halfway"))
"""


def _killed_checkpoint(home: Home, quest: Quest) -> str:
    """Run a checkpoint in a process killed at ``mcp.checkpoint.after_commit``; returns
    the branch head it left."""
    (quest.root / "notes.txt").write_text("a result\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), DS_CRASH_AT="mcp.checkpoint.after_commit")
    done = subprocess.run([sys.executable, "-c", _CHECKPOINT, str(home.root)], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr
    return str(pygit2.Repository(str(quest.root)).head.target)


def test_a_checkpoint_killed_after_its_commit_leaves_a_commit_the_next_checkpoint_undoes(home: Home, quest: Quest) -> None:
    before = str(pygit2.Repository(str(quest.root)).head.target)
    orphan = _killed_checkpoint(home, quest)
    assert orphan != before  # the kill left the branch on the unrecorded commit
    assert not any(e.type == "git.checkpointed" for e in quest.log.read())
    result = git_service.checkpoint(quest, cmd.Checkpoint(message="again"))
    assert result.parent == before  # not built on the commit the log does not know
    repo = pygit2.Repository(str(quest.root))
    assert orphan not in {str(c.id) for c in repo.walk(repo.head.target)}
    assert [e.sha for e in quest.log.read() if e.type == "git.checkpointed"] == [result.sha]  # type: ignore[attr-defined]


def test_a_host_starting_undoes_an_unrecorded_checkpoint_and_leaves_recorded_ones(home: Home, quest: Quest) -> None:
    recorded = git_service.checkpoint(quest, cmd.Checkpoint(message="recorded", allow_empty=True)).sha
    assert git_service.undo_unrecorded_checkpoints(quest) == []  # a recorded head stays
    orphan = _killed_checkpoint(home, quest)
    assert git_service.undo_unrecorded_checkpoints(quest) == [orphan]
    assert str(pygit2.Repository(str(quest.root)).head.target) == recorded
    assert git_service.undo_unrecorded_checkpoints(quest) == []
