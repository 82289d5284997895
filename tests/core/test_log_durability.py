"""The durable offset: an append returns only after a sync that covers it, even when
other writers crashed, were recovered or rewrote the file meanwhile (issue 11 item 2).

``os.fdatasync`` is wrapped (the real call still runs) to count syncs, as in
test_log_group_commit.py.
"""

from __future__ import annotations

import os
import threading

import pytest

from ds_events.errors import LogError
from ds_events.events import ConversationMessage
from ds_events.log import EventLog, append_lock
from ds_events.verify import verify_log
from tests.helpers import wait_until

from .test_log_group_commit import SyncRecorder, end_offsets


def msg(i: int, pad: int = 0) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}" + "x" * pad)


@pytest.mark.parametrize("policy", ["always", "group"])
def test_an_append_after_another_writers_torn_line_was_recovered_is_synced(tmp_path, monkeypatch, policy):
    # Was a bug (issue 11): handle A syncs while another writer's half-written line is
    # in the file; A recorded the whole file size as durable, fragment included. A third
    # process then quarantined the fragment and appended shorter lines, so A's next
    # append ended below that stale offset and returned without any fdatasync.
    path = str(tmp_path / "events.jsonl")
    with EventLog(path, quest_id="q", actor="a", policy=policy) as a:
        a.append(msg(1))
        syncs = SyncRecorder(monkeypatch, path)
        syncs.hold_first = True
        t1 = threading.Thread(target=a.append, args=(msg(2),))
        t1.start()
        assert syncs.started.wait(30)  # msg 2 is written; its sync is held
        size = os.path.getsize(path)
        t2 = threading.Thread(target=a.append, args=(msg(3),))
        t2.start()  # writes msg 3, then waits for the held sync to end before its own
        wait_until(lambda: os.path.getsize(path) > size, what="msg 3 written")
        with append_lock(path), open(path, "ab") as f:  # writer B dies mid-line
            f.write(b'{"type":"conversation.message","seq":4,"id":"' + b"x" * 20_000)
        syncs.release.set()
        t1.join(30)
        t2.join(30)
        # Another process recovers the tail: quarantines B's fragment, appends log.recovered.
        with EventLog(path, quest_id="q", actor="c", policy="never") as c:
            assert c.recovered is not None and c.recovered.length > 20_000
        calls = syncs.calls
        stored = a.append(msg(5))
        end = end_offsets(path)[stored.seq]
        assert end < size + 20_000  # the scenario: A's append ends inside the old fragment
        assert syncs.calls > calls, "acknowledged without a sync"
        assert syncs.durable_size() >= end
    assert verify_log(path).ok


def test_a_handle_that_finds_the_file_rewritten_under_it_reloads_and_refuses_to_append(tmp_path):
    # The bytes at A's tail offset no longer continue A's chain (the file was cut back
    # and regrown past it): A must not take them for new lines (its seq count and index
    # entries would point at the wrong events), nor trust any offset it knew, the
    # durable one included. No crash does this (recovery never cuts lines anyone has
    # read), so A also refuses to append over it until ds repair.
    path = tmp_path / "events.jsonl"
    with EventLog(path, quest_id="q", actor="a", policy="always") as a:
        for k in range(10):
            a.append([msg(k * 10 + i) for i in range(10)])
        lines = path.read_bytes().split(b"\n")[:-1]
        cut = sum(len(x) + 1 for x in lines[:50])  # after the 5th batch
        scratch = tmp_path / "scratch.jsonl"
        scratch.write_bytes(path.read_bytes()[:cut])
        with EventLog(scratch, quest_id="q", actor="b", policy="never") as b:
            b.append([msg(100 + i, pad=80) for i in range(80)])  # seqs 51..130, longer lines
        path.write_bytes(scratch.read_bytes())  # in place: same file, other bytes
        assert os.path.getsize(path) > sum(len(x) + 1 for x in lines)
        assert [e.seq for e in a.read(after_seq=128)] == [129, 130]
        assert a.get(40).content == "m39" and a.get(65).content == "m114" + "x" * 80
        assert a.get(129).content == "m178" + "x" * 80
        with pytest.raises(LogError, match=r"changed under this handle.*ds repair"):
            a.append(msg(999))
        with pytest.raises(LogError, match="changed under this handle"):
            a.append(msg(999))  # and stays refused
    assert verify_log(str(path)).problems  # the head anchor still names seq 100's old line


def test_a_sync_records_as_durable_only_what_its_owner_knows_is_intact(tmp_path, monkeypatch):
    from ds_events.log.sync import DurableFile

    path = str(tmp_path / "f")
    known = [0]
    f = DurableFile(path, intact=lambda: (known[0], 1, "h"))
    try:
        os.write(f.fd, b"a" * 60)
        known[0] = 60
        os.write(f.fd, b"b" * 40)  # someone else's bytes, not (yet) known to be whole
        syncs = SyncRecorder(monkeypatch, path)
        f.sync_through(60)
        assert syncs.calls == 1 and f.durable == 60
        f.sync_through(50)  # covered: no second sync
        assert syncs.calls == 1
        f.forget()
        assert f.durable == 0
        f.sync_through(60)
        assert syncs.calls == 2
    finally:
        f.close(sync=False)
