"""``ds bash list|read|kill`` over real sessions."""

from __future__ import annotations

import json

import pytest

from ds_events.cli import main as ds_main
from ds_events.cli.bash import group

from .support import group_is_gone, session_of, start, wait_until


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        ds_main(list(argv))
    captured = capsys.readouterr()
    return int(info.value.code or 0), captured.out, captured.err


def test_ds_bash_lists_reads_and_kills_a_quests_sessions(quest, capsys):
    done = start(quest, "seq 1 3000")
    running = start(quest, "echo up; sleep 300")
    wait_until(lambda: session_of(quest, done.id).status == "completed", what="seq to finish")

    code, out, _ = run(capsys, "bash", "list", "q1")
    assert code == 0 and running.id in out and done.id not in out and "running=1" in out and "completed=1" in out
    code, out, _ = run(capsys, "bash", "list", "q1", "--all", "--json")
    assert [s["id"] for s in json.loads(out)["sessions"]] == [running.id, done.id]

    code, out, err = run(capsys, "bash", "read", "q1", done.id, "--tail", "3")
    assert out.splitlines() == ["2998", "2999", "3000"] and "3000 lines" in err
    code, out, _ = run(capsys, "bash", "read", "q1", done.id, "--after", "10", "--limit", "2", "--numbers")
    assert [line.split() for line in out.splitlines()] == [["11", "11"], ["12", "12"]]
    code, out, _ = run(capsys, "bash", "read", "q1", done.id, "--json")
    body = json.loads(out)
    assert body["total_lines"] == 3000 and body["omitted"] == [501, 1500] and body["lines"][-1] == [3000, "3000"]

    code, out, _ = run(capsys, "bash", "kill", "q1", running.id, "--wait", "--reason", "from the cli")
    assert code == 0 and f"{running.id}: terminated (from the cli)" in out
    assert group_is_gone(running.pgid)  # right after the end: not even a zombie


def test_ds_bash_refuses_an_unknown_session_or_a_bad_window_with_one_line(quest, capsys):
    code, _, err = run(capsys, "bash", "read", "q1", "bx-nope")
    assert code == 1 and err.startswith("error: unknown_session: no bash session 'bx-nope'") and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "bash", "kill", "q1", "bx-nope")
    assert code == 1 and "bx-nope" in err
    done = start(quest, "true")
    code, _, err = run(capsys, "bash", "read", "q1", done.id, "--tail", "0")
    assert code == 1 and "tail must be a whole number" in err
    code, _, err = run(capsys, "bash", "list", "nosuchquest")
    assert code == 1 and "nosuchquest" in err


def test_every_ds_bash_command_has_help_with_an_example(capsys):
    for name in group.commands:
        code, out, _ = run(capsys, "bash", name, "--help")
        assert code == 0 and "Example: ds bash" in out, name
