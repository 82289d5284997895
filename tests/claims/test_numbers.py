"""Finding a manuscript's numbers: every mention points at its own text (line, column),
nothing is both a claim and skipped, and any text (however odd) is read without error."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ds_events.services.claims import find_numbers

_PIECES = st.sampled_from([
    "91.2%", "+1.2 points", "-0.4", "\u22120.7", "across 5 runs", "3 seeds", "Table 2", "Fig. 3", "[12]", "2016", "top1",
    "ResNet-20", "`0.001`", "```\n7.5\n```", "<!-- 8.8 -->", "## 4.1 Results", "1. item", "\\cite{a1}", "\\%", "%",
    "0.912", "1,000", "1.2.3", "x^2", "a_1", "https://x.org/9.9", "[l](p/7.html)", " ", "\n", ".", "(", ")", "$", "\\",
    "improves by 3.4%", "\u0394 = 0.4", "71.2 ms",
])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=30))
def test_every_mention_and_skip_points_at_its_own_text(pieces: list[str]) -> None:
    text = " ".join(pieces)
    lines = text.split("\n")
    mentions, skipped = find_numbers(text)
    claimed: set[tuple[int, int]] = set()
    for m in mentions:
        line = lines[m.line - 1]
        written = m.text[:-1] if m.percent else m.text
        assert line[m.column - 1 :].startswith(written), (m, line)
        assert m.number.replace(".", "").isdigit() and m.decimals == (len(m.number.split(".")[1]) if "." in m.number else 0)
        claimed.add((m.line, m.column + (1 if m.explicit_sign else 0)))
    for s in skipped:
        assert lines[s.line - 1][s.column - 1 :].startswith(s.text), (s, lines[s.line - 1])
        assert s.reason
        assert (s.line, s.column) not in claimed


def test_the_kinds_of_numbers_are_told_apart() -> None:
    text = "r2 reaches 91.2% (+1.2 points), improves by 3.4%, drops by 0.7, across 5 runs with 3 seeds; \u0394 = 0.4; 7 of 9."
    kinds = {m.text: (m.kind, m.count_noun) for m in find_numbers(text)[0]}
    assert kinds == {
        "91.2%": ("value", ""), "+1.2": ("delta", ""), "3.4%": ("delta", ""), "0.7": ("delta", ""), "5": ("count", "runs"),
        "3": ("count", "seeds"), "0.4": ("delta", ""), "7": ("value", ""), "9": ("value", ""),
    }  # fmt: skip


def test_a_delta_worded_across_a_line_break_is_a_delta_and_its_sentence_is_the_whole_one() -> None:
    text = "Our method improves\nby 1.2 points over the baseline. It reaches\n91.2% in the end.\n| r1 | 0.912 |\n"
    (delta, value, cell) = find_numbers(text)[0]
    assert (delta.line, delta.column, delta.kind) == (2, 4, "delta")
    assert delta.sentence == "Our method improves by 1.2 points over the baseline."
    assert value.sentence == "It reaches 91.2% in the end." and value.kind == "value"
    assert cell.sentence == "| r1 | 0.912 |"  # a table row is a paragraph of its own
