"""Typed requests and answers of the services: one vocabulary for every edge.

A service entry point takes a :class:`Command` (a frozen msgspec Struct whose fields are
the request's arguments, each with a ``Meta(description=...)`` written for whoever
calls it: a model through MCP, a script through HTTP, a person through the CLI) and
returns a :class:`Result` (a Struct the edge encodes). Adapters decode what they receive
into the command once, with :func:`decode_command`, so an MCP tool, an HTTP route and a
CLI command that do the same thing take the same field names and refuse bad input with
the same codes:

- ``unknown_argument``: a name the command does not take (every such name is listed,
  with the names it does take) — a misspelled flag is never silently ignored;
- ``missing_argument``: a required field is absent;
- ``invalid_argument``: a value of the wrong type, naming the argument and the JSON
  type it expects;
- ``invalid_text``: a string (a value or a name, at any depth) holding a lone surrogate
  (``"\\ud800"`` is valid JSON but not Unicode text: it could never be stored, as the
  log is UTF-8), naming the argument's path. Checked first, here, so that no edge
  (an HTTP route, an MCP tool, the CLI) needs a check of its own.

Rules that need the quest's state (an unknown card, a duplicate, a closed request)
stay in the services, with their own codes.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar, dataclass_transform

import msgspec
from msgspec import Meta

from ds_events.errors import ErrorCode, Invalid, catalogue

__all__ = ["Command", "Result", "decode_command", "argument_names", "to_builtins", "check_text", "printable", "CODES"]

C = TypeVar("C", bound="Command")

# msgspec names JSON types its own way in messages; say them as JSON Schema does.
_JSON_TYPES = {
    "int": "integer",
    "float": "number",
    "str": "string",
    "bool": "boolean",
    "array": "array",
    "object": "object",
    "null": "null",
}
_EXPECTED = re.compile(r"^Expected `(?P<expected>[^`]+)`(?P<rest>.*?)(?:, got `(?P<got>[^`]+)`)?(?: - at `(?P<path>[^`]+)`)?$")
# A lone surrogate: what a "\\udXXX" escape without its pair (or CESU-8 bytes read with
# surrogatepass, or undecodable bytes read with surrogateescape) leaves in a str.
_SURROGATE = re.compile("[\ud800-\udfff]")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`(?: - at `(?P<path>[^`]+)`)?$")


# Every command is frozen and keyword-only, as this base: say so to the type checker
# (msgspec inherits the settings at run time; see ds_events.events.base.Event).
@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(msgspec.field,))
class Command(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Base of every service command: keyword-only, immutable, unknown fields refused.

    Every command takes a free-text ``comment`` (DeepScientist's callers send one with
    each call): an MCP call keeps it in its ``tool.call_finished`` record; it changes
    nothing else."""

    comment: Annotated[str | dict[str, Any] | None, Meta(
        description="Why you make this call; recorded, changes nothing.",
        extra_json_schema={"anyOf": [{"type": "string"}, {"type": "object"}, {"type": "null"}]},
    )] = None


class Result(msgspec.Struct, kw_only=True):
    """Base of every service answer; adapters encode it with :func:`to_builtins`."""


def argument_names(cls: type[msgspec.Struct]) -> list[str]:
    """The names a command takes, as callers spell them."""
    return [f.encode_name for f in msgspec.structs.fields(cls)]


def decode_command(cls: type[C], data: Any) -> C:
    """``data`` (a JSON object, as received) as a ``cls``, or :class:`Invalid`.

    Text is checked first (``invalid_text``: nothing that cannot be encoded goes further,
    not even into an error message), then unknown names, all at once, so a caller learns
    every misspelled argument in one answer.
    """
    check_text(data)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Invalid(f"arguments must be a JSON object, got {_json_type(data)}", code="invalid_argument", argument="")
    allowed = argument_names(cls)
    unknown = [str(k) for k in data if k not in allowed]
    if unknown:
        raise Invalid(
            f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"this call takes {', '.join(allowed) or 'no arguments'}",
            code="unknown_argument",
            arguments=unknown,
            allowed=allowed,
        )
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        raise _argument_error(str(exc)) from None


def check_text(data: Any, path: str = "") -> None:
    """Raise ``Invalid(invalid_text)`` naming the first string in ``data`` (dict keys and
    values, list items, at any depth) that holds a lone surrogate. Iterative: a deeply
    nested value cannot exhaust the stack."""
    stack: list[tuple[str, Any]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            found = _SURROGATE.search(value)
            if found:
                raise _text_error(where, value, found.start(), key=False)
        elif isinstance(value, dict):
            items = list(value.items())
            for key, _ in items:
                if isinstance(key, str) and (found := _SURROGATE.search(key)):
                    raise _text_error(_child(where, key), key, found.start(), key=True)
            stack.extend((_child(where, str(k)), v) for k, v in reversed(items))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value))))


def printable(text: str) -> str:
    """``text`` with every lone surrogate as a ``\\udXXX`` escape: safe to show and store."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _SURROGATE.search(text) else text


def to_builtins(value: Any) -> Any:
    """A result (or anything msgspec can encode) as plain JSON-able Python values."""
    return msgspec.to_builtins(value)


def _argument_error(text: str) -> Invalid:
    missing = _MISSING.match(text)
    if missing:
        name = _join(missing.group("path"), missing.group("field"))
        return Invalid(f"missing required argument {name!r}", code="missing_argument", argument=name)
    found = _EXPECTED.match(text)
    if found:
        name = _argument_of(found.group("path"))
        alternatives = [_JSON_TYPES.get(t, t) for t in found.group("expected").split(" | ")]
        expected = " or ".join(alternatives) + (found.group("rest") or "")
        got = found.group("got")
        details: dict[str, Any] = {"argument": name, "expected": expected}
        message = f"argument {name!r} must be {_article(expected)}"
        if got:
            details["got"] = _JSON_TYPES.get(got, got)
            message += f", got {_article(details['got'])}"
        return Invalid(message, code="invalid_argument", **details)
    path = text.rpartition(" - at `")[2].rstrip("`") if " - at `" in text else ""
    return Invalid(f"invalid argument: {text}", code="invalid_argument", argument=_argument_of(path or None))


def _text_error(where: str, text: str, index: int, *, key: bool) -> Invalid:
    # ``where`` holds names already escaped by printable(): quoted by hand, not with !r,
    # so a backslash is not shown doubled.
    what = f"the name '{where}'" if key else (f"argument '{where}'" if where else "the value")
    return Invalid(
        f"{what} is not valid text: it holds a lone surrogate (U+{ord(text[index]):04X}) at character {index}; "
        "send well-formed Unicode (a \\ud800-\\udbff escape must be followed by its \\udc00-\\udfff pair)",
        code="invalid_text",
        argument=where,
    )


def _child(path: str, key: str) -> str:
    name = printable(key)
    return f"{path}.{name}" if path else name


def _argument_of(path: str | None) -> str:
    """``$.payload.kind`` -> ``payload.kind``; ``$.tags[0]`` -> ``tags[0]``."""
    if not path:
        return ""
    return path[2:] if path.startswith("$.") else path.lstrip("$")


def _join(path: str | None, field: str) -> str:
    prefix = _argument_of(path)
    return f"{prefix}.{field}" if prefix else field


def _article(type_name: str) -> str:
    return ("an " if type_name[:1] in "aeiou" else "a ") + type_name


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array")):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


# The vocabulary's own codes: the same on every edge, for every command.
CODES = catalogue(
    ErrorCode("unknown_argument", 400, "A name the call does not take (arguments lists every such name, allowed the names "
              "it takes): a misspelled argument is never silently ignored."),
    ErrorCode("missing_argument", 400, "A required argument is absent (argument names it)."),
    ErrorCode("invalid_argument", 400, "A value of the wrong type (argument names it, expected the JSON type it takes), or "
              "arguments that are not a JSON object."),
    # Raised by several domains for their own arguments (the message names the argument
    # and what it takes), so catalogued here once.
    ErrorCode("invalid_kind", 400, "A kind this call does not take: the message lists the kinds it does."),
    ErrorCode("invalid_limit", 400, "A limit (or count) outside its range: the message says the range."),
    ErrorCode("invalid_filter", 400, "A filter (event types, an artifact kind) that names nothing this call knows."),
    ErrorCode("invalid_text", 400, "A string (a value or a name, at any depth) holds a lone surrogate, which is not Unicode "
              "text and could never be stored (argument names its path): send well-formed Unicode."),
)
