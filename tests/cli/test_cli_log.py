"""The ``ds`` commands over the log: a full disk, read-only commands on a damaged log."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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
    assert done.stdout.strip() == "2"
