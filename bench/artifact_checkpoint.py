"""Benchmark: what a checkpoint costs, and how long it holds the log's append lock,
against `git add -A && git commit` on the same tree, measured in the same run.

Per round (ROUNDS, at least 10): a fresh worktree of FILES small source files plus a venv
(VENV_FILES files) and a 200 MB sparse file, committed by our hygiene-aware checkpoint
(first commit, then an incremental one after CHANGED files changed); the baseline is the
git CLI on an identical tree whose .gitignore already excludes the venv and the big file
(git does no hygiene work of its own). For each we print the median over the rounds and
the spread [min - max] of:

- total: the checkpoint call (or the git CLI pair);
- held: the time spent inside the log's append lock during the call (every other writer
  of the quest waits for that long);
- wait: the longest single append of another process that appends in a loop while the
  call runs. The same appender runs while the git CLI commits, which gives the raw
  baseline: what an append waits when nobody holds the lock (the machine is busy alike).

Then record(): RECORDS idea records through the service vs raw EventLog.append of the
same events, ROUNDS times.

Run: python3 bench/artifact_checkpoint.py [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ds_events.events.artifact import ArtifactRecorded
from ds_events.home import Home, Quest
from ds_events.log import EventLog
from ds_events.services import artifacts
from ds_events.services.artifacts import (
    checkpoints as git,
    commands as cmd,
)

FILES = 2000
VENV_FILES = 3000
RECORDS = 100
CHANGED = 10

# Appends to the quest's log in a loop between "start" and "stop" on stdin, then prints
# how many it made and the longest one (seconds).
_APPENDER = r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[2])
from ds_events.events import ConversationMessage
from ds_events.log import EventLog
log = EventLog(sys.argv[1], quest_id="bench", actor="appender", policy="group")
for line in sys.stdin:
    if line.strip() != "start":
        break
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    print("started", flush=True)
    count, longest = 0, 0.0
    while not stop.is_set():
        t = time.perf_counter()
        log.append(ConversationMessage(role="user", content=f"tick {count}"))
        longest = max(longest, time.perf_counter() - t)
        count += 1
    print(json.dumps({"count": count, "longest": longest}), flush=True)
log.close()
"""


class Appender:
    """Another process appending to the quest's log while something runs."""

    def __init__(self, log_path: Path) -> None:
        repo = str(Path(__file__).resolve().parent.parent)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(log_path), repo], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    @contextlib.contextmanager
    def running(self, out: list[float]) -> Iterator[None]:
        """Appends in a loop during the block; the longest append goes to ``out``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("start\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "started"
        try:
            yield
        finally:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            out.append(json.loads(self.proc.stdout.readline())["longest"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


@contextlib.contextmanager
def lock_timer(quest: Quest, out: list[float]) -> Iterator[None]:
    """Adds to ``out`` the time spent inside ``quest.log.transaction()`` during the block."""
    real = quest.log.transaction
    spent = [0.0]

    @contextlib.contextmanager
    def timed() -> Iterator[object]:
        with real() as txn:
            start = time.perf_counter()
            try:
                yield txn
            finally:
                spent[0] += time.perf_counter() - start

    quest.log.transaction = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        del quest.log.transaction  # back to the class's method
        out.append(spent[0])


def populate(root: Path) -> None:
    for i in range(FILES):
        d = root / "src" / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 60)
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for i in range(VENV_FILES):
        d = venv / "lib" / f"site{i % 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.py").write_text("pass\n" * 20)
    with open(root / "weights.pt", "wb") as f:
        f.truncate(200 * 1024 * 1024)


def touch_some(root: Path) -> None:
    for i in range(CHANGED):
        (root / "src" / f"pkg{i % 40}" / f"mod{i}.py").write_text(f"# changed {i} {time.time_ns()}\n")


def timed(fn: Callable[[], object], out: list[float]) -> None:
    start = time.perf_counter()
    fn()
    out.append(time.perf_counter() - start)


def spread(values: list[float], scale: float = 1000.0) -> str:
    """``median [min - max]`` in milliseconds."""
    med = statistics.median(values) * scale
    return f"{med:8.1f} [{min(values) * scale:7.1f} - {max(values) * scale:7.1f}]"


def ratio_spread(num: list[float], den: list[float]) -> str:
    ratios = [n / d for n, d in zip(num, den, strict=False)]
    return f"{statistics.median(ratios):6.3f}x [{min(ratios):.3f} - {max(ratios):.3f}]"


def bench_checkpoint(tmp: Path, rounds: int) -> None:
    home = Home(tmp / "home")
    home.init()
    quest = home.create_quest("bench", quest_id="bench")
    appender = Appender(quest.root / ".ds" / "events.jsonl")
    phases = ("first", "incremental")
    m: dict[str, dict[str, list[float]]] = {p: {k: [] for k in ("total", "held", "wait", "git", "git_wait")} for p in phases}
    try:
        for i in range(rounds):
            wt = Path(git.prepare_branch(quest, cmd.PrepareBranch(run_id=f"r{i}")).worktree_path)
            populate(wt)
            raw = tmp / f"raw{i}"
            subprocess.run(["git", "init", "-q", "-b", "main", str(raw)], check=True)
            populate(raw)
            (raw / ".gitignore").write_text("venv/\nweights.pt\n")

            def git_cli(*args: str, raw: Path = raw) -> None:
                cmd = ["git", "-C", str(raw), "-c", "user.name=b", "-c", "user.email=b@b", *args]
                subprocess.run(cmd, check=True, capture_output=True)

            for phase in phases:
                if phase == "incremental":
                    touch_some(wt)
                    touch_some(raw)
                r = m[phase]
                with appender.running(r["wait"]), lock_timer(quest, r["held"]):
                    timed(lambda phase=phase: git.checkpoint(quest, cmd.Checkpoint(message=phase)), r["total"])
                with appender.running(r["git_wait"]):
                    timed(lambda phase=phase: (git_cli("add", "-A"), git_cli("commit", "-q", "-m", phase)), r["git"])
            shutil.rmtree(raw)
    finally:
        appender.close()
        quest.close()
    print(f"checkpoint of {FILES} files (+ a venv of {VENV_FILES} files and a 200 MB file, skipped), {rounds} rounds")
    print("  ms: median [min - max]")
    for phase in phases:
        r = m[phase]
        label = "first commit" if phase == "first" else f"incremental ({CHANGED} changed)"
        print(f"  {label}")
        print(f"    ours, whole call             {spread(r['total'])}")
        print(f"    ours, inside the log's lock  {spread(r['held'])}   held/total {ratio_spread(r['held'], r['total'])}")
        print(f"    git add -A && git commit     {spread(r['git'])}   ours/git   {ratio_spread(r['total'], r['git'])}")
        print(f"    another process's longest append: during ours {spread(r['wait'])}")
        print(f"                                      during git  {spread(r['git_wait'])}   ours/git {ratio_spread(r['wait'], r['git_wait'])}")


def bench_records(tmp: Path, rounds: int) -> None:
    ours, raw = [], []
    policy = "group"
    for i in range(rounds):
        home = Home(tmp / f"home-rec{i}")
        home.init()
        policy = home.config().durability
        quest = home.create_quest("bench", quest_id="rec")
        timed(lambda: [artifacts.record(quest, cmd.Record(payload={"kind": "idea", "title": f"idea {n}"})) for n in range(RECORDS)], ours)
        quest.close()
        log = EventLog(tmp / f"raw{i}.jsonl", quest_id="raw", actor="bench", policy=policy)
        events = [ArtifactRecorded(artifact_id=f"idea-{n:04d}", kind="idea", payload={"title": f"idea {n}"}) for n in range(RECORDS)]
        timed(lambda: [log.append(e) for e in events], raw)
        log.close()
    print(f"record, {RECORDS} ideas per round, {rounds} rounds (durability {policy})")
    print(f"  ours {spread(ours)} ms   raw EventLog.append {spread(raw)} ms   ratio {ratio_spread(ours, raw)} the raw time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ds-bench-artifact-"))
    try:
        bench_checkpoint(tmp, args.rounds)
        bench_records(tmp, args.rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
