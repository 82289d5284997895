"""The card renderer's fast frontmatter writer agrees with PyYAML byte for byte."""

from __future__ import annotations

import string

import yaml
from hypothesis import given, settings, strategies as st

from projections.memory import _simple_yaml


def _dump(head: dict) -> str:
    return yaml.safe_dump(head, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)


_WORDISH = st.text(alphabet=string.ascii_letters + string.digits + " _-./:#'\",()[]{}!?@%&*+=;|>~`", min_size=0, max_size=40)
_SPECIAL = st.sampled_from(["yes", "No", "null", "~", "true", "1e3", "0x1F", ".inf", "a: b", "a #b", "- x", "x ", " x",
                            "2026-12-01T07:41:38.123456Z", "2026-12-01T07:41:38Z", "2026-12-01", "12:30", "=", "<<",
                            "knowledge-0001", "ünïcode", "a  b", "tab\there", "line\nbreak", ""])
_VALUE = st.one_of(_WORDISH, _SPECIAL, st.lists(st.one_of(_WORDISH, _SPECIAL), max_size=4),
                   st.integers(), st.booleans(), st.none())


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(st.one_of(st.sampled_from(["id", "title", "tags", "created_at"]), _WORDISH), _VALUE, max_size=8))
def test_the_fast_writer_is_pyyaml_or_declines(head: dict) -> None:
    fast = _simple_yaml(head)
    if fast is not None:
        assert fast == _dump(head)


def test_it_takes_the_fast_path_for_a_typical_card() -> None:
    head = {"id": "knowledge-00000001", "type": "knowledges", "title": "Warmup helps small batches, a lot",
            "quest_id": "tok-abl", "scope": "quest", "tags": ["training", "lr"], "created_at": "2026-12-01T07:41:38.123456Z",
            "updated_at": "2026-12-01T07:41:38.123456Z", "status": "active"}
    assert _simple_yaml(head) == _dump(head)


_PLAINISH = st.text(alphabet=string.ascii_letters + string.digits + " _-./(),;!?@%&*+=#:", min_size=1, max_size=30)


@settings(max_examples=600, deadline=None)
@given(st.dictionaries(_PLAINISH, st.one_of(_PLAINISH, st.lists(_PLAINISH, max_size=3)), min_size=1, max_size=6))
def test_words_with_spaces_and_punctuation_agree_too(head: dict) -> None:
    fast = _simple_yaml(head)
    if fast is not None:
        assert fast == _dump(head)
