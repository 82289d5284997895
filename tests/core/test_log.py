"""EventLog in one process: append, reads by position, idempotency, policies, index, follow."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from ds_events.events import ConversationMessage, QuestControl
from ds_events.log import INDEX_EVERY, EventLog, line_hash
from ds_events.verify import verify_log


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


@pytest.fixture
def log(tmp_path):
    with EventLog(tmp_path / "events.jsonl", quest_id="q", actor="test", policy="never") as log:
        yield log


def test_append_assigns_seq_id_ts_and_chains_prev(log):
    a = log.append(msg(1))
    b = log.append(msg(2))
    assert (a.seq, b.seq) == (1, 2)
    assert a.id and a.ts.endswith("Z") and a.quest_id == "q" and a.actor == "test"
    assert a.prev == ""
    first_line = Path(log.path).read_bytes().split(b"\n")[0]
    assert b.prev == line_hash(first_line)


def test_a_batch_is_appended_atomically_with_consecutive_seqs(log):
    stored = log.append([msg(i) for i in range(5)])
    assert [e.seq for e in stored] == [1, 2, 3, 4, 5]
    assert Path(log.path).read_bytes().count(b"\n") == 5


def test_reappending_an_event_with_a_known_id_returns_the_stored_one(log):
    first = log.append(msg(1))
    log.append(msg(2))
    again = log.append(ConversationMessage(id=first.id, role="user", content="retry"))
    assert again == first
    assert log.last_seq == 2
    # Also within one batch, and across a reopen.
    batch = log.append([ConversationMessage(id="X1", role="user", content="a"), ConversationMessage(id="X1", role="user", content="b")])
    assert [e.seq for e in batch] == [3, 3]
    with EventLog(log.path) as other:
        assert other.append(ConversationMessage(id="X1", role="user", content="c")).seq == 3
        assert other.last_seq == 3


def test_read_after_limit_and_types(log):
    log.append([msg(i) if i % 3 else QuestControl(action="pause") for i in range(1, 301)])
    assert [e.seq for e in log.read(after_seq=250, limit=3)] == [251, 252, 253]
    controls = log.read(types=["quest.control"])
    assert len(controls) == 100 and all(e.type == "quest.control" for e in controls)
    assert log.read(after_seq=300) == []
    assert log.get(INDEX_EVERY + 1).seq == INDEX_EVERY + 1
    assert log.get(999) is None


def test_tail_and_reverse_reads(log):
    log.append([msg(i) if i % 2 else QuestControl(action="resume") for i in range(1, 201)])
    assert [e.seq for e in log.tail(3)] == [198, 199, 200]
    assert [e.seq for e in log.read_reverse(limit=4)] == [200, 199, 198, 197]
    assert [e.seq for e in log.read_reverse(before_seq=10, limit=3)] == [9, 8, 7]
    assert [e.seq for e in log.tail(2, types=["quest.control"])] == [198, 200]


def test_a_missing_or_wrong_index_is_rebuilt_on_open(log):
    log.append([msg(i) for i in range(INDEX_EVERY * 4)])
    good = Path(log.path + ".idx").read_bytes()
    with open(log.path + ".idx", "wb") as f:
        f.write(b"\x07" * len(good))
    with EventLog(log.path) as reopened:
        assert [e.seq for e in reopened.read(after_seq=INDEX_EVERY * 3, limit=2)] == [INDEX_EVERY * 3 + 1, INDEX_EVERY * 3 + 2]
    assert Path(log.path + ".idx").read_bytes() == good


def test_appends_from_another_instance_are_seen_and_chained(log):
    log.append(msg(1))
    with EventLog(log.path, policy="never") as other:
        other.append(msg(2))
        assert log.last_seq == 2
        third = log.append(msg(3))
    assert third.seq == 3
    assert verify_log(log.path).ok


@pytest.mark.parametrize("policy", ["always", "group", "never"])
def test_threads_appending_under_each_policy_get_distinct_seqs(tmp_path, policy):
    with EventLog(tmp_path / "events.jsonl", policy=policy) as log:
        seqs: list[int] = []

        def worker(k: int) -> None:
            for i in range(50):
                seqs.append(log.append(msg(k * 100 + i)).seq)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(seqs) == list(range(1, 401))
    assert verify_log(str(tmp_path / "events.jsonl")).ok


async def test_concurrent_async_appends_share_writes_and_all_land(tmp_path, monkeypatch):
    path = tmp_path / "events.jsonl"
    with EventLog(path, policy="group") as log:
        inode = os.stat(path).st_ino
        real_write = os.write
        writes = 0

        def counting(fd, data):
            nonlocal writes
            if os.fstat(fd).st_ino == inode:  # count only the writes to the log itself
                writes += 1
            return real_write(fd, data)

        monkeypatch.setattr(os, "write", counting)
        stored = await asyncio.gather(*(log.append_async(msg(i)) for i in range(64)))
        monkeypatch.undo()
        assert sorted(e.seq for e in stored) == list(range(1, 65))
        assert 0 < writes < 64  # grouped: fewer writes than appends
    assert verify_log(str(path)).ok


def test_an_unknown_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="always, group or never"):
        EventLog(tmp_path / "events.jsonl", policy="sometimes")  # type: ignore[arg-type]


async def test_follow_yields_existing_then_new_events_from_other_instances(log):
    log.append([msg(i) for i in range(3)])
    got: list[int] = []

    async def consume() -> None:
        async for event in log.follow(after_seq=1, poll_interval=0.01):
            got.append(event.seq)
            if event.seq == 5:
                return

    task = asyncio.create_task(consume())
    with EventLog(log.path, policy="never") as other:
        other.append([msg(10), msg(11)])
    await asyncio.wait_for(task, timeout=10)
    assert got == [2, 3, 4, 5]


def test_transaction_holds_the_lock_for_read_decide_append(log):
    log.append(msg(1))
    with log.transaction() as txn:
        assert txn.last_seq == 1
        stored = txn.append([msg(2), msg(3)])
        assert [e.seq for e in stored] == [2, 3]
        assert log.read(after_seq=1)[-1].seq == 3
    assert verify_log(log.path).ok
