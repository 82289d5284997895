"""Every bad bash_exec request gets a structured error, and nothing starts or is written;
every code the domain catalogues has a case here."""

from __future__ import annotations

import os

import pytest

from ds_events.services.bash.errors import CODES
from tests.helpers import domain_events

from .support import call, call_error, client_for

OUTSIDE = "/tmp"
# The monitor failing to start a command (no terminal, no process left to fork) is not
# something a test can cause on a healthy machine.
WITHOUT_A_CASE = {"start_failed"}
WINDOWS = [
    ({"tail": 0}, "invalid_window"),
    ({"tail": 5, "after_seq": 1}, "conflicting_window"),
    ({"after_seq": -1}, "invalid_window"),
    ({"after_seq": 5, "before_seq": 6}, "empty_window"),
    ({"limit": 100000}, "invalid_window"),
]


def _cases(quest):
    (quest.root / "data").mkdir(exist_ok=True)
    os.symlink(OUTSIDE, quest.root / "escape")
    (quest.root / "file.txt").write_text("x")
    return [
        ({"command": ""}, "empty_command"),
        ({"command": "   \n"}, "empty_command"),
        ({"command": "echo \x00"}, "invalid_command"),
        ({"command": "true", "workdir": OUTSIDE}, "workdir_outside_quest"),
        ({"command": "true", "workdir": "data/../.."}, "workdir_outside_quest"),
        ({"command": "true", "workdir": "escape"}, "workdir_outside_quest"),
        ({"command": "true", "workdir": "missing"}, "workdir_not_found"),
        ({"command": "true", "workdir": "file.txt"}, "workdir_not_directory"),
        ({"command": "true", "workdir": ".git"}, "workdir_not_allowed"),
        ({"command": "true", "workdir": ".ds"}, "workdir_not_allowed"),
        ({"command": "true", "workdir": "a" * 300}, "invalid_workdir"),
        ({"command": "true", "env": {"1BAD": "x"}}, "invalid_env_name"),
        ({"command": "true", "env": {"A-B": "x"}}, "invalid_env_name"),
        ({"command": "true", "env": {"DS_BASH_SESSION_ID": "x"}}, "invalid_env_name"),
        ({"command": "true", "timeout_seconds": -1}, "invalid_timeout"),
        ({"command": "true", "timeout_seconds": 0}, "invalid_timeout"),
        ({"command": "true", "mode": "await", "wait_timeout_seconds": -5}, "invalid_timeout"),
        ({"command": "true", "mode": "run"}, "invalid_mode"),
        ({"command": "true", "id": "bx-00000000"}, "unexpected_id"),
        ({"mode": "read", "id": "bx-00000000"}, "unknown_session"),
        ({"mode": "kill", "id": "bx-00000000"}, "unknown_session"),
        ({"mode": "await", "id": "bx-00000000"}, "unknown_session"),
        ({"mode": "read"}, "no_sessions"),
        ({"mode": "kill"}, "missing_id"),
        ({"command": "true", "tail": 5}, "unexpected_argument"),
        ({"command": "true", "idempotency_key": ""}, "invalid_idempotency_key"),
        ({"mode": "read", "idempotency_key": "k"}, "unexpected_argument"),
        ({"command": "true", "mode": "create", "force": True}, "unexpected_argument"),
        ({"mode": "list", "reason": "x"}, "unexpected_argument"),
        ({"command": ["echo", 1]}, "invalid_argument"),
        ({"mode": "read", "id": "bx-1", "command": "ls"}, "unexpected_command"),
        ({"mode": "history", "limit": 0}, "invalid_window"),
        ({"command": "true", "env": {f"V{i}": "x" for i in range(201)}}, "invalid_env"),
        ({"command": "true", "env": {"A": "x\x00y"}}, "invalid_env_value"),
        ({"mode": "read", "id": "bx-00000000", "order": "sideways"}, "invalid_order"),
        ({"mode": "read", "id": "bx-00000000", "start": 0}, "invalid_window"),
        ({"mode": "read", "id": "bx-00000000", "start": 3, "after_seq": 1}, "conflicting_window"),
        ({"command": "true", "kind": "daemon"}, "invalid_kind"),
        ({"command": "true", "mode": "create", "kind": " "}, "invalid_kind"),
        ({"mode": "history", "kind": "Shell"}, "invalid_kind"),
        ({"mode": "read", "id": "bx-00000000", "kind": "exec"}, "unexpected_argument"),
    ]


async def test_bad_requests_get_a_structured_error_and_change_nothing(quest):
    cases = _cases(quest)
    before = domain_events(quest)
    async with client_for(quest) as c:
        for args, code in cases:
            err = await call_error(c, **args)
            assert err["error"] == code, (args, err)
            assert err["message"]
    assert domain_events(quest) == before
    assert not (quest.root / ".ds" / "bash_exec").exists()


@pytest.mark.parametrize("window, code", WINDOWS)
async def test_bad_read_windows_are_refused(quest, window, code):
    async with client_for(quest) as c:
        done = await call(c, command="seq 3", mode="await", wait_timeout_seconds=20)
        err = await call_error(c, mode="read", id=done["id"], **window)
    assert err["error"] == code


async def test_a_workdir_in_a_git_worktree_outside_the_quest_is_allowed(quest, tmp_path):
    repo = quest.repo()
    tree = tmp_path / "wt"
    repo.add_worktree("wt", str(tree))
    async with client_for(quest) as c:
        r = await call(c, command="pwd", mode="await", workdir=str(tree), wait_timeout_seconds=20)
    assert r["log"] == str(tree.resolve()) and r["session"]["workdir"] == str(tree.resolve())


async def test_a_kill_with_a_bad_reason_is_refused_before_anything_is_signalled(quest):
    async with client_for(quest) as c:
        started = await call(c, command="sleep 30", mode="detach")
        before = domain_events(quest)
        err = await call_error(c, mode="kill", id=started["id"], reason="stop\nnow")
        assert err["error"] == "invalid_reason" and err["message"]
        assert domain_events(quest) == before
        assert (await call(c, mode="kill", id=started["id"], force=True, wait=True))["status"] == "terminated"


def test_every_error_code_of_bash_exec_has_a_case(quest):
    # invalid_reason and idempotency_key_conflict need a session first: their own tests
    # (above; test_idempotency_key.py) cover them.
    covered = {code for _, code in _cases(quest)} | {code for _, code in WINDOWS} | {"invalid_reason", "idempotency_key_conflict"}
    shared = {"invalid_argument", "invalid_kind"}  # the shared vocabulary's (ds_events.services.commands)
    assert covered - shared == set(CODES) - WITHOUT_A_CASE
