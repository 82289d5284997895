"""The numbered line log: what is written is read back, by any window, from any chunking."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ds_events.bash import linelog

line_text = st.text(alphabet=st.characters(blacklist_characters="\n\r\x00", blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(line_text, max_size=120), cuts=st.lists(st.integers(0, 4000), max_size=8),
       after=st.integers(0, 130), before=st.integers(1, 130), n=st.integers(1, 50))
def test_any_window_of_the_log_equals_the_same_slice_of_what_was_written(tmp_path_factory, lines, cuts, after, before, n):
    path = tmp_path_factory.mktemp("log") / "output.log"
    data = "".join(f"{t}\n" for t in lines).encode()
    writer = linelog.LineLogWriter(path)
    last = 0
    for cut in [*sorted(c for c in cuts if c <= len(data)), len(data)]:
        writer.feed(data[last:cut])  # output arrives in arbitrary pieces
        last = cut
    writer.close()
    expected = list(enumerate(lines, start=1))
    assert linelog.count(path)[0] == len(lines)
    assert linelog.tail(path, n).lines == expected[-n:]
    assert linelog.head(path, n).lines == expected[:n]
    assert linelog.window(path, after_seq=after, limit=n).lines == expected[after : after + n]
    assert linelog.window(path, before_seq=before, limit=n).lines == [x for x in expected if x[0] < before][-n:]
    got = linelog.window(path, after_seq=after, before_seq=before, limit=500).lines
    assert got == [(s, t) for s, t in expected if after < s < before]


def test_a_terminal_progress_bar_keeps_what_the_screen_shows_and_long_lines_are_split(tmp_path):
    writer = linelog.LineLogWriter(tmp_path / "o.log")
    writer.feed(b"10%\r50%\r100%\r\n")
    writer.feed(b"y" * (linelog.MAX_LINE_BYTES * 2 + 5))
    assert writer.flush_partial()[-1] == (4, "yyyyy")
    writer.feed(b"no newline yet")
    assert linelog.count(tmp_path / "o.log")[0] == 4  # a partial line is not written until flushed
    writer.flush_partial()
    writer.close()
    lines = linelog.head(tmp_path / "o.log", 10).lines
    assert [s for s, _ in lines] == [1, 2, 3, 4, 5]
    assert lines[0][1] == "100%" and len(lines[1][1]) == linelog.MAX_LINE_BYTES and lines[4][1] == "no newline yet"


def test_a_torn_last_line_is_invisible_to_readers(tmp_path):
    path = tmp_path / "o.log"
    path.write_bytes(linelog.format_lines([(1, "a"), (2, "b")]) + b"3\tpart")
    assert linelog.count(path)[0] == 2
    assert linelog.tail(path, 5).lines == [(1, "a"), (2, "b")]
    assert linelog.window(path, after_seq=1).lines == [(2, "b")]


def test_a_preview_shows_all_of_a_small_log_and_head_and_tail_of_a_large_one(tmp_path):
    small, big = tmp_path / "s.log", tmp_path / "b.log"
    small.write_bytes(linelog.format_lines([(i, f"l{i}") for i in range(1, 11)]))
    big.write_bytes(linelog.format_lines([(i, f"l{i}") for i in range(1, 1001)]))
    s = linelog.preview(small)
    assert s.omitted is None and [n for n, _ in s.lines] == list(range(1, 11)) and s.text() == "\n".join(f"l{i}" for i in range(1, 11))
    b = linelog.preview(big)
    assert b.omitted == (51, 850) and len(b.lines) == 200 and "... 800 lines omitted (seq 51..850) ..." in b.text()
