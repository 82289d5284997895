"""A batch is all or nothing (issue 11 item 4): its lines say they belong together,
readers never see part of one, recovery drops an incomplete one whole, and a failed
write (a full disk) keeps nothing and stops the handle until it is reopened.

Full-disk tests run on a real tmpfs that they fill (tests/core/full_disk.py), or, where
none can be mounted, on a fault-injecting ``os.write`` at the edge.
"""

from __future__ import annotations

import errno
import os

import pytest

from ds_events.errors import DiskFull, LogError
from ds_events.events import ConversationMessage, LogRecovered, decode_line
from ds_events.log import EventLog, append_lock
from ds_events.verify import verify_log

from .full_disk import FullDisk, small_fs


def msg(i: int, pad: int = 0) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}" + "x" * pad)


def lines_of(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "events.jsonl"
    with EventLog(p, quest_id="q", policy="never") as log:
        log.append(msg(0))
        log.append([msg(1), msg(2)])
    return p


def encoded_batch(path, events) -> list[bytes]:
    """The lines a batch of ``events`` would be stored as at the end of the log at
    ``path`` (written elsewhere first, to know its bytes)."""
    other = path.parent / "scratch.jsonl"
    other.write_bytes(path.read_bytes())
    with EventLog(other, quest_id="q", policy="never") as log:
        before = log.last_seq
        log.append(events)
    return lines_of(other)[before:]


def test_every_line_of_a_batch_says_how_many_of_its_lines_follow(tmp_path):
    with EventLog(tmp_path / "events.jsonl", policy="never") as log:
        single = log.append(msg(0))
        batch = log.append([msg(i) for i in range(1, 5)])
        stored = log.read()
    assert single.more == 0
    assert [e.more for e in batch] == [3, 2, 1, 0]
    assert [e.more for e in stored] == [0, 3, 2, 1, 0]


@pytest.mark.parametrize("cut", ["at a line end", "inside a line"])
def test_recovery_drops_every_line_of_an_incomplete_batch(path, cut):
    good = path.read_bytes()
    batch = encoded_batch(path, [msg(i) for i in range(10, 15)])
    partial = b"".join(line + b"\n" for line in batch[:3])
    if cut == "inside a line":
        partial += batch[3][:20]
    with open(path, "ab") as f:  # a writer died after writing part of the batch
        f.write(partial)
    with EventLog(path, quest_id="q") as log:
        recovered = log.recovered
        assert isinstance(recovered, LogRecovered)
        assert recovered.dropped_events == 3 and "incomplete batch" in recovered.reason
        assert (recovered.offset, recovered.length) == (len(good), len(partial))
        assert (path.parent / recovered.quarantine_path).read_bytes() == partial
        assert [e.seq for e in log.read()] == [1, 2, 3, 4]  # the 3 kept events, log.recovered
        assert log.read()[-1].type == "log.recovered"
    assert path.read_bytes().startswith(good)
    assert verify_log(str(path)).ok


def test_a_reader_never_sees_part_of_a_batch_in_progress(path):
    batch = encoded_batch(path, [msg(i) for i in range(10, 15)])
    with EventLog(path, quest_id="q", policy="never") as reader:
        with append_lock(str(path)), open(path, "ab") as f:  # a write in progress elsewhere
            f.write(b"".join(line + b"\n" for line in batch[:3]))
            f.flush()
            assert reader.last_seq == 3
            assert [e.seq for e in reader.read()] == [1, 2, 3]
            assert list(reader.iter_lines(after_seq=3)) == []
            f.write(b"".join(line + b"\n" for line in batch[3:]))
        assert reader.last_seq == 8
        assert [e.content for e in reader.read(after_seq=3)] == [f"m{i}" for i in range(10, 15)]


def test_the_next_appender_drops_a_batch_another_writer_left_incomplete(path):
    batch = encoded_batch(path, [msg(i) for i in range(10, 15)])
    with EventLog(path, quest_id="q", policy="never") as survivor:
        assert survivor.last_seq == 3
        with append_lock(str(path)), open(path, "ab") as f:  # that writer dies mid-batch
            f.write(b"".join(line + b"\n" for line in batch[:4]) + batch[4][:10])
        stored = survivor.append(msg(99))
        recovered = survivor.get(4)
        assert isinstance(recovered, LogRecovered) and recovered.dropped_events == 4
        assert stored.seq == 5
        assert [e.content for e in survivor.read() if isinstance(e, ConversationMessage)] == ["m0", "m1", "m2", "m99"]
    assert verify_log(str(path)).ok


# -- write errors ----------------------------------------------------------------------


@pytest.fixture
def full_disk(monkeypatch):
    with small_fs("4m") as (where, real):
        yield FullDisk(monkeypatch, where, real)


def test_a_batch_on_a_full_disk_keeps_nothing_and_the_handle_refuses_until_reopened(full_disk):
    path = full_disk.path / "events.jsonl"
    log = EventLog(path, quest_id="q", policy="group")
    try:
        log.append([msg(i) for i in range(3)])
        before = path.read_bytes()
        full_disk.fill(leave=0)
        with pytest.raises(DiskFull, match="disk is full") as caught:
            log.append([msg(10 + i, pad=20_000) for i in range(5)])  # bigger than any slack
        assert caught.value.code == "disk_full" and isinstance(caught.value, LogError)
        assert path.read_bytes() == before  # not one line of the batch stayed
        full_disk.free()
        with pytest.raises(DiskFull, match="earlier write failed"):
            log.append(msg(20))  # even with space again: reopen first
    finally:
        log.close()
    with EventLog(path, quest_id="q", policy="group") as again:
        assert again.recovered is None
        assert [e.seq for e in again.append([msg(30), msg(31)])] == [4, 5]
    assert verify_log(str(path)).ok


def test_a_write_error_other_than_a_full_disk_is_a_log_error_and_keeps_nothing(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", policy="never") as log:
        log.append(msg(0))
        before = path.read_bytes()
        inode = os.stat(path).st_ino
        real_write = os.write

        def failing(fd, data):  # writes half, then the device fails
            if os.fstat(fd).st_ino == inode:
                real_write(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.EIO, "simulated I/O error")
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", failing)
        with pytest.raises(LogError, match=r"a write failed .*simulated I/O error") as caught:
            log.append([msg(1), msg(2), msg(3)])
        assert not isinstance(caught.value, DiskFull)
        monkeypatch.undo()
        assert path.read_bytes() == before
        with pytest.raises(LogError, match="earlier write failed"):
            log.append(msg(4))
    assert verify_log(str(path)).ok


def test_a_log_with_a_torn_tail_on_a_full_disk_can_still_be_read(full_disk):
    path = full_disk.path / "events.jsonl"
    with EventLog(path, quest_id="q", policy="never") as log:
        log.append([msg(i) for i in range(3)])
    with open(path, "ab") as f:
        f.write(b'{"type":"conversation.message","seq":4,"id":"torn')
    before = path.read_bytes()
    full_disk.fill(leave=0)
    with EventLog(path, quest_id="q") as log:  # recovery cannot write its quarantine
        assert log.torn is not None and log.torn.offset == before.index(b'{"type":"conversation.message","seq":4')
        assert [e.content for e in log.read()] == ["m0", "m1", "m2"]
        assert log.last_seq == 3 and [e.seq for e in log.tail(2)] == [2, 3]
        with pytest.raises(DiskFull):
            log.append(msg(9))
    assert path.read_bytes() == before  # nothing was truncated or written
    full_disk.free()
    with EventLog(path, quest_id="q") as log:  # space again: recovered as usual
        assert log.recovered is not None and log.torn is None
        assert log.append(msg(9)).seq == 5
    assert verify_log(str(path)).ok


def test_a_failed_index_write_does_not_fail_an_append_that_landed(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", policy="never") as log:
        real_open = open

        def no_index(file, *args, **kwargs):
            if str(file).endswith(".idx") and args and "b" in args[0] and ("w" in args[0] or "+" in args[0]):
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr("builtins.open", no_index)
        stored = log.append([msg(i) for i in range(200)])  # crosses index entries
        monkeypatch.undo()
        assert stored[-1].seq == 200
        assert log.get(150).content == "m149"
    with EventLog(path) as again:  # the index is rebuilt on open
        assert [e.seq for e in again.read(after_seq=190, limit=3)] == [191, 192, 193]
    assert verify_log(str(path)).ok


def test_old_lines_without_batch_marks_still_decode_and_count_as_whole():
    from tests.conftest import FIXTURES

    lines = (FIXTURES / "logs" / "quest_v1.jsonl").read_bytes().split(b"\n")[:-1]
    events = [decode_line(line) for line in lines]
    assert events and all(e.more == 0 for e in events)
    assert all(b'"more"' not in line for line in lines)


def test_verify_reports_an_incomplete_batch_at_the_end_and_repair_quarantines_it_whole(path):
    from ds_events.verify import repair_log

    batch = encoded_batch(path, [msg(i) for i in range(10, 15)])
    with open(path, "ab") as f:
        f.write(b"".join(line + b"\n" for line in batch[:3]))
    problems = verify_log(str(path)).problems
    assert [(p.line, "incomplete batch" in p.reason) for p in problems] == [(4, True)]
    report = repair_log(str(path), quest_id="q")
    assert [p.line for p in report.removed] == [4, 5, 6]
    assert (path.parent / report.quarantine_path).read_bytes() == b"".join(line + b"\n" for line in batch[:3])
    assert verify_log(str(path)).ok
    with EventLog(path) as log:
        assert [e.type for e in log.read()] == ["conversation.message"] * 3 + ["log.repaired"]
