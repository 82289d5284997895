"""The sparse seq index through its own interface (``ds_events.log.index``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ds_events.events import ConversationMessage
from ds_events.log import INDEX_EVERY, EventLog
from ds_events.log.index import SparseIndex


def msg(i: int) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}")


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "events.jsonl"
    with EventLog(p, quest_id="q", policy="never") as log:
        log.append([msg(i) for i in range(INDEX_EVERY * 10)])
    return p


@pytest.fixture
def fd(path):
    fd = os.open(path, os.O_RDONLY)
    yield fd
    os.close(fd)


def line_at(path, offset: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.readline()


def test_appends_write_one_entry_per_index_every_events_and_reads_seek_through_them(path, fd):
    index = SparseIndex(str(path) + ".idx")
    index.refresh(fd)  # what the appender wrote
    assert len(index) == 10
    seq, offset = index.seek(fd, INDEX_EVERY * 9 + 5)
    assert seq == INDEX_EVERY * 9 + 1
    assert line_at(path, offset).startswith(b'{"type":"conversation.message","seq":%d,' % seq)
    assert index.seek(fd, 1) == (1, 0)
    assert index.seek(fd, 10**9)[0] == INDEX_EVERY * 9 + 1  # past the end: the last entry


def test_load_keeps_the_longest_good_prefix_and_rebuilds_the_rest(path, fd):
    idx = str(path) + ".idx"
    good = Path(idx).read_bytes()
    with open(idx, "r+b") as f:  # entries 6.. point at the wrong bytes
        f.seek(6 * 8)
        f.write(b"\x07" * (len(good) - 6 * 8))
    index = SparseIndex(idx)
    index.load(fd, os.fstat(fd).st_size, INDEX_EVERY * 10)
    assert len(index) == 10
    assert Path(idx).read_bytes() == good
    for slot in range(10):
        seq, offset = index.entry(slot)
        assert SparseIndex.entry_matches(fd, os.fstat(fd).st_size, slot, offset)
        assert line_at(path, offset).startswith(b'{"type":"conversation.message","seq":%d,' % seq)


def test_an_entry_that_does_not_start_its_line_does_not_match(path, fd):
    size = os.fstat(fd).st_size
    index = SparseIndex(str(path) + ".idx")
    index.refresh(fd)
    _seq, offset = index.entry(3)
    assert SparseIndex.entry_matches(fd, size, 3, offset)
    assert not SparseIndex.entry_matches(fd, size, 3, offset + 1)  # mid-line
    assert not SparseIndex.entry_matches(fd, size, 2, offset)  # another seq's line
    assert not SparseIndex.entry_matches(fd, size, 3, size)  # past the end


def test_refresh_ignores_entries_beyond_the_end_of_the_log(path, fd, tmp_path):
    idx = str(path) + ".idx"
    with open(idx, "ab") as f:
        f.write((10**12).to_bytes(8, "little"))  # an entry written ahead of its line
    index = SparseIndex(idx)
    index.refresh(fd)
    assert len(index) == 10


def test_add_lines_notes_only_the_indexed_seqs(tmp_path):
    index = SparseIndex(str(tmp_path / "x.idx"))
    index.add_lines(1, list(range(0, 1000, 10)), persist=False)  # seqs 1..100 at offsets 0, 10, ...
    assert len(index) == 2
    assert index.entry(1) == (INDEX_EVERY + 1, INDEX_EVERY * 10)
    index.add_lines(101, list(range(1000, 2000, 10)), persist=True)  # seqs 101..200
    assert len(index) == 4 and index.entry(3) == (3 * INDEX_EVERY + 1, 3 * INDEX_EVERY * 10)
    assert os.path.getsize(tmp_path / "x.idx") == 4 * 8


def test_an_entry_beyond_what_a_read_covers_is_skipped_not_dropped(path, fd):
    index = SparseIndex(str(path) + ".idx")
    index.refresh(fd)
    _seq, offset9 = index.entry(9)
    # A reader whose view of the log ends before entry 9's line (an append landed since).
    assert index.seek(fd, 9 * INDEX_EVERY + 5, size=offset9) == index.entry(8)
    assert len(index) == 10  # entry 9 is kept ...
    assert index.seek(fd, 9 * INDEX_EVERY + 5) == index.entry(9)  # ... and used once the read covers it


def test_a_wrong_entry_is_dropped_at_first_use_and_an_earlier_one_used(path, fd):
    idx = str(path) + ".idx"
    data = bytearray(Path(idx).read_bytes())
    data[5 * 8 : 6 * 8] = data[6 * 8 : 7 * 8]  # entry 5 points at entry 6's line
    Path(idx).write_bytes(bytes(data))
    index = SparseIndex(idx)
    index.refresh(fd)
    assert index.seek(fd, 5 * INDEX_EVERY + 3) == index.entry(4)
    assert len(index) == 5
    index.refresh(fd)
    assert len(index) == 5  # the file's entries from the wrong one on are not read again
