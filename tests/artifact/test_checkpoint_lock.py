"""A checkpoint does its long work (scan, hashing, tree) outside the log's lock: another
process appends while it runs. Under the lock it only checks that the branch did not
move, commits with a ``DS-Log-Head`` trailer naming the log's head, and appends.

Moments inside a checkpoint are caught by wrapping ``os.walk`` (the scan walks the tree
with it; the real walk still runs): the wrapper acts once the scan of the worktree starts.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ds_events.errors import Conflict
from ds_events.events.artifact import GitCheckpointed
from ds_events.home import Quest
from ds_events.log import line_hash
from ds_events.services.artifacts import checkpoints as git_service, commands as cmd

from .support import git_ok

REPO = Path(__file__).resolve().parents[2]

# Appends N events to the log at argv[1] for every line "N" on stdin, then says "done".
_APPENDER = r"""
import sys
from ds_events.events import ConversationMessage
from ds_events.log import EventLog
log = EventLog(sys.argv[1], quest_id="q1", actor="other", policy="group")
print("ready", flush=True)
for line in sys.stdin:
    for i in range(int(line)):
        log.append(ConversationMessage(role="user", content=f"other {i}"))
    print("done", flush=True)
log.close()
"""


class OtherAppender:
    """Another process appending to the quest's log on request."""

    def __init__(self, quest: Quest) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(quest.root / ".ds/events.jsonl")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.next_line(30) == "ready"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def next_line(self, timeout: float) -> str | None:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def append(self, n: int, timeout: float) -> bool:
        """Ask for ``n`` appends; True if they all completed within ``timeout``."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return self.next_line(timeout) == "done"

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)
        self._reader.join(30)  # it reads to the end of the pipe, which closes with the process
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def during_scan_of(monkeypatch: pytest.MonkeyPatch, tree: Path, action: Callable[[int], None]) -> None:
    """Run ``action(n)`` each time (n = 1, 2, ...) a walk of ``tree`` starts."""
    real_walk = os.walk
    target = os.path.realpath(tree)
    count = [0]

    def walk(top: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if os.path.realpath(top) == target:
            count[0] += 1
            action(count[0])
        yield from real_walk(top, *args, **kwargs)

    monkeypatch.setattr(os, "walk", walk)


def populate(root: Path, files: int) -> None:
    for i in range(files):
        d = root / "src" / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"# module {i}\nx = {i}\n")


def trailer(quest: Quest, rev: str) -> tuple[int, str]:
    body = git_ok(quest.root, "log", "-1", "--format=%B", rev).rstrip("\n")
    last = body.rsplit("\n\n", 1)[-1]
    key, _, value = last.partition(": ")
    assert key == "DS-Log-Head", body
    seq, chain_hash = value.split(" ")
    return int(seq), chain_hash


def stored_line(quest: Quest, seq: int) -> bytes:
    with open(quest.root / ".ds/events.jsonl", "rb") as f:
        return f.read().split(b"\n")[seq - 1]


@pytest.mark.slow
def test_another_process_appends_while_a_checkpoint_of_thousands_of_files_scans_and_writes_its_tree(
    quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="big")).worktree_path)
    populate(wt, 3000)
    other = OtherAppender(quest)
    went_through: list[bool] = []
    # If the checkpoint held the lock while it scans, these appends would wait for it:
    # they would not complete within the timeout, and the scan would go on without them.
    during_scan_of(monkeypatch, wt, lambda n: went_through.append(other.append(25, timeout=20)))
    before = quest.log.last_seq
    try:
        r = git_service.checkpoint(quest, cmd.Checkpoint(message="three thousand files"))
    finally:
        other.close()
    assert went_through == [True], "another process could not append while the checkpoint scanned its tree"
    others = [e for e in quest.log.read(after_seq=before) if e.actor == "other"]
    assert len(others) == 25
    assert all(before < e.seq < r.seq for e in others)  # interleaved, before the checkpoint's event
    assert r.files >= 3000
    assert len(git_ok(quest.root, "ls-tree", "-r", "--name-only", "run/big").split()) == r.files


def test_another_process_appends_while_a_campaign_creates_its_worktrees(quest: Quest, monkeypatch: pytest.MonkeyPatch) -> None:
    from ds_events.services import artifacts

    other = OtherAppender(quest)
    went_through: list[bool] = []
    real_mkdir = os.mkdir
    worktrees = os.path.realpath(quest.root / ".ds/worktrees")

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        # create_branches makes sure .ds/worktrees exists before each checkout
        if os.path.realpath(path) == worktrees and not went_through:
            went_through.append(other.append(10, timeout=20))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    before = quest.log.last_seq
    try:
        r = artifacts.create_analysis_campaign(quest,
            cmd.CreateAnalysisCampaign(campaign_title="T", campaign_goal="G", slices=[f"slice {i}" for i in range(6)]))
    finally:
        other.close()
    assert went_through == [True], "another process could not append while the campaign created its worktrees"
    others = [e for e in quest.log.read(after_seq=before) if e.actor == "other"]
    assert len(others) == 10 and all(e.seq < r.seq for e in others)
    assert len(r.slices) == 6 and all(Path(s.worktree_path, ".git").exists() for s in r.slices)


@pytest.mark.parametrize("where", ["worktree", "quest root"])
def test_a_checkpoint_commit_names_the_log_head_it_was_made_at(quest: Quest, where: str) -> None:
    if where == "worktree":
        wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1")).worktree_path)
    else:
        wt = quest.root
    (wt / "a.py").write_text("a = 1\n")
    r = git_service.checkpoint(quest, cmd.Checkpoint(message="first\n\nwith a body\n"))
    (wt / "a.py").write_text("a = 2\n")
    r2 = git_service.checkpoint(quest, cmd.Checkpoint(message="second"))
    for result in (r, r2):
        event = quest.log.get(result.seq)
        assert isinstance(event, GitCheckpointed) and event.sha == result.sha
        seq, chain_hash = trailer(quest, result.sha)
        # the head when the commit was made is the line just before the checkpoint's event
        assert seq == event.seq - 1
        assert chain_hash == line_hash(stored_line(quest, seq)) == event.prev
    assert git_ok(quest.root, "log", "-1", "--format=%s", r.sha).strip() == "first"
    assert quest.log.get(r.seq).message == "first\n\nwith a body\n"  # the event keeps the caller's message


def test_a_branch_moved_during_the_scan_is_checkpointed_on_top_of_its_new_head(quest: Quest, monkeypatch: pytest.MonkeyPatch) -> None:
    wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1")).worktree_path)
    (wt / "a.py").write_text("a = 1\n")
    moved: list[str] = []

    def commit_from_outside(n: int) -> None:
        if n == 1:  # a git process in the worktree commits while we scan, once
            git_ok(wt, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "outside")
            moved.append(git_ok(wt, "rev-parse", "HEAD").strip())

    during_scan_of(monkeypatch, wt, commit_from_outside)
    r = git_service.checkpoint(quest, cmd.Checkpoint(message="ours"))
    assert r.parent == moved[0]  # prepared again on the new head, nothing of the outside commit lost
    assert git_ok(quest.root, "rev-parse", "run/r1").strip() == r.sha
    assert git_ok(quest.root, "log", "--format=%s", "run/r1").split("\n")[:2] == ["ours", "outside"]
    assert len(quest.log.read(types=["git.checkpointed"])) == 1


def test_a_branch_that_keeps_moving_is_refused_with_branch_moved_and_nothing_recorded(
    quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    wt = Path(git_service.prepare_branch(quest, cmd.PrepareBranch(run_id="r1")).worktree_path)
    (wt / "a.py").write_text("a = 1\n")
    seq = quest.log.last_seq

    def commit_from_outside(n: int) -> None:
        git_ok(wt, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", f"outside {n}")

    during_scan_of(monkeypatch, wt, commit_from_outside)
    with pytest.raises(Conflict) as caught:
        git_service.checkpoint(quest, cmd.Checkpoint(message="ours"))
    assert caught.value.code == "branch_moved" and caught.value.message
    assert quest.log.last_seq == seq
    assert git_ok(quest.root, "log", "-1", "--format=%s", "run/r1").strip() == "outside 3"  # ours never landed
