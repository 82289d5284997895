"""bash_exec through an in-process MCP client, with real processes under real monitors."""

from __future__ import annotations

import os
import signal

from ds_events.bash import procs
from tests.helpers import domain_events

from .support import bash_events, call, client_for, group_is_gone, group_members, wait_until


async def test_a_command_that_exits_zero_completes_and_its_output_is_readable(quest):
    async with client_for(quest) as c:
        r = await call(c, command="echo hello; echo world >&2", mode="await", wait_timeout_seconds=20)
    assert r["done"] is True and r["status"] == "completed"
    assert r["session"]["exit_code"] == 0 and r["session"]["reason"] == ""
    assert r["log"].splitlines() == ["hello", "world"]
    assert (r["first_seq"], r["last_seq"], r["log_line_count"], r["log_truncated"]) == (1, 2, 2, False)
    types = [e.type for e in bash_events(quest, r["id"])]
    assert types == ["bash.session_started", "bash.session_exited"]  # state changes, not lines


async def test_a_non_zero_exit_is_recorded_as_failed_with_its_exit_code(quest):
    async with client_for(quest) as c:
        r = await call(c, command="echo about to fail; exit 7", mode="await", wait_timeout_seconds=20)
    assert (r["status"], r["session"]["exit_code"], r["session"]["reason"]) == ("failed", 7, "exit_code")
    exited = bash_events(quest, r["id"])[-1]
    assert exited.type == "bash.session_exited" and exited.exit_code == 7 and exited.status == "failed"


async def test_timeout_seconds_ends_a_session_as_terminated_by_timeout(quest):
    async with client_for(quest) as c:
        r = await call(c, command="echo start; sleep 60", mode="await", timeout_seconds=1, wait_timeout_seconds=20)
    assert r["done"] is True
    s = r["session"]
    assert (s["status"], s["reason"], s["signal"], s["exit_code"]) == ("terminated", "timeout", "SIGTERM", None)
    assert group_is_gone(s["pgid"])


async def test_await_that_times_out_says_so_and_the_session_keeps_running(quest):
    async with client_for(quest) as c:
        started = await call(c, command="echo waiting; read -t 30 x < /dev/zero; sleep 30", mode="detach")
        r = await call(c, mode="await", id=started["id"], wait_timeout_seconds=0.3)
        assert r["done"] is False and r["status"] == "running"
        assert "still running" in r["message"] and "mode='await'" in r["next"] and "kill" in r["next"]
        assert procs.is_alive(r["session"]["pid"], r["session"]["start_time"])
        listed = await call(c, mode="list")
        assert [s["id"] for s in listed["items"]] == [started["id"]] and listed["counts"]["running"] == 1
        killed = await call(c, mode="kill", id=started["id"], force=True, wait=True)
    assert killed["status"] == "terminated" and killed["session"]["reason"] == "user_stop"


async def test_kill_ends_the_whole_process_tree_and_leaves_no_orphan(quest):
    # children and grandchildren in background subshells, one of them ignoring TERM
    tree = (
        "(sleep 300 & sleep 300 & wait) & "
        "(bash -c 'trap \"\" TERM; sleep 300 & wait') & "
        "(bash -c 'sleep 300 & wait') & "
        "echo ready; wait"
    )
    async with client_for(quest) as c:
        started = await call(c, command=tree, mode="detach")
        pgid = started["session"]["pgid"]
        wait_until(lambda: len(group_members(pgid)) >= 8, what="the whole tree to start")
        r = await call(c, mode="kill", id=started["id"], wait=True, reason="tree test")
    assert r["status"] == "terminated" and r["session"]["reason"] == "tree test"
    # Right after the end event: no member left, not even as a zombie.
    assert group_is_gone(pgid)
    kinds = [e.type for e in bash_events(quest, started["id"])]
    assert kinds == ["bash.session_started", "bash.kill_requested", "bash.session_exited"]


async def test_kill_with_force_sends_kill_at_once(quest):
    async with client_for(quest) as c:
        started = await call(c, command="trap '' TERM; echo up; sleep 300", mode="detach")
        wait_until(lambda: "up" in (quest.root / started["session"]["log_path"]).read_text(), what="output")
        r = await call(c, mode="kill", id=started["id"], force=True, wait=True)
    assert (r["status"], r["session"]["signal"]) == ("terminated", "SIGKILL")
    assert r["session"]["kill_force"] is True


async def test_a_command_that_ignores_term_is_killed_after_the_grace_period(home, quest):
    (home.root / "config.yaml").write_text("bash_exec:\n  kill_grace_seconds: 0.5\n")
    async with client_for(quest) as c:
        started = await call(c, command="trap '' TERM; echo up; sleep 300", mode="detach")
        wait_until(lambda: "up" in (quest.root / started["session"]["log_path"]).read_text(), what="output")
        r = await call(c, mode="kill", id=started["id"], wait=True)
    assert (r["status"], r["session"]["signal"], r["session"]["kill_grace_seconds"]) == ("terminated", "SIGKILL", 0.5)


async def test_killing_an_ended_session_changes_nothing(quest):
    async with client_for(quest) as c:
        done = await call(c, command="true", mode="await", wait_timeout_seconds=20)
        before = domain_events(quest)
        r = await call(c, mode="kill", id=done["id"])
    assert r["status"] == "completed" and "ended" in r["message"]
    assert domain_events(quest) == before


async def test_progress_lines_become_progress_events_and_show_on_the_session(quest):
    cmd = "echo '__DS_PROGRESS__ {\"step\": 1}'; echo '__DS_PROGRESS__ {\"step\": 2, \"loss\": 0.5}'; echo '__DS_PROGRESS__ not json'"
    async with client_for(quest) as c:
        r = await call(c, command=cmd, mode="await", wait_timeout_seconds=20)
    progress = [e for e in bash_events(quest, r["id"]) if e.type == "bash.progress"]
    # throttled: at least the latest report is recorded, and never one per line
    assert 1 <= len(progress) <= 2 and progress[-1].data == {"step": 2, "loss": 0.5} and progress[-1].line == 2
    assert r["session"]["progress"] == {"step": 2, "loss": 0.5}
    assert "not json" in r["log"]


async def test_workdir_and_env_reach_the_command_and_only_env_keys_are_recorded(quest):
    (quest.root / "sub" / "dir").mkdir(parents=True)
    async with client_for(quest) as c:
        r = await call(c, command='pwd; echo "$SECRET_TOKEN $DS_BASH_SESSION_ID"', mode="await",
                       workdir="sub/dir", env={"SECRET_TOKEN": "s3cr3t"}, wait_timeout_seconds=20)
    lines = r["log"].splitlines()
    assert lines[0] == str((quest.root / "sub" / "dir").resolve())
    assert lines[1] == f"s3cr3t {r['id']}"
    started = bash_events(quest, r["id"])[0]
    assert started.workdir == "sub/dir" and started.env_keys == ["SECRET_TOKEN"]
    assert "s3cr3t" not in (quest.root / ".ds" / "events.jsonl").read_text()


async def test_list_and_history_show_sessions_with_status_counts(quest):
    async with client_for(quest) as c:
        ok = await call(c, command="true", mode="await", wait_timeout_seconds=20)
        bad = await call(c, command="false", mode="await", wait_timeout_seconds=20)
        running = await call(c, command="sleep 300", mode="detach")
        listed = await call(c, mode="list")
        history = await call(c, mode="history")
        limited = await call(c, mode="history", limit=1)
        await call(c, mode="kill", id=running["id"], wait=True)
        after = await call(c, mode="history")
    assert [s["id"] for s in listed["items"]] == [running["id"]]
    assert [s["id"] for s in history["items"]] == [running["id"], bad["id"], ok["id"]]
    assert [s["id"] for s in limited["items"]] == [running["id"]]
    assert history["counts"] == {"running": 1, "completed": 1, "failed": 1, "terminated": 0, "lost": 0}
    assert after["counts"] == {"running": 0, "completed": 1, "failed": 1, "terminated": 1, "lost": 0}


async def test_read_pages_a_long_log_by_seq_and_previews_head_and_tail(quest):
    async with client_for(quest) as c:
        r = await call(c, command="seq 1 5000", mode="await", wait_timeout_seconds=30)
        sid = r["id"]
        preview = await call(c, mode="read", id=sid)
        tail = await call(c, mode="read", id=sid, tail=3)
        page = await call(c, mode="read", id=sid, after_seq=100, limit=5)
        back = await call(c, mode="read", id=sid, before_seq=11, limit=4)
        between = await call(c, mode="read", id=sid, after_seq=10, before_seq=13)
        last_before = await call(c, mode="read", id=sid, before_seq=20, tail_limit=3)
        all_between = await call(c, mode="read", id=sid, after_seq=10, before_seq=20, tail_limit=50, order="desc")
    assert preview["log_line_count"] == 5000 and preview["omitted"] == [501, 3500] and preview["log_truncated"] is True
    out = preview["log"].splitlines()
    assert out[:2] == ["1", "2"] and out[500] == "... 3000 lines omitted (seq 501..3500) ..." and out[-1] == "5000"
    assert len(out) == 2001  # DeepScientist's preview: the first 500 lines, the marker, the last 1500
    assert (preview["log_preview_head_lines"], preview["log_preview_tail_lines"], preview["log_preview_omitted_lines"]) \
        == (500, 1500, 3000)
    assert (preview["line_start"], preview["line_end"], preview["log_is_partial"]) == (1, 5000, True)
    assert (preview["has_more_before"], preview["has_more_after"]) == (False, False)  # the ends are there; the middle is not
    assert "lines 1-500 and 3501-5000 of 5000" in preview["log_truncation_notice"]
    assert "start=S, tail=N" in preview["log_read_hint"]
    assert tail["log"].splitlines() == ["4998", "4999", "5000"] and tail["first_seq"] == 4998
    assert (tail["line_start"], tail["line_end"], tail["has_more_before"], tail["has_more_after"]) == (4998, 5000, True, False)
    assert "log_preview_head_lines" not in tail and tail["log_is_partial"] is True
    assert [(e["seq"], e["line"]) for e in page["tail"]] == [(n, str(n)) for n in range(101, 106)]
    assert (page["seq_window_start"], page["seq_window_end"]) == (101, 105)
    assert (page["seq_has_more_before"], page["seq_has_more_after"]) == (True, True)
    assert page["log_truncation_notice"].startswith("Lines 101-105 of 5000 only (100 before, 4895 after)")
    assert (back["first_seq"], back["last_seq"]) == (7, 10)
    assert [e["line"] for e in between["tail"]] == ["11", "12"]
    assert [e["seq"] for e in last_before["tail"]] == [17, 18, 19]
    assert [e["seq"] for e in all_between["tail"]] == list(range(19, 10, -1)) and all_between["order"] == "desc"


async def test_the_command_runs_under_a_terminal_in_its_own_process_group(quest):
    async with client_for(quest) as c:
        r = await call(c, command="test -t 1 && echo tty; cut -d' ' -f5 /proc/$$/stat", mode="await", wait_timeout_seconds=20)
    lines = r["log"].split()
    assert lines[0] == "tty" and int(lines[1]) == r["session"]["pgid"] == r["session"]["pid"]
    assert r["session"]["pgid"] != os.getpgid(0) and r["session"]["monitor_pid"] != r["session"]["pid"]


async def test_a_session_stopped_from_outside_is_recorded_as_failed_by_signal(quest):
    async with client_for(quest) as c:
        started = await call(c, command="sleep 300", mode="detach")
        os.killpg(started["session"]["pgid"], signal.SIGKILL)
        r = await call(c, mode="await", id=started["id"], wait_timeout_seconds=20)
    assert (r["status"], r["session"]["signal"], r["session"]["reason"]) == ("failed", "SIGKILL", "signal")


async def test_a_burst_of_progress_lines_is_throttled_to_the_first_and_the_latest(home, quest):
    (home.root / "config.yaml").write_text("bash_exec:\n  progress_interval_seconds: 600\n")
    gate = quest.root / "gate"
    burst = "; ".join(f"echo '__DS_PROGRESS__ {{\"step\": {i}}}'" for i in range(2, 52))
    cmd = f"echo '__DS_PROGRESS__ {{\"step\": 1}}'; while [ ! -f {gate} ]; do sleep 0.02; done; {burst}"
    async with client_for(quest) as c:
        started = await call(c, command=cmd, mode="detach")
        wait_until(lambda: quest.state("bash_sessions").sessions[started["id"]].progress == {"step": 1},
                   what="the first progress report")
        gate.write_text("go")
        r = await call(c, mode="await", id=started["id"], wait_timeout_seconds=20)
    progress = [e.data for e in bash_events(quest, started["id"]) if e.type == "bash.progress"]
    assert progress == [{"step": 1}, {"step": 51}]
    assert r["session"]["progress_updates"] == 2 and r["session"]["progress_line"] == 51
