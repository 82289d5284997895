"""Benchmark: artifact checkpoints and records against raw baselines measured in the same run.

1. checkpoint(): a worktree of FILES small source files plus a venv (VENV_FILES files) and
   a 200 MB sparse file, committed by our hygiene-aware checkpoint; baseline: the git CLI
   `git add -A && git commit` on an identical tree whose .gitignore already excludes the
   venv and the big file (git does no hygiene work of its own). First commit and an
   incremental one (10 files changed) are timed separately.
2. record(): RECORDS idea records through the service (validation, id allocation under the
   append lock, projection, one JSON file each) vs raw EventLog.append of the same events.

Run: python bench/artifact_checkpoint.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ds_events.events.artifact import ArtifactRecorded  # noqa: E402
from ds_events.home import Home  # noqa: E402
from ds_events.log import EventLog  # noqa: E402
from ds_events.services import artifacts, git  # noqa: E402

FILES = 2000
VENV_FILES = 3000
RECORDS = 500
CHANGED = 10


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


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_checkpoint(tmp: Path) -> None:
    home = Home(tmp / "home")
    home.init()
    quest = home.create_quest("bench", quest_id="bench")
    r = git.prepare_branch(quest, run_id="r1")
    wt = Path(r["worktree_path"])
    populate(wt)

    raw = tmp / "raw"
    subprocess.run(["git", "init", "-q", "-b", "main", str(raw)], check=True)
    populate(raw)
    (raw / ".gitignore").write_text("venv/\nweights.pt\n")

    def git_cli(*args: str) -> None:
        subprocess.run(["git", "-C", str(raw), "-c", "user.name=b", "-c", "user.email=b@b", *args], check=True, capture_output=True)

    ours_first = timed(lambda: git.checkpoint(quest, "first"))
    raw_first = timed(lambda: (git_cli("add", "-A"), git_cli("commit", "-q", "-m", "first")))
    touch_some(wt)
    touch_some(raw)
    ours_inc = timed(lambda: git.checkpoint(quest, "incremental"))
    raw_inc = timed(lambda: (git_cli("add", "-A"), git_cli("commit", "-q", "-m", "incremental")))
    print(f"checkpoint, {FILES} files + venv of {VENV_FILES} files + 200 MB file skipped")
    print(f"  first commit:       ours {ours_first * 1000:8.1f} ms   git CLI {raw_first * 1000:8.1f} ms   ratio {ours_first / raw_first:5.2f}x")
    print(f"  incremental ({CHANGED} ch): ours {ours_inc * 1000:8.1f} ms   git CLI {raw_inc * 1000:8.1f} ms   ratio {ours_inc / raw_inc:5.2f}x")
    quest.close()


def bench_records(tmp: Path) -> None:
    home = Home(tmp / "home2")
    home.init()
    quest = home.create_quest("bench", quest_id="rec")
    ours = timed(lambda: [artifacts.record(quest, {"kind": "idea", "title": f"idea {i}"}) for i in range(RECORDS)])
    quest.close()
    log = EventLog(tmp / "raw.jsonl", quest_id="raw", actor="bench", policy=home.config()["durability"])
    raw = timed(
        lambda: [
            log.append(ArtifactRecorded(artifact_id=f"idea-{i:04d}", kind="idea", payload={"title": f"idea {i}"}))
            for i in range(RECORDS)
        ]
    )
    log.close()
    print(f"record, {RECORDS} ideas (durability {home.config()['durability']})")
    print(f"  ours {RECORDS / ours:8.0f}/s   raw EventLog.append {RECORDS / raw:8.0f}/s   ratio {ours / raw:5.2f}x the raw time")


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ds-bench-artifact-"))
    try:
        bench_checkpoint(tmp)
        bench_records(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
