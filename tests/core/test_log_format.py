"""The stored line format through ``ds_events.log.format``: peeking and encoding batches."""

from __future__ import annotations

import pytest

from ds_events.events import ConversationMessage, EventDecodeError, decode_line, encode
from ds_events.log.format import encode_batches, line_hash, line_id, line_seq, line_type


def msg(i: int, **kw) -> ConversationMessage:
    return ConversationMessage(role="user", content=f"m{i}", **kw)


def encode_fresh(batches, **kw):
    args = dict(seq=0, prev="", offset=0, quest_id="q", actor="a", known=lambda _id: None, stored=lambda _s: None)
    args.update(kw)
    return encode_batches(batches, **args)


def test_peeking_reads_seq_id_and_type_without_decoding():
    line = encode(msg(1, seq=42, id="abc"))
    assert (line_seq(line), line_id(line), line_type(line)) == (42, "abc", b"conversation.message")
    with pytest.raises(EventDecodeError):
        line_seq(b'{"type":"x"}')


def test_a_batch_gets_consecutive_seqs_a_chain_and_offsets():
    out = encode_fresh([[msg(1), msg(2)], [msg(3)]], seq=7, prev="p" * 32, offset=1000)
    events = [e for batch in out.results for e in batch]
    assert [e.seq for e in events] == [8, 9, 10]
    assert [decode_line(line) for line in out.lines] == events
    assert events[0].prev == "p" * 32
    assert [e.prev for e in events[1:]] == [line_hash(line) for line in out.lines[:-1]]
    assert out.starts == [1000, 1000 + len(out.lines[0]) + 1, 1000 + len(out.lines[0]) + len(out.lines[1]) + 2]
    assert (out.seq, out.prev, out.end) == (10, line_hash(out.lines[-1]), out.starts[-1] + len(out.lines[-1]) + 1)
    assert out.data() == b"".join(line + b"\n" for line in out.lines)
    assert {e.quest_id for e in events} == {"q"} and {e.actor for e in events} == {"a"}


def test_known_ids_are_not_encoded_again():
    stored = msg(0, seq=3, id="K")
    out = encode_fresh(
        [[msg(1, id="K"), msg(2, id="N"), msg(3, id="N")]],
        seq=5,
        known=lambda i: 3 if i == "K" else None,
        stored=lambda s: stored if s == 3 else None,
    )
    assert out.duplicates
    assert [e.seq for e in out.results[0]] == [3, 6, 6]
    assert out.results[0][0] is stored
    assert len(out.lines) == 1
