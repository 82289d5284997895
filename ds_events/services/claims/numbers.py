"""The numbers a manuscript states, found in Markdown or LaTeX text (pure: no I/O).

Every run of digits is looked at. It is a claim (:class:`NumberMention`) unless it is
one of these, which are kept as :class:`SkippedNumber` with the reason:

- inside a fenced code block, a code span, an HTML comment or a LaTeX comment;
- inside a URL or a Markdown link target;
- a citation marker (``[12]``, ``[3, 4]``, ``[@key]``) or a LaTeX ``\\cite``/``\\ref``/
  ``\\label``/``\\includegraphics``/spacing/package command's argument;
- a figure, table, section, equation, appendix or algorithm number ("Table 2",
  "Figs. 3 and 4", "Sec. 4.1", "Eq. (3)", "§2");
- a heading's section number (``## 3.1 Results``) or a list marker (``1. ``);
- a year (an integer 1900-2099 with no sign or unit);
- a setup number that matches nothing in the log ("90 epochs", "4 GPUs", "a learning
  rate of 0.1"): see :attr:`NumberMention.setup`; one that matches a record stays a claim;
- part of a name or a word: attached to letters (``top1``, ``ResNet-20``, ``3D``,
  ``20th``, ``2pt``), a compound (``3-layer``), a dotted version (``1.2.3``), a math
  index (``x^2``, ``a_1``).

Numbers spelled as words ("five runs") are not read. Everything else is a claim: its
kind is ``delta`` when written with a sign, followed by points/pp, after Delta, or after
"improves by", "a gain of", "drops by" ...; ``count`` when followed (within two words)
by runs, seeds, trials, slices, ablations, baselines ...; ``value`` otherwise.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .commands import MentionKind, NumberMention, SkippedNumber

__all__ = ["find_numbers", "is_latex"]


def find_numbers(text: str) -> tuple[list[NumberMention], list[SkippedNumber]]:
    """Every number of ``text`` that is a claim, and every one skipped (with why), both
    in text order."""
    latex = is_latex(text)
    masks = _masks(text, latex)
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    paragraphs = _Paragraphs(text, starts)
    mentions: list[NumberMention] = []
    skipped: list[SkippedNumber] = []
    for m in _NUMBER.finditer(text):
        start, end = m.start("num"), m.end("num")
        line = bisect_right(starts, start)
        line_start = starts[line - 1]
        column = start - line_start + 1
        raw = m.group("num")
        reason = _mask_reason(masks, start) or _token_reason(text, start, end, raw, line_start)
        if reason:
            skipped.append(SkippedNumber(text=raw, line=line, column=column, reason=reason))
            continue
        sign = m.group("sign") or ""
        sign_at = m.start("sign") if sign else start
        if sign and _mask_reason(masks, sign_at):
            sign = ""
        if sign in ("-", "\u2212") and sign_at > 0 and (text[sign_at - 1].isalnum()):
            sign = ""  # "0.7-0.8": a range, not a sign
        first = sign_at if sign else start
        after = text[end : end + 40]
        percent = bool(_PERCENT_LATEX.match(after) if latex else _PERCENT.match(after))
        points = bool(_POINTS.match(after))
        number = raw.replace(",", "")
        decimals = len(number.split(".", 1)[1]) if "." in number else 0
        par_start, par_end = paragraphs.around(line)
        paragraph = text[par_start:par_end].replace("\n", " ")
        before = paragraph[max(0, first - par_start - 60) : first - par_start]
        count_noun = "" if (decimals or percent or sign) else _count_noun(after)
        kind: MentionKind
        if sign or points or _DELTA_BEFORE.search(before) or _DELTA_SYMBOL.search(before):
            kind = "delta"
        elif count_noun:
            kind = "count"
        else:
            kind = "value"
        mention = NumberMention(
            text=text[first:end] + ("%" if percent else ""), number=number, negative=sign in ("-", "\u2212"),
            explicit_sign=bool(sign), decimals=decimals, percent=percent, points=points, kind=kind,
            count_noun=count_noun, setup=_setup(before, after) if kind != "count" else "", line=line,
            column=first - line_start + 1,
            sentence=_sentence(paragraph, first - par_start, end - par_start),
        )  # fmt: skip
        mentions.append(mention)
    return mentions, skipped


def is_latex(text: str) -> bool:
    """Whether ``text`` reads as LaTeX (then ``%`` starts a comment and ``\\%`` is a
    per cent sign)."""
    return bool(re.search(r"\\(documentclass|begin\{|section\*?\{|subsection\*?\{)", text))


# -- private helpers ----------------------------------------------------------------------

_NUMBER = re.compile(r"(?P<sign>[+\-\u2212])?(?P<num>\d+(?:,\d{3})+(?![\d])(?:\.\d+)*|\d+(?:\.\d+)*|\.\d+)")
_PERCENT = re.compile(r"\s?(%|\\%|\s*per\s?cent\b)", re.IGNORECASE)
_PERCENT_LATEX = re.compile(r"\s?(\\%|\s*per\s?cent\b)", re.IGNORECASE)
_POINTS = re.compile(r"\s?(%|\\%)?\s*(pp\b|p\.p\.|percentage\s+points?\b|points?\b|pts?\b)", re.IGNORECASE)
_DELTA_BEFORE = re.compile(
    r"\b(improv\w*|gain\w*|increas\w*|decreas\w*|drop\w*|reduc\w*|lower\w*|higher|better|worse|outperform\w*|exceed\w*|"
    r"trail\w*|lag\w*|boost\w*|margin|delta|differ\w*|chang\w*|rais\w*|cut\w*|fall\w*|fell|rose|rise\w*|up|down|"
    r"degrad\w*|los[es]\w*|beat\w*)\b[^.;:]{0,40}?\b(by|of)\s+(about\s+|roughly\s+|nearly\s+|only\s+|almost\s+|"
    r"approximately\s+|~\s*)?$",
    re.IGNORECASE,
)
_DELTA_SYMBOL = re.compile(r"(\u0394|\\Delta)\s*[=:]?\s*\$?\s*$")
_COUNT = re.compile(
    r"^\s*(?:[A-Za-z][\w-]*\s+){0,2}?(runs?|seeds?|trials?|repetitions?|repeats?|replicates?|experiments?|slices?|"
    r"ablations?|analyses|baselines?|campaigns?)\b",
    re.IGNORECASE,
)
_COUNT_NOUNS = {
    "run": "runs", "experiment": "runs", "seed": "seeds", "trial": "seeds", "repetition": "seeds", "repeat": "seeds",
    "replicate": "seeds", "slice": "slices", "ablation": "slices", "analyses": "slices", "baseline": "baselines",
    "campaign": "campaigns",
}  # fmt: skip
# What a number of the setup is followed by ("90 epochs", "4 GPUs") or comes after
# ("learning rate of 0.1"). Units of time are left out: a latency may be a metric.
_SETUP_NOUN = re.compile(
    r"^\s*(?:[A-Za-z][\w-]*\s+)?(epochs?|layers?|steps?|iterations?|updates?|images?|samples?|examples?|tokens?|"
    r"parameters?|params|GPUs?|TPUs?|CPUs?|cores?|heads?|dimensions?|dims?|words?|classes|categories|channels?|"
    r"neurons?|hidden units?|blocks?|batches|folds?|shots?|languages?|tasks?|datasets?|splits?)\b",
    re.IGNORECASE,
)
_HYPERPARAMETER = re.compile(
    r"\b(learning[ -]rate|lr|batch[ -]size|weight[ -]decay|dropout(?: rate)?|momentum|warm-?up(?: steps)?|temperature|"
    r"top-?[kp]|beam(?: size| width)?|hidden (?:size|dimension)|embedding (?:size|dimension)|seed|epsilon|beta[12]?|"
    r"alpha|lambda|gamma|label smoothing|gradient clipping|clip(?:ping)? norm)\s*(?:of|=|:|is|to|at)?\s*\$?\s*$",
    re.IGNORECASE,
)
_REFERENCE = re.compile(
    r"(?<![A-Za-z])(fig(?:ure)?s?\.?|tables?|tab\.|sections?|sec\.|\u00a7\u00a7?|eqs?\.|equations?|appendi(?:x|ces)|app\.|"
    r"algorithms?|alg\.|chapters?|ch\.|lemmas?|theorems?|thm\.|definitions?|def\.|corollar(?:y|ies)|propositions?|"
    r"footnotes?|pages?|pp\.|p\.|listings?|lines?|steps?|stages?|phases?|versions?|issues?)"
    r"\s*~?\s*\(?\d+(?:\.\d+)*[a-z]?\)?(?:\s*(?:,|and|&|or|\u2013|-|to)\s*\(?\d+(?:\.\d+)*[a-z]?\)?)*",
    re.IGNORECASE,
)
_LATEX_ARGS = re.compile(
    r"\\(?:cite\w*|ref|eqref|autoref|cref|Cref|pageref|label|includegraphics|vspace|hspace|setlength|addtolength|"
    r"usepackage|documentclass|input|include|bibliography|bibliographystyle|url|href|resizebox|scalebox|"
    r"multicolumn|multirow|begin|end|newcommand|renewcommand|setcounter|arraystretch|cline|cmidrule)\*?"
    r"(?:\s*(?:\[[^\]\n]*\]|\{[^{}\n]*\}))*"
)
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\d*")


def _masks(text: str, latex: bool) -> list[tuple[int, int, str]]:
    """The spans of ``text`` whose numbers are not claims, with why, sorted by start."""
    spans: list[tuple[int, int, str]] = []

    def add(pattern: re.Pattern[str] | str, reason: str, flags: int = 0) -> None:
        for m in re.finditer(pattern, text, flags) if isinstance(pattern, str) else pattern.finditer(text):
            spans.append((m.start(), m.end(), reason))

    fence = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
    add(fence, "in a code block")
    add(r"(`+)(?!`).+?(?<!`)\1(?!`)", "in a code span", re.DOTALL)
    add(r"<!--.*?-->", "in a comment", re.DOTALL)
    if latex:
        add(r"(?<!\\)%[^\n]*", "in a LaTeX comment")
        add(_LATEX_ARGS, "in a LaTeX command's argument")
        add(_LATEX_COMMAND, "part of a LaTeX command")
        add(r"\\\\\s*\[[^\]\n]*\]", "a LaTeX line-break skip")
    add(r"https?://[^\s)>\]]+|www\.[^\s)>\]]+", "in a URL")
    add(r"\]\([^)\n]*\)", "in a link target")
    add(r"\[@[^\]\n]*\]", "a citation marker")
    add(r"\[\d+(?:\s*[,\u2013-]\s*\d+)*\](?!\()", "a citation marker")
    add(_REFERENCE, "a figure, table, section or equation number")
    add(r"^[ \t]{0,3}#{1,6}[ \t]+\d+(?:\.\d+)*\.?(?=\s)", "a heading's section number", re.MULTILINE)
    add(r"^[ \t]*\d+[.)](?=[ \t])", "a list marker", re.MULTILINE)
    spans.sort()
    return spans


def _mask_reason(masks: list[tuple[int, int, str]], at: int) -> str:
    # Spans are few (a manuscript's worth); the first that covers `at` says why.
    for start, end, reason in masks:
        if start > at:
            break
        if at < end:
            return reason
    return ""


def _token_reason(text: str, start: int, end: int, raw: str, line_start: int) -> str:
    """Why the number ``text[start:end]`` is not a claim, from its neighbours ("": it is one)."""
    before = text[start - 1] if start > line_start else ""
    before2 = text[start - 2] if start - 1 > line_start else ""
    after = text[end] if end < len(text) else ""
    after2 = text[end + 1] if end + 1 < len(text) else ""
    if raw.count(".") > 1:
        return "a dotted version or section number"
    if before in ("^", "_") or (before == "{" and before2 in ("^", "_")):
        return "a math index"
    if before.isalpha() or before == "_" or (before == "-" and before2.isalnum()) or (before == "." and before2.isalnum()):
        return "part of a name"
    if before == "/" or (before == "." and not before2.strip()):
        return "part of a path or name"
    if after.isalpha() or after == "_":
        rest = text[end : end + 4].lower()
        if not (rest.startswith("pp") and not rest[2:3].isalpha()):
            return "part of a word or unit"
    if after == "-" and after2.isalpha():
        return "part of a compound word"
    if after == "\\" and after2.isalpha() and not text.startswith("\\%", end):
        return "part of a LaTeX length"
    number = raw.replace(",", "")
    if "." not in number and len(number) == 4 and 1900 <= int(number) <= 2099:
        sign = text[start - 1] if start > line_start else ""
        unit = text[end : end + 12].lstrip()
        if sign not in "+-\u2212" and not unit.startswith(("%", "\\%")) and not _COUNT.match(text[end : end + 40]):
            return "a year"
    return ""


def _setup(before: str, after: str) -> str:
    """Why the number reads as setup rather than result ("": it does not)."""
    m = _HYPERPARAMETER.search(before)
    if m:
        return f"a setup number ({m.group(1).lower()}), not a result"
    m = _SETUP_NOUN.match(after)
    if m:
        return f"a setup number (a count of {m.group(1)}), not a result"
    return ""


def _count_noun(after: str) -> str:
    m = _COUNT.match(after)
    if m is None:
        return ""
    noun = m.group(1).lower()
    singular = noun if noun == "analyses" else noun.rstrip("s")
    return _COUNT_NOUNS.get(singular, "")


class _Paragraphs:
    """The paragraph of each line: the run of non-blank lines around it, where a table
    row, a heading or a list item is a paragraph of its own (its neighbours' sentences
    are not its own)."""

    def __init__(self, text: str, starts: list[int]) -> None:
        self.text, self.starts = text, starts
        self.lines = text.split("\n")
        self.found: dict[int, tuple[int, int]] = {}

    def around(self, line: int) -> tuple[int, int]:
        """``(start, end)`` offsets of the paragraph of 1-based ``line``."""
        if line not in self.found:
            i = j = line - 1
            if not self._alone(i):
                while i > 0 and self._joins(i - 1):
                    i -= 1
                while j + 1 < len(self.lines) and self._joins(j + 1):
                    j += 1
            span = (self.starts[i], self.starts[j] + len(self.lines[j]))
            for k in range(i, j + 1):
                self.found[k + 1] = span
        return self.found[line]

    def _alone(self, i: int) -> bool:
        return bool(re.match(r"\s*(\||#|[-*+]\s|\d+[.)]\s|\\\\)", self.lines[i])) or self.lines[i].rstrip().endswith("\\\\")

    def _joins(self, i: int) -> bool:
        return bool(self.lines[i].strip()) and not self._alone(i)


def _sentence(line: str, start: int, end: int) -> str:
    """The sentence of ``line`` (a paragraph, on one line) around ``line[start:end]``,
    at most 240 characters."""
    stops = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", line)]
    left = max((s for s in stops if s <= start), default=0)
    right = min((s for s in stops if s >= end), default=len(line))
    sentence = line[left:right].strip()
    if len(sentence) > 240:
        middle = start - left
        sentence = sentence[max(0, middle - 120) : middle + 120].strip()
    return sentence
