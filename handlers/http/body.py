"""A request body as JSON, bounded before it is decoded.

``json.loads`` recurses once per nesting level, so ``'[' * 100000`` would end in a
``RecursionError`` deep inside the decoder. The body is therefore measured first, on
its raw bytes: strings are cut out (a bracket inside a string nests nothing) and the
depth is the highest running count of opening minus closing brackets — a pass in C
(regex, ``bytes.translate``, ``itertools.accumulate``), about as cheap as reading the
bytes. The size bound comes before that: aiohttp refuses a body over the app's
``client_max_size`` while reading it (413 ``body_too_large``).

Then: the bytes must be UTF-8 (JSON's only encoding; ``json.loads`` would otherwise
guess UTF-16 or UTF-32, and pass surrogate bytes through), and every number finite
(``NaN``, ``Infinity`` and ``1e999`` are refused: the log would store them as ``null``).
Lone surrogates written as ``\\ud800`` escapes are valid JSON; they are refused with
every other argument check, by :func:`ds_events.services.commands.decode_command`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

from ds_events.errors import Invalid

__all__ = ["parse_json", "nesting_depth", "MAX_DEPTH"]

# No route takes anything close: a command is an object of scalars, lists and small
# objects. Far below the interpreter's recursion limit wherever the value goes next.
MAX_DEPTH = 64


def parse_json(raw: bytes) -> Any:
    """``raw`` as JSON (an empty body is ``{}``), or ``Invalid``: ``too_deeply_nested``
    before any decoding, ``invalid_json`` for anything that is not UTF-8 JSON."""
    if not raw.strip():
        return {}
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise Invalid(
            f"the body nests arrays or objects {depth} levels deep; at most {MAX_DEPTH} are accepted",
            code="too_deeply_nested", depth=depth, max_depth=MAX_DEPTH,
        )  # fmt: skip
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid(
            f"the body is not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x}): send JSON as UTF-8", code="invalid_json"
        ) from None
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:  # json.JSONDecodeError, an int of more than 4300 digits, ours
        raise Invalid(f"the body is not valid JSON: {exc}", code="invalid_json") from None


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in ``raw``, brackets inside strings ignored.

    An unterminated string is not cut out (its brackets count): the body is invalid
    JSON anyway, and counting more only refuses it sooner.
    """
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    return max(0, max(itertools.accumulate(map(_STEP.__getitem__, brackets))))


# A JSON string: a quote, then runs of plain bytes or escapes (a backslash and any byte).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
for _b in b"[{":
    _STEP[_b] = 1
for _b in b"]}":
    _STEP[_b] = -1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a float")
    return value
