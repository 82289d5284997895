"""Event types: stable tags, envelope round-trip, schema upcasting of recorded old lines."""

from __future__ import annotations

import shutil

import msgspec
import pytest
from hypothesis import given, strategies as st

from ds_events.events import (
    ALL_EVENT_TYPES,
    CURRENT_VERSION,
    TYPES_BY_TAG,
    ConversationMessage,
    EventDecodeError,
    QuestCreated,
    decode_line,
    encode,
    new_event_id,
)
from ds_events.log import EventLog
from ds_events.verify import verify_log
from projections import fold
from projections.status import PROJECTION as STATUS
from tests.conftest import FIXTURES

V1_LOG = FIXTURES / "logs" / "quest_v1.jsonl"


def test_every_event_type_has_a_stable_dotted_tag():
    for t in ALL_EVENT_TYPES:
        tag = t.__struct_config__.tag
        assert isinstance(tag, str) and "." in tag, t
        assert TYPES_BY_TAG[tag] is t


def test_the_core_types_keep_their_stored_tags():
    # Stored tags never change: renaming a class must not change what is on disk.
    expected = {"quest.created", "quest.anchor_changed", "quest.control", "quest.completed", "conversation.message", "log.recovered"}
    assert expected <= set(TYPES_BY_TAG)


def test_a_stored_line_starts_with_its_type_and_round_trips():
    event = ConversationMessage(seq=3, id=new_event_id(), role="user", content="hi\nthere")
    line = encode(event)
    assert line.startswith(b'{"type":"conversation.message"')
    assert b"\n" not in line
    assert decode_line(line) == event


def test_event_ids_are_unique_and_sortable_by_time():
    ids = [new_event_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
    assert [i[:12] for i in ids] == sorted(i[:12] for i in ids)


def test_the_recorded_v1_line_decodes_through_the_upcaster():
    first = V1_LOG.read_bytes().split(b"\n")[0]
    assert b'"v":1' in first and b'"goal"' in first
    event = decode_line(first)
    assert isinstance(event, QuestCreated)
    assert event.v == CURRENT_VERSION["quest.created"] == 2
    assert event.brief == "Check that v1 lines still decode."
    assert event.tags == []


def test_the_recorded_v1_log_verifies_and_replays_into_status(tmp_path):
    path = tmp_path / "events.jsonl"
    shutil.copy(V1_LOG, path)
    assert verify_log(str(path)).ok
    with EventLog(path) as log:
        state = fold(STATUS, log.read())
    assert (state.title, state.brief, state.anchor, state.last_seq) == (
        "Legacy quest from schema v1",
        "Check that v1 lines still decode.",
        "baseline",
        3,
    )


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"{not json", "bad JSON"),
        (b'{"type":"no.such_type","seq":1}', "unknown event type"),
        (b'{"type":"quest.created","seq":1,"v":9,"title":"x"}', "version 9"),
        (b'{"type":"conversation.message","seq":1,"v":1,"role":"robot","content":"x"}', "invalid conversation.message"),
    ],
)
def test_bad_lines_raise_a_decode_error_that_names_the_reason(line, reason):
    with pytest.raises(EventDecodeError, match=reason):
        decode_line(line)


@given(st.text(max_size=200), st.sampled_from(["user", "assistant", "system"]), st.integers(min_value=1, max_value=10**12))
def test_messages_round_trip_through_the_codec(content, role, seq):
    event = ConversationMessage(seq=seq, role=role, content=content)
    assert decode_line(encode(event)) == event


@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_decode_to_something_unchecked(data):
    try:
        event = decode_line(data)
    except EventDecodeError:
        return
    # Anything that does decode is a real, fully typed event that re-encodes.
    assert type(event) in ALL_EVENT_TYPES
    assert msgspec.json.decode(encode(event))["type"] == event.type
