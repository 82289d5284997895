"""``ds run`` shows its turn live, in the text form of ``ds events tail`` (one formatter),
or as NDJSON, or one line per turn; and a command that does nothing says why."""

from __future__ import annotations

import io
import json
import subprocess

import pytest

from ds_events.cli.eventtext import EventPrinter
from ds_events.events import encode
from ds_events.events.bash import BashProgress
from ds_events.events.core import ConversationMessage
from ds_events.home import Home, Quest
from ds_events.services import quest as quest_service
from tests.cli.test_cli import fails, ok
from tests.helpers import DS, ds_env
from tests.runtime.test_scheduler import trajectory

# A turn that says something, makes a tool call and runs a shell job that reports
# progress three times (what `ds run` must show as it happens).
STEPS = [
    {"say": "starting"},
    {"call": "bash_exec.bash_exec", "save": "job", "args": {
        "mode": "await", "wait_timeout_seconds": 60,
        "command": "for i in 1 2 3; do echo \"__DS_PROGRESS__ {\\\"step\\\": $i}\"; done"}},
    {"say": "done: {{job.exit_code}}"},
]  # fmt: skip


def _ds_run(quest: Quest, *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*DS, "run", quest.id, *argv], env=ds_env(quest.home), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def test_ds_run_prints_every_event_of_its_turn_as_events_tail_does(quest: Quest, tmp_path) -> None:
    traj = trajectory(tmp_path, STEPS)
    start = quest.log.last_seq
    done = _ds_run(quest, "--runner", "scripted", "--trajectory", traj, "--message", "go")
    lines = done.stdout.splitlines()
    tail = subprocess.run([*DS, "events", "tail", quest.id, "--after", str(start), "--limit", "10000"],
                          env=ds_env(quest.home), capture_output=True, text=True, timeout=120)  # fmt: skip
    expected = tail.stdout.splitlines()
    # Every event the run appended, in order, exactly as the tail prints them, then the turn's line.
    assert expected and lines[: len(expected)] == expected, done.stdout
    types = [line.split()[2] for line in expected]
    assert types[0] == "conversation.message" and types[-1] == "runner.turn_finished"
    assert {"runner.agent_message", "runner.tool_call", "runner.tool_result", "bash.session_exited"} <= set(types)
    # Not a terminal: each progress update the log holds is a line (the monitor throttles them).
    assert types.count("bash.progress") >= 1 and all("\r" not in line for line in lines)
    rest = lines[len(expected):]
    assert len(rest) == 2 and " completed " in rest[0] and rest[1].startswith("1 turn(s); no message is queued")


def test_ds_run_json_is_the_stored_lines_then_one_summary(quest: Quest, tmp_path) -> None:
    traj = trajectory(tmp_path, STEPS)
    start = quest.log.last_seq
    done = _ds_run(quest, "--runner", "scripted", "--trajectory", traj, "--message", "go", "--json")
    *events, last = done.stdout.splitlines()
    stored = [line.decode() for _, line in quest.log.iter_lines(after_seq=start)]
    assert events == stored  # byte for byte what the log holds
    summary = json.loads(last)
    assert summary["type"] == "run.summary" and "seq" not in summary
    [turn] = summary["turns"]
    assert turn["outcome"] == "completed" and turn["tool_calls"] == 1
    assert summary["status"] == "active" and summary["idle"]["reason"] == "nothing_queued"


def test_ds_run_quiet_prints_one_line_per_turn(quest: Quest, tmp_path) -> None:
    traj = trajectory(tmp_path, [{"say": "one"}], [{"say": "two"}])
    done = _ds_run(quest, "--runner", "scripted", "--trajectory", traj, "--message", "go", "--quiet")
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("run-") and " completed " in lines[0], done.stdout
    assert lines[1].startswith("1 turn(s);")


def test_ds_run_says_why_nothing_runs(home: Home, capsys, tmp_path) -> None:
    traj = trajectory(tmp_path, [{"say": "x"}])
    ok(capsys, "quest", "new", "--title", "Why", "--id", "why")
    args = ("run", "why", "--runner", "scripted", "--trajectory", traj)
    assert ok(capsys, *args).strip() == 'nothing to run: no message is queued — ds run why --message "..." (or ds message why "...")'
    ok(capsys, "control", "why", "pause")
    assert ok(capsys, *args).strip() == "nothing to run: the quest is paused — ds control why resume"
    ok(capsys, "control", "why", "stop")
    assert ok(capsys, *args).strip() == "nothing to run: the quest is stopped — ds control why resume"
    ok(capsys, "control", "why", "resume")
    with home.open_quest("why") as q:  # a message queued before the quest was archived waits
        quest_service.post_message(q, quest_service.PostMessage(text="queued"))
    ok(capsys, "quest", "archive", "why")
    assert ok(capsys, *args).strip() == "nothing to run: the quest is archived — ds quest unarchive why"
    with home.open_quest("why", read_only=True) as q:
        assert q.state("turns").total == 0
    ok(capsys, "quest", "unarchive", "why")
    with home.open_quest("why") as q:
        quest_service.complete(q, quest_service.Complete(summary="done"))
    out = ok(capsys, *args).strip()
    assert out.startswith("nothing to run: the quest is completed — ") and "ds quest new" in out
    summary = json.loads(ok(capsys, *args, "--json").strip())
    assert summary == {"type": "run.summary", "turns": [], "status": "completed",
                       "idle": {"reason": "completed", "message": out.removeprefix("nothing to run: ")}}  # fmt: skip


def test_ds_run_on_a_quest_whose_failed_turn_is_held_says_what_failed(home: Home, capsys, tmp_path) -> None:
    from ds_events.events.runner import TurnFailure, TurnFinished, TurnHeld, TurnStarted

    traj = trajectory(tmp_path, [{"say": "x"}])
    ok(capsys, "quest", "new", "--title", "Held", "--id", "held")
    failure = TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record", call_id="call-2",
                          error="invalid_metrics")  # fmt: skip
    with home.open_quest("held") as q:
        q.emit(TurnStarted(run_id="run-1", runner="scripted", skill="scout"))
        q.emit(TurnFinished(run_id="run-1", outcome="failed", reason="exit 1"))
        q.emit(TurnHeld(run_id="run-1", attempt=1, max_attempts=3, reason="artifact.record refused", failure=failure))
    out = ok(capsys, "run", "held", "--runner", "scripted", "--trajectory", traj).strip()
    assert out.startswith("nothing to run: failed: attempt 1 of 3 — artifact.record refused"), out
    assert "ds control held resume" in out and "no message is queued" not in out
    summary = json.loads(ok(capsys, "run", "held", "--runner", "scripted", "--trajectory", traj, "--json").strip())
    assert summary["idle"] == {"reason": "failed", "message": out.removeprefix("nothing to run: ")}


def test_ds_run_refuses_quiet_with_json(home: Home, capsys) -> None:
    ok(capsys, "quest", "new", "--title", "Flags", "--id", "fl")
    fails(capsys, "run", "fl", "--quiet", "--json", code=2, says="--quiet and --json")


def test_a_control_that_changes_nothing_says_so_and_records_nothing(home: Home, capsys) -> None:
    ok(capsys, "quest", "new", "--title", "Ctl", "--id", "ctl")
    seq = home.open_quest("ctl", read_only=True).log.last_seq
    assert ok(capsys, "control", "ctl", "resume").strip() == "nothing to do: the quest is active already — `ds run ctl` runs its turns"
    ok(capsys, "control", "ctl", "pause")
    assert ok(capsys, "control", "ctl", "pause").strip() == "nothing to do: the quest is paused already"
    with home.open_quest("ctl", read_only=True) as q:
        assert q.log.last_seq == seq + 1  # the one pause that changed something


def _line(event, seq: int) -> bytes:
    import msgspec

    return encode(msgspec.structs.replace(event, seq=seq, ts="2026-12-02T00:00:00Z", quest_id="q", actor="bash_monitor"))


def test_on_a_terminal_progress_is_one_line_updated_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a terminal wide enough for the whole line, whatever runs the test
    stream = io.StringIO()
    printer = EventPrinter(stream, tty=True)
    for n in (1, 2):
        printer.line(_line(BashProgress(session_id="bx-1", line=n, data={"step": n}), n))
    assert stream.getvalue().count("\r\x1b[K") == 2 and "\n" not in stream.getvalue()
    printer.line(_line(ConversationMessage(role="user", content="hi"), 3))
    text = stream.getvalue()
    # The last progress update stays on screen, ended by a newline before the next event.
    assert text.endswith("\n") and text.count("\n") == 2 and "'step': 2" in text.split("\n")[0].rsplit("\r\x1b[K", 1)[1]
    piped = io.StringIO()
    plain = EventPrinter(piped, tty=False)
    for n in (1, 2):
        plain.line(_line(BashProgress(session_id="bx-1", line=n, data={"step": n}), n))
    assert "\r" not in piped.getvalue() and piped.getvalue().count("\n") == 2


@pytest.mark.parametrize("argv", [["quest", "archive", "nope"], ["quest", "unarchive", "nope"], ["quest", "delete", "nope", "--yes"]])
def test_lifecycle_commands_on_an_unknown_quest_fail_with_its_code(home: Home, capsys, argv) -> None:
    fails(capsys, *argv, says="unknown_quest")



def test_on_a_real_terminal_ds_run_rewrites_the_progress_line_in_place(quest: Quest, tmp_path) -> None:
    import os
    import pty

    traj = trajectory(tmp_path, STEPS)
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*DS, "run", quest.id, "--runner", "scripted", "--trajectory", traj, "--message", "go"],
                            env=ds_env(quest.home, COLUMNS="200"), stdout=follower, stderr=subprocess.PIPE)  # fmt: skip
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        assert proc.wait(timeout=300) == 0
        if proc.stderr is not None:
            proc.stderr.close()
    screen = b"".join(chunks).decode()
    progress = screen.split("\r\x1b[K")[1:]
    assert progress and all(" bash.progress " in p.split("\n")[0] for p in progress), screen
    # No progress update is printed as a line of its own: each is cleared over, the last one ended by the next event.
    assert not any(" bash.progress " in line and "\x1b[K" not in line for line in screen.splitlines()), screen
