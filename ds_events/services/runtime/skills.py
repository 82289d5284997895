"""Stage skills and the system prompt: finding them, parsing them, and checking that the
tool calls they tell the agent to make are calls our MCP servers accept.

A skill is ``skills/<name>/SKILL.md``: a YAML frontmatter (``name``, ``description``,
``when_to_use``) behind a line-anchored ``---`` fence, then a markdown body whose
``## `` sections are :data:`SECTIONS`. Skills and ``prompts/system.md`` name tool calls
as ``namespace.tool(arg=value, ...)`` (in code spans or fenced blocks), a bare
``namespace.tool`` in a code span, or the runner's ``mcp__namespace__tool`` form;
:func:`tool_calls` finds them all and :func:`check_tool_calls` compares them with the
tools a server lists (name, argument names, required arguments, literal values against
each argument's JSON schema).

The catalogue of tools is passed in (``{"namespace.tool": input_schema}``) rather than
read from the servers here: the servers are adapters, a layer above this one.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import yaml

import ds_events
from ds_events.errors import Invalid, NotFound

__all__ = [
    "STAGE_SKILLS",
    "SKILL_NAMES",
    "SECTIONS",
    "FRONTMATTER_FIELDS",
    "TOOL_NAMESPACES",
    "Skill",
    "ToolRef",
    "ToolCall",
    "skills_root",
    "skill_path",
    "prompts_root",
    "system_prompt_path",
    "load_skill",
    "load_skills",
    "parse_skill",
    "section_titles",
    "tool_calls",
    "tool_references",
    "check_tool_calls",
    "literal_value",
    "NOT_LITERAL",
]

# The quest's stages that have a skill of their own, in order; ``decision`` is the
# cross-cutting skill of a turn that answers the user.
STAGE_SKILLS = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize")
SKILL_NAMES = (*STAGE_SKILLS, "decision")
SECTIONS = ("Goal", "Entry checks", "Tool calls", "Exit criteria", "What to record", "What to ask the user")
FRONTMATTER_FIELDS = ("name", "description", "when_to_use")
TOOL_NAMESPACES = ("memory", "artifact", "bash_exec")


class Skill(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    when_to_use: str
    body: str  # the markdown after the frontmatter
    path: str  # the SKILL.md file it was read from


class ToolRef(NamedTuple):
    """A tool a text names: ``(namespace, tool, [argument names])``."""

    namespace: str
    tool: str
    args: list[str]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One tool reference as written: where, and each argument's source text."""

    namespace: str
    tool: str
    line: int  # 1-based line of the text where the reference starts
    arguments: dict[str, str] = {}  # name -> the value's source text, in order
    positional: list[str] = []  # arguments given without a name (never valid for our tools)
    called: bool = False  # written as a call (with parentheses), not a bare name
    elided: bool = False  # a bare ``...`` stands for arguments left out on purpose
    closed: bool = True  # the call's parenthesis is closed


def skills_root() -> Path:
    """The skills directory: ``$DS_SKILLS_DIR`` when set, else ``skills/`` of this repository."""
    override = os.environ.get("DS_SKILLS_DIR")
    return Path(override) if override else Path(ds_events.__file__).resolve().parent.parent / "skills"


def prompts_root() -> Path:
    """The prompts directory: ``$DS_PROMPTS_DIR`` when set, else ``prompts/`` of this repository."""
    override = os.environ.get("DS_PROMPTS_DIR")
    return Path(override) if override else Path(ds_events.__file__).resolve().parent.parent / "prompts"


def system_prompt_path() -> Path:
    return prompts_root() / "system.md"


def skill_path(name: str) -> Path:
    """Where skill ``name`` lives (refused for a name that is not one of :data:`SKILL_NAMES`)."""
    if name not in SKILL_NAMES:
        raise NotFound(
            f"unknown skill {name!r}: use one of {', '.join(SKILL_NAMES)}", code="unknown_skill", allowed=list(SKILL_NAMES)
        )
    return skills_root() / name / "SKILL.md"


def load_skill(name: str) -> Skill:
    """Read and parse skill ``name``. Unknown names: ``unknown_skill``; a known skill
    without its file: ``skill_missing``; a file that does not parse: ``invalid_skill``."""
    path = skill_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"skill {name!r} has no file at {path}", code="skill_missing", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise Invalid(f"{path} is not UTF-8 text (byte {exc.start})", code="invalid_skill", path=str(path)) from None
    return parse_skill(text, name=name, path=str(path))


def load_skills() -> list[Skill]:
    """Every skill, in :data:`SKILL_NAMES` order."""
    return [load_skill(name) for name in SKILL_NAMES]


def parse_skill(text: str, *, name: str, path: str = "") -> Skill:
    """A skill from its file text. The frontmatter must open on the first line with a
    ``---`` line, close with another, and give every field of :data:`FRONTMATTER_FIELDS`
    as a non-empty string; ``name`` must be the skill's directory name."""
    where = path or name
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise Invalid(f"{where}: no frontmatter (the file must start with a '---' line)", code="invalid_skill", path=path)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---")
    except StopIteration:
        raise Invalid(f"{where}: the frontmatter is not closed by a '---' line", code="invalid_skill", path=path) from None
    try:
        meta = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise Invalid(f"{where}: the frontmatter is not YAML: {exc}", code="invalid_skill", path=path) from None
    if not isinstance(meta, dict):
        raise Invalid(f"{where}: the frontmatter must be a mapping", code="invalid_skill", path=path)
    missing = [f for f in FRONTMATTER_FIELDS if not isinstance(meta.get(f), str) or not meta[f].strip()]
    if missing:
        raise Invalid(
            f"{where}: frontmatter field(s) missing or empty: {', '.join(missing)}",
            code="invalid_skill",
            path=path,
            missing=missing,
        )
    if meta["name"] != name:
        raise Invalid(f"{where}: frontmatter name {meta['name']!r} is not the skill's name {name!r}", code="invalid_skill", path=path)
    body = "".join(lines[end + 1 :])
    return Skill(
        name=name, description=meta["description"].strip(), when_to_use=meta["when_to_use"].strip(), body=body, path=path
    )


def section_titles(body: str) -> list[str]:
    """The ``## `` headings of a markdown body, in order (fenced blocks skipped)."""
    titles, fenced = [], False
    for line in body.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            titles.append(line[3:].strip())
    return titles


# ``namespace.tool`` not preceded by a word character, a dot, a slash or a dash (so
# ``handlers/mcp/memory.py`` and ``services.memory_plan`` are not references).
_DOTTED = re.compile(r"(?<![\w./-])(" + "|".join(TOOL_NAMESPACES) + r")\.([A-Za-z_][A-Za-z0-9_]*)")
_PREFIXED = re.compile(r"(?<![\w.])mcp__(" + "|".join(TOOL_NAMESPACES) + r")__([A-Za-z_][A-Za-z0-9_]*)")
_NAMED = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*(.*)\Z", re.S)
_OPEN, _CLOSE = "([{", ")]}"


def tool_calls(text: str) -> list[ToolCall]:
    """Every tool reference in ``text``, in order of appearance.

    ``ns.tool(...)`` is a call and its arguments are parsed (strings, brackets and
    nesting respected); ``ns.tool`` alone counts only as a whole code span
    (`` `ns.tool` ``); ``mcp__ns__tool`` always counts, as a name.
    """
    found: list[tuple[int, ToolCall]] = []
    for m in _DOTTED.finditer(text):
        start, after = m.start(), m.end()
        line = text.count("\n", 0, start) + 1
        if after < len(text) and text[after] == "(":
            found.append((start, _parse_call(text, m.group(1), m.group(2), after, line)))
        elif start > 0 and text[start - 1] == "`" and text[after : after + 1] == "`":
            found.append((start, ToolCall(namespace=m.group(1), tool=m.group(2), line=line)))
    for m in _PREFIXED.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        found.append((m.start(), ToolCall(namespace=m.group(1), tool=m.group(2), line=line)))
    return [call for _, call in sorted(found, key=lambda f: f[0])]


def tool_references(text: str) -> list[ToolRef]:
    """``(namespace, tool, [argument names])`` for every tool reference in ``text``."""
    return [ToolRef(c.namespace, c.tool, list(c.arguments)) for c in tool_calls(text)]


def check_tool_calls(text: str, catalogue: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What in ``text`` names a tool or an argument the servers do not offer, one line
    each (empty when everything is offered).

    ``catalogue`` maps ``"namespace.tool"`` to the tool's input JSON schema, as the
    servers list them. Checked per reference: the tool exists; per call: every argument
    is named, is a property of the schema, every required property is given (unless a
    bare ``...`` elides the rest), and a value written as a literal (Python or JSON)
    matches its property's schema. Values that are not literals (placeholders such as
    ``<run_id>`` written bare) are not checked.
    """
    problems: list[str] = []
    for call in tool_calls(text):
        ref = f"{call.namespace}.{call.tool}"
        at = f"line {call.line}: {ref}"
        schema = catalogue.get(ref)
        if schema is None:
            problems.append(f"{at}: no such tool")
            continue
        if not call.closed:
            problems.append(f"{at}: the call's parenthesis is never closed")
            continue
        properties: Mapping[str, Any] = schema.get("properties", {}) or {}
        for value in call.positional:
            problems.append(f"{at}: argument without a name ({value[:40]!r}); our tools take named arguments only")
        for name, source in call.arguments.items():
            if name not in properties:
                problems.append(f"{at}: no argument {name!r} (it takes: {', '.join(properties) or 'none'})")
                continue
            problem = _value_problem(source, properties[name])
            if problem:
                problems.append(f"{at}: argument {name!r}: {problem}")
        if call.called and not call.elided:
            missing = [r for r in schema.get("required", []) if r not in call.arguments]
            if missing:
                problems.append(f"{at}: required argument(s) missing: {', '.join(missing)}")
    return problems


NOT_LITERAL = object()


def literal_value(source: str) -> Any:
    """The value an argument's source text spells as a Python or JSON literal, else
    ``NOT_LITERAL`` (a placeholder such as ``<value>`` written bare)."""
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(source)
    except ValueError:
        return NOT_LITERAL


# ---------------------------------------------------------------------------
# private helpers


def _parse_call(text: str, namespace: str, tool: str, open_at: int, line: int) -> ToolCall:
    """The call whose ``(`` is at ``open_at``: its arguments split at top-level commas."""
    pieces: list[str] = []
    depth, i, piece_start, quote = 0, open_at, open_at + 1, ""
    closed = False
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth == 0:
                pieces.append(text[piece_start:i])
                closed = True
                break
        elif ch == "," and depth == 1:
            pieces.append(text[piece_start:i])
            piece_start = i + 1
        i += 1
    arguments: dict[str, str] = {}
    positional: list[str] = []
    elided = False
    for piece in pieces:
        if not piece.strip():
            continue
        if piece.strip() in ("...", "…"):
            elided = True
            continue
        named = _NAMED.match(piece)
        if named:
            arguments[named.group(1)] = named.group(2).strip()
        else:
            positional.append(piece.strip())
    return ToolCall(
        namespace=namespace,
        tool=tool,
        line=line,
        arguments=arguments,
        positional=positional,
        called=True,
        elided=elided,
        closed=closed,
    )


def _value_problem(source: str, schema: Mapping[str, Any]) -> str | None:
    value = literal_value(source)
    if value is NOT_LITERAL or value is Ellipsis or _has_ellipsis(value):
        return None
    # Only a checker needs it; the mcp SDK depends on it. It ships no type information
    # (and types-jsonschema is not among the test extras).
    import jsonschema

    try:
        jsonschema.validate(_jsonable(value), dict(schema))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"{source[:60]!r} does not match the tool's schema{f' at {where}' if where else ''}: {exc.message[:200]}"
    except jsonschema.SchemaError:
        return None
    return None


def _has_ellipsis(value: Any) -> bool:
    if value is Ellipsis:
        return True
    if isinstance(value, dict):
        return any(_has_ellipsis(v) for v in value.values())
    if isinstance(value, (list, tuple, set)):
        return any(_has_ellipsis(v) for v in value)
    return False


def _jsonable(value: Any) -> Any:
    """Tuples become lists, as they would on the wire."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value
