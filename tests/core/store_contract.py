"""The store contract suite: every event store must pass it (not collected by itself).

A store's test module subclasses :class:`StoreContract` and provides one fixture,
``open_store``: a factory that opens a handle on *the same* store each time it is called
(``open_store(actor="x")``), so the suite can test several handles, reopening and
concurrent appends. Handles are closed by the suite. Nothing here knows how a store
keeps its events (after eventsourcing's tests/persistence.py).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable

import pytest

from ds_events.errors import LogError
from ds_events.events import ConversationMessage, QuestControl, encode
from ds_events.log import line_hash
from ds_events.store import EventStore, Head

Opener = Callable[..., EventStore]


def msg(i: int, **kw: object) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}", **kw)  # type: ignore[arg-type]


class StoreContract:
    """Subclass and define the ``open_store`` fixture."""

    @pytest.fixture
    def store(self, open_store: Opener):
        s = open_store(actor="test")
        yield s
        s.close()

    # -- appending ----------------------------------------------------------------

    def test_the_store_satisfies_the_protocol(self, store):
        assert isinstance(store, EventStore)

    def test_an_append_assigns_the_envelope_and_chains_prev(self, store):
        a = store.append(msg(1))
        b = store.append(msg(2))
        assert (a.seq, b.seq) == (1, 2)
        assert a.id and b.id and a.id != b.id
        assert a.ts.endswith("Z") and a.actor == "test" and a.quest_id == store.quest_id
        assert a.prev == "" and b.prev == line_hash(encode(a))
        assert store.head() == Head(2, line_hash(encode(b)))

    def test_an_empty_store_has_an_empty_head(self, store):
        assert store.head() == Head(0, "") and store.last_seq == 0
        assert store.read() == [] and store.tail(5) == [] and store.get(1) is None

    def test_a_batch_gets_consecutive_seqs_and_an_empty_batch_is_a_no_op(self, store):
        stored = store.append([msg(i) for i in range(5)])
        assert [e.seq for e in stored] == [1, 2, 3, 4, 5]
        assert store.append([]) == []
        assert store.last_seq == 5

    def test_a_known_id_is_not_appended_again(self, store, open_store):
        first = store.append(msg(1))
        store.append(msg(2))
        assert store.append(msg(99, id=first.id)) == first
        batch = store.append([msg(3, id="X1"), msg(4, id="X1")])
        assert [e.seq for e in batch] == [3, 3]
        other = open_store()
        try:
            assert other.append(msg(5, id="X1")).seq == 3
        finally:
            other.close()
        assert store.last_seq == 3

    async def test_async_appends_land_with_distinct_seqs(self, store):
        stored = await asyncio.gather(*(store.append_async(msg(i)) for i in range(40)))
        assert sorted(e.seq for e in stored) == list(range(1, 41))
        batch = await store.append_async([msg(100), msg(101)])
        assert [e.seq for e in batch] == [41, 42]
        again = await store.append_async(msg(0, id=stored[0].id))
        assert again == stored[0]

    def test_a_transaction_reads_decides_and_appends_under_the_lock(self, store):
        store.append(msg(1))
        with store.transaction() as txn:
            assert txn.last_seq == 1
            stored = txn.append([msg(2), msg(3)])
            assert [e.seq for e in stored] == [2, 3]
            assert store.read(after_seq=1)[-1].seq == 3
            assert txn.last_seq == 3
        assert [e.seq for e in txn.appended] == [2, 3]

    def test_threads_on_two_handles_get_distinct_gapless_seqs(self, store, open_store):
        other = open_store(actor="other")
        seqs: list[int] = []
        try:

            def worker(handle: EventStore, k: int) -> None:
                for i in range(25):
                    seqs.append(handle.append(msg(k * 100 + i)).seq)  # type: ignore[union-attr]

            threads = [threading.Thread(target=worker, args=(store if k % 2 else other, k)) for k in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        finally:
            other.close()
        assert sorted(seqs) == list(range(1, 151))
        events = store.read()
        assert [e.seq for e in events] == list(range(1, 151))
        assert all(b.prev == line_hash(encode(a)) for a, b in itertools.pairwise(events))

    def test_appends_through_a_closed_handle_are_refused(self, open_store):
        s = open_store()
        s.append(msg(1))
        s.close()
        s.close()  # twice is fine
        with pytest.raises(LogError, match="closed"):
            s.append(msg(2))

    # -- reading ------------------------------------------------------------------

    def test_reads_by_position_limit_and_type(self, store):
        store.append([msg(i) if i % 3 else QuestControl(action="pause") for i in range(1, 301)])
        assert [e.seq for e in store.read(after_seq=250, limit=3)] == [251, 252, 253]
        controls = store.read(types=["quest.control"])
        assert len(controls) == 100 and all(e.type == "quest.control" for e in controls)
        assert [e.seq for e in store.read(after_seq=100, limit=2, types=["quest.control"])] == [102, 105]
        assert store.read(after_seq=300) == []
        assert store.get(65).seq == 65 and store.get(301) is None and store.get(0) is None

    def test_tail_and_reverse_reads(self, store):
        store.append([msg(i) if i % 2 else QuestControl(action="resume") for i in range(1, 201)])
        assert [e.seq for e in store.tail(3)] == [198, 199, 200]
        assert [e.seq for e in store.read_reverse(limit=4)] == [200, 199, 198, 197]
        assert [e.seq for e in store.read_reverse(before_seq=10, limit=3)] == [9, 8, 7]
        assert [e.seq for e in store.tail(2, types=["quest.control"])] == [198, 200]
        assert [e.seq for e in store.read_reverse(before_seq=7, limit=10, types=["quest.control"])] == [6, 4, 2]

    def test_stored_lines_are_the_encoded_events(self, store):
        stored = store.append([msg(i) for i in range(10)])
        lines = list(store.iter_lines(after_seq=4))
        assert [seq for seq, _ in lines] == list(range(5, 11))
        assert [line for _, line in lines] == [encode(e) for e in stored[4:]]

    def test_another_handle_sees_appends_at_once_and_after_reopening(self, store, open_store):
        store.append(msg(1))
        other = open_store()
        try:
            other.append(msg(2))
            assert store.last_seq == 2
            assert store.append(msg(3)).seq == 3
        finally:
            other.close()
        store.close()
        again = open_store()
        try:
            assert [e.content for e in again.read()] == ["m1", "m2", "m3"]
            assert again.head().seq == 3
        finally:
            again.close()

    async def test_follow_yields_existing_then_new_events_from_other_handles(self, store, open_store):
        store.append([msg(i) for i in range(3)])
        got: list[int] = []

        async def consume() -> None:
            async for event in store.follow(after_seq=1, poll_interval=0.01):
                got.append(event.seq)
                if event.seq == 5:
                    return

        task = asyncio.create_task(consume())
        other = open_store()
        try:
            other.append([msg(10), msg(11)])
        finally:
            other.close()
        await asyncio.wait_for(task, timeout=10)
        assert got == [2, 3, 4, 5]
