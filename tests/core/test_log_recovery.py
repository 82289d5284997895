"""Finding the tail and quarantining a torn one, through ``ds_events.log.recovery``."""

from __future__ import annotations

import os

import pytest

from ds_events.events import ConversationMessage
from ds_events.log import EventLog, line_hash
from ds_events.log.recovery import Tail, Torn, find_tail, quarantine


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "events.jsonl"
    with EventLog(p, quest_id="q", policy="never") as log:
        log.append([ConversationMessage(role="user", content=f"m{i}") for i in range(5)])
    return p


def open_fd(path) -> int:
    return os.open(path, os.O_RDWR | os.O_APPEND)


def test_the_tail_of_an_intact_log_is_its_last_line(path):
    fd = open_fd(path)
    try:
        tail, torn = find_tail(fd)
    finally:
        os.close(fd)
    last = path.read_bytes().split(b"\n")[-2]
    assert torn is None
    assert tail == Tail(size=path.stat().st_size, last_seq=5, last_hash=line_hash(last))


def test_an_empty_log_has_an_empty_tail(tmp_path):
    p = tmp_path / "empty"
    p.write_bytes(b"")
    fd = open_fd(p)
    try:
        assert find_tail(fd) == (Tail(), None)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "junk, reason",
    [(b'{"type":"conversation.message","seq":6,"id"', "no newline"), (b'{"seq":6 garbage}\n', "undecodable")],
)
def test_a_torn_tail_is_found_without_changing_anything(path, junk, reason):
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(junk)
    fd = open_fd(path)
    try:
        tail, torn = find_tail(fd)
    finally:
        os.close(fd)
    assert torn is not None and torn.offset == len(good) and torn.data == junk and reason in torn.reason
    assert tail.size == len(good) and tail.last_seq == 5
    assert path.read_bytes() == good + junk


def test_quarantine_keeps_the_bytes_and_truncates_where_they_started(path):
    good = path.read_bytes()
    with open(path, "ab") as f:
        f.write(b'{"torn')
    fd = open_fd(path)
    try:
        event = quarantine(fd, str(path), Torn(len(good), b'{"torn', "torn last line (no newline)"))
    finally:
        os.close(fd)
    assert path.read_bytes() == good
    assert (path.parent / event.quarantine_path).read_bytes() == b'{"torn'
    assert (event.offset, event.length, event.seq) == (len(good), 6, 0)  # no envelope yet
