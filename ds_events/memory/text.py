"""Text measures shared by writing, search and audit: tokens, near-duplicates, pollution.

Near-duplicate measure (documented in the README): the Jaccard similarity of the two
cards' *content-word sets* — title and body lower-cased, split on non-word characters,
stop words and one-letter tokens (but not digits) dropped, a light suffix strip (``-ing``, ``-ed``,
``-es``, ``-s``) so "diverges"/"diverged" meet — and two cards are near-duplicates when
it is at least :data:`DUPLICATE_THRESHOLD` (0.5), or when their titles have the same
content words (a same-titled card is almost always a rewrite of the same lesson).
A set measure is symmetric, cheap and explainable ("7 of 13 words shared"), and 0.5
catches paraphrases of a short lesson while two cards on one topic with different
findings stay apart (they typically share under a third of their words).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "DUPLICATE_THRESHOLD",
    "STOPWORDS",
    "words",
    "content_words",
    "word_set",
    "jaccard",
    "is_near_duplicate",
    "similarity",
    "similarity_of",
    "word_sets",
    "config_pollution",
]

DUPLICATE_THRESHOLD = 0.5
STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by can could did do does for from had has have how i if in into is it its
    of on or our so than that the their then there these this those to was we were what when where which
    while who why will with would you your not no yes should must may might also just only very about over
    after before more most less such use used using get got""".split()
)
_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "s")
# word -> its content form ("" for a stop word): the near-duplicate check compares a card
# with up to 25 others per write, and stemming word by word was most of its time.
_CONTENT: dict[str, str] = {}
_CONTENT_MAX = 200_000
_SETS: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}
_SETS_MAX = 1024


def words(text: str) -> list[str]:
    """Lower-cased word tokens in order (``\\w+``), stop words kept."""
    return _WORD.findall(text.lower())


def content_words(text: str) -> list[str]:
    """Words that carry meaning: stop words and one-letter tokens (but not digits) dropped, light stemming."""
    out = []
    for w in words(text):
        stem = _CONTENT.get(w)
        if stem is None:
            if len(_CONTENT) >= _CONTENT_MAX:
                _CONTENT.clear()
            stem = _CONTENT[w] = _stem(w) if (len(w) > 1 or w.isdigit()) and w not in STOPWORDS else ""
        if stem:
            out.append(stem)
    return out


def word_set(title: str, body: str = "") -> frozenset[str]:
    return frozenset(content_words(f"{title}\n{body}"))


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(title_a: str, body_a: str, title_b: str, body_b: str) -> float:
    """The near-duplicate score in [0, 1]: 1.0 for equal content-word titles, else Jaccard."""
    return similarity_of(word_sets(title_a, body_a), title_b, body_b)


def word_sets(title: str, body: str) -> tuple[frozenset[str], frozenset[str]]:
    """(title words, title and body words): one side of :func:`similarity`, computed once
    when a card is compared with many. (Words never span the line break that joins title
    and body in :func:`word_set`, so the union is the same set.)

    Remembered for the last :data:`_SETS_MAX` texts: consecutive writes compare with
    the same cards the index has not folded yet (up to 16 of them, every write), and
    tokenising a card was most of a comparison's cost."""
    key = (title, body)  # the strings of a card in the view, whose hashes Python keeps
    found = _SETS.get(key)
    if found is None:
        if len(_SETS) >= _SETS_MAX:
            _SETS.clear()
        head = frozenset(content_words(title))
        found = _SETS[key] = (head, head | frozenset(content_words(body)))
    return found


def similarity_of(a: tuple[frozenset[str], frozenset[str]], title_b: str, body_b: str) -> float:
    """:func:`similarity` of a card given by its :func:`word_sets` and another card."""
    tb, all_b = word_sets(title_b, body_b)
    if a[0] and a[0] == tb:
        return 1.0
    return jaccard(a[1], all_b)


def is_near_duplicate(score: float) -> bool:
    return score >= DUPLICATE_THRESHOLD


def config_pollution(texts: Iterable[str], keys: Iterable[str]) -> list[str]:
    """``key=value`` (or ``key: value``) settings of the guarded ``keys`` found in ``texts``.

    Matches are case-insensitive and must start at a word boundary, so the key ``lr``
    flags ``lr=3e-4`` and ``LR: 0.1`` but not ``clr=1`` or a bare mention of "lr".
    """
    keys = [k for k in keys if k]
    if not keys:
        return []
    pattern = re.compile(
        r"(?<![\w.])(" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)) + r")\s*[=:]\s*[^\s,;)]+",
        re.IGNORECASE,
    )
    found: list[str] = []
    for text in texts:
        for m in pattern.finditer(text or ""):
            if m.group(0) not in found:
                found.append(m.group(0))
    return found


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word
