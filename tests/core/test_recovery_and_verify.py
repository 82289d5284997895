"""Torn-tail recovery on open, tamper detection by verify, explicit repair."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from ds_events.events import ConversationMessage, LogRecovered, LogRepaired, decode_line
from ds_events.log import EventLog, LogError
from ds_events.verify import repair_log, verify_log
from tests.helpers import wait_until_async


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "events.jsonl"
    with EventLog(p, quest_id="q", policy="never") as log:
        log.append([msg(i) for i in range(10)])
    return p


def lines_of(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


@pytest.mark.parametrize(
    "tail, reason",
    [
        (b'{"type":"conversation.message","seq":11,"id":"X","ts"', "no newline"),
        (b'{"type":"conversation.message","seq":11,"garbage\n', "undecodable last line"),
    ],
)
def test_a_torn_last_line_is_quarantined_truncated_and_recorded(path, tail, reason):
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(tail)
    with EventLog(path, quest_id="q") as log:
        recovered = log.recovered
        assert isinstance(recovered, LogRecovered)
        assert reason in recovered.reason
        assert (recovered.seq, recovered.offset, recovered.length) == (11, len(good), len(tail))
        assert (path.parent / recovered.quarantine_path).read_bytes() == tail
        assert [e.seq for e in log.read()] == list(range(1, 12))
        assert log.append(msg(99)).seq == 12
    assert path.read_bytes().startswith(good)
    assert verify_log(str(path)).ok


def test_opening_without_recovery_refuses_a_torn_log(path):
    with open(path, "ab") as f:
        f.write(b'{"type":"conv')
    with pytest.raises(LogError, match="torn last line"):
        EventLog(path, recover=False)
    assert path.read_bytes().endswith(b'{"type":"conv')  # nothing changed


def test_a_writer_killed_mid_line_is_recovered_by_the_next_appender_in_another_process(path):
    # A process takes the append lock, writes half a line and dies (as on a crash
    # inside write()); a process that already had the log open must notice it.
    with EventLog(path, quest_id="q", policy="never") as survivor:
        assert survivor.last_seq == 10
        crasher = subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(
                    f"""
                    import fcntl, os, sys, time
                    fd = os.open({str(path) + ".lock"!r}, os.O_RDWR)
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    log = os.open({str(path)!r}, os.O_WRONLY | os.O_APPEND)
                    os.write(log, b'{{"type":"conversation.message","seq":11,"id":"half')
                    print("torn", flush=True)
                    time.sleep(60)  # holds the lock until the SIGKILL below (not a wait)
                    """
                ),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert crasher.stdout is not None and crasher.stdout.readline().strip() == "torn"
        os.kill(crasher.pid, signal.SIGKILL)
        crasher.wait()
        crasher.stdout.close()
        # Readers never see the half line ...
        assert survivor.last_seq == 10
        # ... and the next append quarantines it, records it, then lands after it.
        stored = survivor.append(msg(11))
        assert stored.seq == 12
        recovered = survivor.get(11)
        assert isinstance(recovered, LogRecovered) and recovered.length > 0
    assert verify_log(str(path)).ok


def test_verify_passes_on_an_intact_log(path):
    report = verify_log(str(path))
    assert report.ok and report.lines == 10 and report.last_seq == 10


def test_verify_catches_an_edited_line(path):
    lines = lines_of(path)
    lines[3] = lines[3].replace(b'"m3"', b'"m3-edited"')
    path.write_bytes(b"\n".join(lines) + b"\n")
    problems = verify_log(str(path)).problems
    assert [(p.line, p.reason.split(":")[0]) for p in problems] == [(5, "broken hash chain")]
    assert problems[0].offset == sum(len(x) + 1 for x in lines[:4])


def test_verify_catches_a_deleted_line(path):
    lines = lines_of(path)
    del lines[4]
    path.write_bytes(b"\n".join(lines) + b"\n")
    problems = verify_log(str(path)).problems
    assert {p.line for p in problems} == {5}
    assert any("seq gap: expected seq 5, found 6" in p.reason for p in problems)
    assert any("broken hash chain" in p.reason for p in problems)


def test_verify_catches_a_swapped_pair_of_lines(path):
    lines = lines_of(path)
    lines[6], lines[7] = lines[7], lines[6]
    path.write_bytes(b"\n".join(lines) + b"\n")
    problems = verify_log(str(path)).problems
    assert {p.line for p in problems} >= {7, 8}
    assert any("expected seq 7, found 8" in p.reason for p in problems)
    assert any("out-of-order" in p.reason for p in problems)


def test_verify_reports_garbage_in_the_middle_with_line_and_offset(path):
    lines = lines_of(path)
    lines.insert(2, b"this is not json")
    path.write_bytes(b"\n".join(lines) + b"\n")
    problems = verify_log(str(path)).problems
    assert problems[0].line == 3
    assert problems[0].offset == len(lines[0]) + len(lines[1]) + 2
    assert "bad JSON" in problems[0].reason


def test_verify_never_changes_the_file(path):
    with open(path, "ab") as f:
        f.write(b'{"torn')
    before = path.read_bytes()
    assert not verify_log(str(path)).ok
    assert path.read_bytes() == before


def test_repair_quarantines_bad_lines_and_restores_order_and_chain(path):
    lines = lines_of(path)
    lines[6], lines[7] = lines[7], lines[6]
    lines.insert(2, b"garbage line")
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = repair_log(str(path), quest_id="q")
    assert [p.line for p in report.removed] == [3]
    assert (path.parent / report.quarantine_path).read_bytes() == b"garbage line\n"
    assert isinstance(report.event, LogRepaired) and report.event.removed_lines == [3]
    assert verify_log(str(path)).ok
    with EventLog(path) as log:
        events = log.read()
    contents = [e.content for e in events if isinstance(e, ConversationMessage)]
    assert contents == [f"m{i}" for i in range(10)]  # every good event kept, in seq order
    assert events[-1].type == "log.repaired"


def test_repair_of_an_intact_log_changes_nothing(path):
    before = path.read_bytes()
    report = repair_log(str(path), quest_id="q")
    assert not report.changed and report.event is None
    assert path.read_bytes() == before


def test_an_open_log_keeps_appending_correctly_after_a_repair_replaced_the_file(path):
    with EventLog(path, quest_id="q", policy="never") as log:
        lines = lines_of(path)
        del lines[2]
        path.write_bytes(b"\n".join(lines) + b"\n")
        report = repair_log(str(path), quest_id="q")
        stored = log.append(msg(42))
    # seq 2 cannot be vouched for (the next line's prev names the deleted seq 3): 8 kept
    # + log.repaired + this one.
    assert [u.seq for u in report.unvouched] == [2]
    assert stored.seq == 10
    assert verify_log(str(path)).ok
    assert decode_line(lines_of(path)[-1]).content == "m42"


def test_a_reader_and_a_follower_notice_a_repair_that_replaced_the_file(path):
    import asyncio

    with EventLog(path, quest_id="q", policy="never") as reader:
        assert reader.last_seq == 10
        lines = lines_of(path)
        del lines[2]
        path.write_bytes(b"\n".join(lines) + b"\n")
        repair_log(str(path), quest_id="q")
        # The reader reopens the new file instead of reading the old inode forever.
        assert reader.last_seq == 9  # 8 kept (seq 2 unvouched: the line after it is gone) + log.repaired
        assert reader.read(after_seq=8)[0].type == "log.repaired"

    async def follow_until_error() -> str:
        with EventLog(path, quest_id="q", policy="never") as follower:
            agen = follower.follow(after_seq=10, poll_interval=0.01)
            task = asyncio.ensure_future(agen.__anext__())
            # Repair only once the follower is idle at the tail (waiting to be woken).
            await wait_until_async(lambda: follower._waiters, timeout=10, what="the follower to wait at the tail")
            lines = lines_of(path)
            lines[1], lines[2] = lines[2], lines[1]
            path.write_bytes(b"\n".join(lines) + b"\n")
            repair_log(str(path), quest_id="q")
            try:
                await asyncio.wait_for(task, timeout=10)
            except LogError as exc:
                return str(exc)
            return "no error"

    assert "follow again" in asyncio.run(follow_until_error())


def test_repair_puts_a_swapped_pair_back_in_order_even_when_the_chain_still_holds(path):
    lines = lines_of(path)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = repair_log(str(path), quest_id="q")
    assert report.changed and report.reordered == 2 and report.renumbered == 0
    assert report.event is not None and report.event.reordered == 2
    assert verify_log(str(path)).ok
    assert lines_of(path)[:10] == [lines[0], lines[2], lines[1], *lines[3:]]  # original bytes, original order
