"""The ``ds`` command line: every command's happy path and every error path.

Errors must be one line on stderr that says what to do, with a non-zero exit.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from ds_events.cli import cli, main
from ds_events.home import Home
from tests.helpers import DS, ds_env, wait_until


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    captured = capsys.readouterr()
    return int(exc.value.code or 0), captured.out, captured.err


def ok(capsys, *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return out


def fails(capsys, *argv: str, code: int = 1, says: str = "") -> str:
    rc, out, err = run(capsys, *argv)
    assert rc == code, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert says in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def q(home, capsys):
    ok(capsys, "quest", "new", "--title", "CLI quest", "--id", "cq")
    return "cq"


def test_every_command_has_help():
    # list_commands/get_command, not .commands: the top group imports its commands lazily
    ctx = click.Context(cli)

    def walk(group: click.Group, path: list[str]):
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            assert cmd is not None, f"ds {' '.join([*path, name])} is listed but does not load"
            yield [*path, name], cmd
            if isinstance(cmd, click.Group):
                yield from walk(cmd, [*path, name])

    walked = [" ".join(path) for path, _ in walk(cli, [])]
    assert {"quest show", "events tail", "mcp", "demo", "bash kill"} <= set(walked)
    for path, cmd in walk(cli, []):
        assert cmd.help and cmd.help.strip(), f"ds {' '.join(path)} has no help"


def test_init_and_quest_lifecycle(home, capsys, q):
    assert "already initialised" in ok(capsys, "init")
    listed = json.loads(ok(capsys, "quest", "list", "--json"))
    assert [r["quest_id"] for r in listed] == ["cq"]
    shown = json.loads(ok(capsys, "quest", "show", "cq", "--json"))
    assert shown["title"] == "CLI quest" and shown["status"] == "active"
    assert " (seq 2) for quest cq\n" in ok(capsys, "message", "cq", "hello there")
    assert "status now paused" in ok(capsys, "control", "cq", "pause", "--reason", "coffee")
    assert "status now active" in ok(capsys, "control", "cq", "resume")
    assert "cq" in ok(capsys, "quest", "list")


def test_events_tail_prints_stored_lines_with_json(home, capsys, q):
    for i in range(5):
        ok(capsys, "message", q, f"m{i}")
    out = ok(capsys, "events", "tail", q, "--after", "2", "--limit", "2", "--json")
    lines = out.splitlines()
    stored = (home.quests_dir / q / ".ds" / "events.jsonl").read_text().splitlines()
    assert lines == stored[2:4]
    text = ok(capsys, "events", "tail", q)
    assert "conversation.message" in text and "content='m4'" in text


def test_verify_repair_replay_through_the_cli(home, capsys, q):
    ok(capsys, "message", q, "one")
    ok(capsys, "message", q, "two")
    assert "hash chain intact" in ok(capsys, "verify", q)
    log = home.quests_dir / q / ".ds" / "events.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"one", b"uno")
    log.write_bytes(b"\n".join(lines))
    code, out, _ = run(capsys, "verify", q)
    assert code == 1 and "line 3 (byte" in out and "broken hash chain" in out
    report = json.loads(run(capsys, "verify", q, "--json")[1])
    assert report["ok"] is False and report["problems"][0]["line"] == 3
    repaired = ok(capsys, "repair", q, "--yes")
    # The edited line is quarantined, not re-chained into the log as if genuine.
    assert "could not vouch for 1 event(s) (seq 2)" in repaired
    assert "re-chained hashes from seq 2" in repaired and "log.repaired" in repaired
    assert "hash chain intact" in ok(capsys, "verify", q)
    (home.quests_dir / q / "status.md").unlink()
    assert "status.md" in ok(capsys, "replay", q)
    assert (home.quests_dir / q / "status.md").exists()


@pytest.mark.slow
def test_demo_runs_an_agent_through_six_turns_then_serves_the_quest(tmp_path):
    """`ds demo --serve` as a user runs it: a real process; the quest it made is served."""
    import urllib.request

    proc = subprocess.Popen(
        [*DS, "demo", "--home", str(tmp_path / "demo"), "--serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ds_env(Home(tmp_path / "unused")),
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("serving"):
                break
        out = "".join(lines)
        assert lines and lines[-1].startswith("serving"), out + (proc.stderr.read() if proc.stderr else "")
        port = int(lines[-1].rsplit(":", 1)[1].split()[0])
        for line in proc.stdout:  # the hints, printed once the daemon listens: with its real port
            lines.append(line)
            if line.strip().startswith("open http://"):
                break
        hints = "".join(lines[lines.index(next(x for x in lines if x.startswith("serving"))):])
        assert f"http://127.0.0.1:{port}/#/q/" in hints and f"http://127.0.0.1:{port}/api/quests/" in hints, hints
        assert "8765" not in "".join(lines) or port == 8765, "".join(lines)
        # Six turns of the scripted agent through the real scheduler, each completed.
        stages = ["scout", "baseline", "idea", "experiment", "analysis-campaign", "write"]
        for n, stage in enumerate(stages, 1):
            assert re.search(rf"turn {n}:\s+{stage}\s+completed", out), out
        assert "you reply:  'Write it up' (while the turn waits)" in out and "agent: You chose: Write it up" in out
        assert "verify:  ok" in out and "6 turns (6 completed)" in out
        assert "0 file(s) differed" in out  # what was written live equals what replay renders
        home = Home(tmp_path / "demo")
        (quest_id,) = home.quest_ids()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/quests/{quest_id}/canvas?view=stage&format=svg", timeout=30) as r:
            assert r.status == 200 and b"<svg" in r.read()
        # The daemon hosts the quest's turns: a message sent as the page sends it starts one.
        with home.open_quest(quest_id, read_only=True) as watched:
            before = watched.log.last_seq
        posted = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/quests/{quest_id}/messages", data=json.dumps({"text": "One more thing?"}).encode(),
            headers={"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port}"}, method="POST",
        )  # fmt: skip
        with urllib.request.urlopen(posted, timeout=30) as r:
            assert r.status == 201
        with home.open_quest(quest_id, read_only=True) as watched:
            def turn_ended() -> list:
                ends = [e for e in watched.log.read(after_seq=before) if e.type == "runner.turn_finished"]
                return ends

            [end] = wait_until(turn_ended, timeout=300, what="a turn hosted by ds demo --serve")
            started = [e for e in watched.log.read(after_seq=before) if e.type == "runner.turn_started"]
            assert len(started) == 1 and end.outcome == "completed" and end.run_id == started[0].run_id
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    with home.open_quest(quest_id) as quest:
        events = quest.log.read()
        types = [e.type for e in events]
        # The main experiment ran as a detached shell job that reported progress.
        assert "bash.progress" in types and "artifact.main_experiment_recorded" in types
        main = next(e for e in events if e.type == "artifact.main_experiment_recorded")
        assert main.metrics_summary == {"top1": 0.921}
        # The blocking request was answered mid-turn and delivered through interact.
        reply = next(e for e in events if e.type == "interaction.replied")
        delivered = [e for e in events if e.type == "mailbox.delivered" and reply.id in e.message_ids]
        assert len(delivered) == 1 and delivered[0].consumer.startswith("mcp")
        assert quest.state("status").anchor == "write"


# -- error paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["quest", "show", "nope"],
        ["message", "nope", "hi"],
        ["control", "nope", "pause"],
        ["events", "tail", "nope"],
        ["verify", "nope"],
        ["repair", "nope", "--yes"],
        ["replay", "nope"],
    ],
)
def test_an_unknown_quest_is_one_line_that_points_to_quest_list(home, capsys, argv):
    fails(capsys, *argv, says="ds quest list")


@pytest.mark.parametrize(
    "argv",
    [
        ["quest", "show", "../etc"],
        ["message", "Bad Id", "hi"],
        ["events", "tail", "a/b"],
        ["verify", ".."],
        ["quest", "new", "--title", "t", "--id", "../../x"],
    ],
)
def test_a_bad_quest_id_is_refused_in_one_line(home, capsys, argv):
    fails(capsys, *argv, says="invalid quest id")


@pytest.mark.parametrize(
    "argv, says",
    [
        (["events", "tail", "cq", "--bogus"], "No such option"),
        (["events", "tail", "cq", "--limit", "0"], "--limit"),
        (["events", "tail", "cq", "--after", "-1"], "--after"),
        (["control", "cq", "explode"], "explode"),
        (["message", "cq"], "Missing argument"),
        (["quest", "new"], "--title"),
        (["no-such-command"], "No such command"),
        (["mcp", "--namespace", "nope"], "nope"),
        (["repair", "cq", "--registry"], "not both"),
        (["repair"], "--registry"),
        (["verify", "cq", "--registry"], "not both"),
    ],
)
def test_bad_flags_and_arguments_are_usage_errors_in_one_line(home, capsys, q, argv, says):
    line = fails(capsys, *argv, code=2, says=says)
    assert "--help" in line


@pytest.mark.parametrize(
    "argv, says",
    [
        (["message", "cq", "   "], "needs some text"),
        (["quest", "new", "--title", "again", "--id", "cq"], "already exists"),
        (["quest", "new", "--title", ""], "non-empty title"),
    ],
)
def test_refused_requests_say_why_and_change_nothing(home, capsys, q, argv, says):
    log = home.quests_dir / q / ".ds" / "events.jsonl"
    before = log.read_bytes()
    fails(capsys, *argv, says=says)
    assert log.read_bytes() == before


def test_control_after_completion_is_refused(home, capsys, q):
    from ds_events.services.quest.lifecycle import Complete, complete

    with home.open_quest(q) as quest:
        complete(quest, Complete())
    fails(capsys, "control", q, "resume", says="completed")


def test_an_unreadable_log_is_reported_in_one_line(home, capsys, q):
    log = home.quests_dir / q / ".ds" / "events.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines.insert(0, b"garbage in the middle")
    log.write_bytes(b"\n".join(lines))
    fails(capsys, "events", "tail", q, "--after", "0", says="ds verify")
    fails(capsys, "quest", "show", q, says="ds repair")


def test_a_log_that_is_not_a_file_is_reported_in_one_line(home, capsys, q):
    log = home.quests_dir / q / ".ds" / "events.jsonl"
    log.unlink()
    log.mkdir()
    fails(capsys, "events", "tail", q)


def test_a_corrupt_config_is_reported_in_one_line_by_a_writing_command_and_reading_still_works(home, capsys, q):
    home.config_path.write_text("durability: [unclosed\n")
    seq_before = ok(capsys, "quest", "show", q)  # read-only: needs nothing from the config
    fails(capsys, "message", q, "hello", says="not valid YAML")
    assert ok(capsys, "quest", "show", q) == seq_before  # the refused message wrote nothing


def test_events_tail_follow_sees_appends_from_another_process(home, q):
    env = ds_env(home)
    follower = subprocess.Popen([*DS, "events", "tail", q, "--follow", "--json"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert follower.stdout is not None
        first = json.loads(follower.stdout.readline())
        assert first["type"] == "quest.created"
        subprocess.run([*DS, "message", q, "from another process"], check=True, env=env, capture_output=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            event = json.loads(follower.stdout.readline())
            if event["type"] == "conversation.message":
                assert event["content"] == "from another process"
                break
        else:  # pragma: no cover - reported as a failure below
            pytest.fail("the follower never printed the new message")
    finally:
        follower.kill()
        follower.wait()
        follower.stdout.close()


def test_the_console_script_module_exits_non_zero_with_one_line(home):
    proc = subprocess.run([*DS, "quest", "show", "missing"], capture_output=True, text=True, env=ds_env(home))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"error: unknown_quest: no quest 'missing' in {home.root}: see `ds quest list`"]
    assert Path(sys.executable).exists()


def test_replay_of_a_long_log_shows_progress_on_stderr(home, capsys, q):
    from ds_events.events import ConversationMessage

    with home.open_quest(q) as quest:
        for _ in range(10):
            quest.log.append([ConversationMessage(role="user", content="x" * 1000) for _ in range(1000)])
    code, out, err = run(capsys, "replay", q)
    assert code == 0, err
    assert "replaying" in err
    assert "replayed 10001 events" in out
