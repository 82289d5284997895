"""States handed out by the views: typed by projection name, never changed afterwards,
consistent while other threads append."""

from __future__ import annotations

import subprocess
import sys
import threading
import typing

import msgspec
import pytest

from ds_events.errors import NotFound
from ds_events.events import ConversationMessage, QuestControl
from ds_events.home import Quest
from ds_events.log import EventLog
from ds_events.views import Views
from projections import quest_projections
from tests.core.test_fold_property import PROJECTIONS_HANDED_OUT
from tests.helpers import ds_env, event_payloads

PYTHON = [sys.executable]


def test_each_state_overload_names_a_quest_projection_and_returns_its_state_type() -> None:
    typed = {}
    for overload in typing.get_overloads(Quest.state):
        hints = typing.get_type_hints(overload)
        (name,) = typing.get_args(hints["name"])
        typed[name] = hints["return"]
    assert typed == {p.name: p.state_type for p in quest_projections()}


def test_an_unknown_projection_name_is_a_structured_error(quest: Quest) -> None:
    with pytest.raises(NotFound) as err:
        quest.state("statsu")  # type: ignore[call-overload]
    assert err.value.code == "unknown_projection" and "status" in err.value.message


@pytest.mark.parametrize("projection", PROJECTIONS_HANDED_OUT)
def test_a_state_obtained_before_events_does_not_change_after_them(tmp_path, projection) -> None:
    """Real events on a real log; the state is taken every few events, then more come."""
    payloads = event_payloads(7, 600)
    with EventLog(tmp_path / "events.jsonl", quest_id="q1", policy="never") as log:
        views = Views(log, tmp_path, [projection]).load()
        held: list[tuple[object, bytes]] = []
        changed = 0
        for start in range(0, len(payloads), 15):
            log.append(payloads[start : start + 15])
            views.catch_up()
            state = views.state(projection.name)
            encoded = msgspec.json.encode(state)
            changed += bool(held) and encoded != held[-1][1]
            held.append((state, encoded))
        assert changed > 10, "the events should change this projection's state"  # not a vacuous check
        for state, encoded in held:
            assert msgspec.json.encode(state) == encoded


def test_a_quest_status_taken_before_a_pause_still_says_active(quest: Quest) -> None:
    before = quest.state("status")
    quest.emit(QuestControl(action="pause"))
    assert before.status == "active" and quest.state("status").status == "paused"


def test_threads_reading_state_while_others_append_see_whole_consistent_states(quest: Quest) -> None:
    """Each status state counts every event once (sum of counts == last seq) and never
    changes while held; writers append through emit and through transactions (the log's
    lock held while the views catch up), readers call quest.state: nothing deadlocks."""
    stop = threading.Event()
    problems: list[str] = []

    def writer(n: int, in_transaction: bool) -> None:
        for i in range(n):
            event = ConversationMessage(role="user", content=f"m{i}")
            if in_transaction:
                with quest.transaction() as txn:
                    quest.state("interactions")
                    txn.append(event)
            else:
                quest.emit(event)

    def reader() -> None:
        last = 0
        while not stop.is_set():
            status = quest.state("status")
            mailbox = quest.state("interactions")
            before = msgspec.json.encode(status)
            if sum(status.counts.values()) != status.last_seq:
                problems.append(f"counts {sum(status.counts.values())} != last seq {status.last_seq}")
            if status.last_seq < last:
                problems.append(f"went back from {last} to {status.last_seq}")
            if len(mailbox.pending) != len(mailbox.inbound):  # nothing delivered: all pending
                problems.append(f"{len(mailbox.pending)} pending of {len(mailbox.inbound)}")
            last = status.last_seq
            quest.state("status")  # a catch-up while this thread still holds `status`
            if msgspec.json.encode(status) != before:
                problems.append("a held state changed")

    writers = [threading.Thread(target=writer, args=(60, t)) for t in (False, True)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(timeout=120)
    stop.set()
    for t in readers:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in readers + writers), "a thread is stuck (deadlock?)"
    assert problems == []
    final = quest.state("status")
    assert final.user_messages == 120 and sum(final.counts.values()) == final.last_seq


_APPENDER = """
import sys
from ds_events.events import ConversationMessage
from ds_events.log import EventLog
with EventLog(sys.argv[1], quest_id="q1", actor="other", policy="never") as log:
    for i in range(int(sys.argv[2])):
        log.append(ConversationMessage(role="user", content=f"other {i}"))
"""


@pytest.mark.slow
def test_a_transaction_and_a_catch_up_never_deadlock_while_another_process_appends(quest: Quest) -> None:
    """The lock order: a thread in a transaction holds the log's lock and waits for the
    views'; a thread catching up must not wait for the log's lock while holding the
    views' one. It only does when there are lines it has not seen, so another process
    appends all along."""
    other = subprocess.Popen([*PYTHON, "-c", _APPENDER, str(quest.log.path), "1500"], env=ds_env(quest.home))
    stop = threading.Event()

    def transact() -> None:
        while not stop.is_set():
            with quest.transaction() as txn:
                quest.state("status")
                txn.append(ConversationMessage(role="user", content="mine"))

    def read() -> None:
        while not stop.is_set():
            quest.state("status")

    threads = [threading.Thread(target=transact), threading.Thread(target=read), threading.Thread(target=read)]
    for t in threads:
        t.start()
    try:
        assert other.wait(timeout=120) == 0
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread is stuck (lock-order deadlock)"
    status = quest.state("status")
    assert sum(status.counts.values()) == status.last_seq and status.user_messages >= 1500


@pytest.mark.parametrize("projection", PROJECTIONS_HANDED_OUT)
def test_a_lent_state_does_not_change_while_lent_and_costs_no_copy_otherwise(tmp_path, projection) -> None:
    payloads = event_payloads(11, 120)
    with EventLog(tmp_path / "events.jsonl", quest_id="q1", policy="never") as log:
        views = Views(log, tmp_path, [projection]).load()
        log.append(payloads[:60])
        views.catch_up()
        with views.lend(projection.name) as lent:
            encoded = msgspec.json.encode(lent)
            log.append(payloads[60:90])
            views.catch_up()  # events applied while the block runs go into a copy
            assert msgspec.json.encode(lent) == encoded
            copy = views._states[projection.name]
            log.append(payloads[90:])
            views.catch_up()  # the copy is not lent: folded in place, not copied again
            assert views._states[projection.name] is copy and msgspec.json.encode(lent) == encoded
        assert views._states[projection.name] is not lent
        current = views._states[projection.name]
        with views.lend(projection.name) as lent:
            assert lent is current
        log.append(payloads[:5])
        views.catch_up()  # nobody holds it any more: folded in place
        assert views._states[projection.name] is current
