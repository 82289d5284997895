"""The ``ds`` commands over the log: a full disk, read-only commands on a damaged log."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ds_events.events import ConversationMessage
from ds_events.home import Home
from tests.core.full_disk import FullDisk, small_fs
from tests.helpers import DS, ds_env


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts}


# Where no tmpfs can be mounted, the ``ds`` subprocess gets the same fault-injecting
# os.write as tests/core/full_disk.py, installed by a sitecustomize module.
_INJECT = """
import errno, os
_full = os.environ.get("DS_TEST_FULL_DISK")
if _full:
    _real = os.write
    def _write(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(_full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return _real(fd, data)
    os.write = _write
"""


@pytest.fixture
def full_home(monkeypatch, tmp_path):
    with small_fs("16m") as (where, real):
        home = Home(where / "home")
        home.init()
        home.create_quest("Full disk", quest_id="q1").close()
        disk = FullDisk(monkeypatch, where, real)
        env = ds_env(home)
        if not real:
            (tmp_path / "sitecustomize.py").write_text(_INJECT)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
        yield home, disk, env, real


def test_ds_message_on_a_full_disk_answers_disk_full_in_one_line_and_writes_nothing(full_home):
    home, disk, env, real = full_home
    root = home.quest_root("q1")
    disk.fill(leave=0)
    before = snapshot(root)
    full_env = env if real else {**env, "DS_TEST_FULL_DISK": str(disk.path)}
    done = subprocess.run([*DS, "message", "q1", "hello " * 2000], env=full_env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("error: disk_full: ") and done.stderr.count("\n") == 1, done.stderr
    assert snapshot(root) == before
    disk.free()
    done = subprocess.run([*DS, "message", "q1", "hello"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("queued message ") and " (seq 2) for quest q1\n" in done.stdout


# -- read-only commands on a damaged log ---------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    from ds_events.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    captured = capsys.readouterr()
    return int(exc.value.code or 0), captured.out, captured.err


@pytest.fixture
def torn_quest(home, capsys):
    with home.create_quest("Torn", quest_id="tq") as q:
        for i in range(3):
            q.emit(ConversationMessage(role="user", content=f"m{i}"))
    log = home.quest_root("tq") / ".ds" / "events.jsonl"
    with open(log, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":5,"id":"torn')
    return log


@pytest.mark.parametrize("argv", [["events", "tail", "tq"], ["quest", "show", "tq"], ["quest", "list"]])
def test_read_only_commands_leave_a_torn_tail_in_place_and_say_what_repairs_it(torn_quest, capsys, argv):
    before = torn_quest.read_bytes()
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "torn tail" in err and "`ds repair tq`" in err
    assert torn_quest.read_bytes() == before
    assert not (torn_quest.parent / "quarantine").exists()
    if argv[0] == "events":
        assert "content='m2'" in out


def test_verify_names_the_anchor_that_caught_a_shortened_log_and_repair_says_what_it_could_not_vouch_for(home, capsys):
    with home.create_quest("Cut", quest_id="cut") as q:
        for i in range(6):
            q.emit(ConversationMessage(role="user", content=f"m{i}"))
    log = home.quest_root("cut") / ".ds" / "events.jsonl"
    lines = log.read_bytes().split(b"\n")[:-1]
    log.write_bytes(b"".join(line + b"\n" for line in lines[:-2]))  # the last two events deleted
    code, out, _ = run(capsys, "verify", "cut")
    assert code == 1
    assert "the log ends at seq 5 but the head anchor events.jsonl.head names seq 7" in out
    assert "[caught by the head anchor events.jsonl.head]" in out
    code, out, err = run(capsys, "message", "cut", "hello")
    assert code == 1 and "head anchor names seq 7" in err and "ds repair" in err
    code, out, _ = run(capsys, "repair", "cut", "--yes")
    assert code == 0 and "could not vouch for" in out
    code, out, _ = run(capsys, "verify", "cut", "--json")
    assert code == 0 and '"ok": true' in out
