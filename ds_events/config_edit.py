"""``ds config``: the effective config as one document, one key read, one key written.

Writing goes through the loader: :func:`set_value` builds the whole new document (the
file as it is, with the one key changed), runs :func:`~ds_events.config.parse_config`
on the new text and writes it (temp file + rename) only when the loader accepts it. A
value the loader would refuse, an unknown key, a file that is already broken: the same
``bad_config`` error the loader gives, and the file is not touched.

Comments are kept when the key already has a one-line value in the file (a plain or
quoted scalar, or a flow list or mapping such as ``[codex, exec]``): only that value's
characters are replaced. Otherwise (a new key, a block-style list, a ``|`` text) the
file is written again from its parsed content, which drops its comments;
:class:`SetResult` says which happened.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import msgspec

from .config import Config, parse_config, unknown_key
from .errors import Invalid
from .paths import write_atomic

__all__ = ["effective", "get_value", "set_value", "parse_value", "SetResult"]


class SetResult(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`set_value` wrote: the key, its new value as the loader reads it, and
    whether the file's other lines (comments included) were kept byte for byte."""

    key: str
    value: Any
    file: str
    comments_kept: bool


def effective(config: Config) -> dict[str, Any]:
    """``config`` as plain data with every key, defaults included (``omit_defaults``
    sections too), in the order the structs declare them."""
    plain: dict[str, Any] = _plain(config)
    return plain


def get_value(config: Config, key: str, path: Path) -> Any:
    """The effective value of the dotted ``key`` (``runner.max_attempts``): a section is
    a mapping, an entry of a free mapping (``runner.commands.codex``) is its value or
    null. A key the config does not have is ``bad_config``, worded as the loader words
    an unknown key of ``path``."""
    parts = _split(key, path)
    cls: type[msgspec.Struct] | None = Config
    free = False  # the value reached so far is a free mapping (any name, one level)
    value: Any = effective(config)
    for i, part in enumerate(parts):
        if cls is None:
            if free and i == len(parts) - 1:
                return value.get(part) if isinstance(value, dict) else None
            raise unknown_key(".".join(parts[: i + 1]), ".".join(parts[:i]), [], path)
        fields = {f.encode_name: f for f in msgspec.structs.fields(cls)}
        if part not in fields:
            raise unknown_key(".".join(parts[: i + 1]), ".".join(parts[:i]), list(fields), path)
        cls, free = _struct_of(fields[part].type), _is_free_mapping(fields[part].type)
        value = value.get(part) if isinstance(value, dict) else None
    return value


def parse_value(text: str) -> Any:
    """``VALUE`` of ``ds config set`` as YAML: ``3``, ``true``, ``gpt-5``, ``[codex, exec]``,
    ``null`` (the default again)."""
    import yaml

    try:
        return yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or "parse error"
        raise Invalid(f"the value {text!r} is not YAML ({problem}): quote it", code="bad_config") from None


def set_value(path: Path, key: str, value: Any) -> SetResult:
    """Set the dotted ``key`` of the config file ``path`` to ``value`` (``None``: the
    default) and write the file, or raise the loader's ``bad_config`` and write nothing."""
    import yaml

    parts = _split(key, path)
    try:
        old_text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        old_text = ""
    parse_config(old_text, path)  # a file the loader refuses now is not edited blindly
    document = yaml.safe_load(old_text) or {}
    _assign(document, parts, value, key, path)
    new_text, kept = _edited_in_place(old_text, parts, value, document)
    if new_text is None:
        new_text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False)
    config = parse_config(new_text, path)  # the loader's own validation, before anything is written
    write_atomic(path, new_text.encode("utf-8"))
    return SetResult(key=key, value=get_value(config, key, path), file=str(path), comments_kept=kept)


# -- private helpers ----------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return {f.encode_name: _plain(getattr(value, f.name)) for f in msgspec.structs.fields(value)}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _split(key: str, path: Path) -> list[str]:
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise Invalid(f"{path}: {key!r} is not a key: use dotted names such as runner.max_attempts", code="bad_config", key=key)
    return parts


def _struct_of(annotation: Any) -> type[msgspec.Struct] | None:
    """The struct a field holds (``CodexProviderConfig | None`` included), else None."""
    candidates = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, msgspec.Struct):
            return candidate
    return None


def _is_free_mapping(annotation: Any) -> bool:
    return typing.get_origin(annotation) is dict


def _assign(document: Any, parts: list[str], value: Any, key: str, path: Path) -> None:
    """Set ``parts`` in the parsed file; a section written as ``null`` becomes a mapping."""
    if not isinstance(document, dict):
        return  # parse_config refused it already
    node = document
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise Invalid(
                f"{path}: {'.'.join(parts[: i + 1])} is {child!r}, not a mapping: {key} cannot be set inside it",
                code="bad_config",
                key=".".join(parts[: i + 1]),
                file=str(path),
            )
        node = child
    node[parts[-1]] = value


def _edited_in_place(text: str, parts: list[str], value: Any, document: Any) -> tuple[str | None, bool]:
    """``text`` with only the value of ``parts`` replaced, or its line (and missing
    sections) added below the deepest section the file has, its comments and layout
    kept; ``(None, False)`` when no such edit means the new document."""
    import yaml

    rendered = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=1 << 30)
    rendered = rendered.removesuffix("\n").removesuffix("\n...").strip()
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return None, False
    if "\n" in rendered or not (root is None or isinstance(root, yaml.MappingNode)):
        return None, False
    edited = _replace_value(text, root, parts, rendered) if root is not None else None
    if edited is None:
        edited = _add_lines(text, root, parts, rendered)
    if edited is None:
        return None, False
    try:
        same = yaml.safe_load(edited) == document  # the edit means what the new document means
    except yaml.YAMLError:
        same = False
    return (edited, True) if same else (None, False)


def _replace_value(text: str, node: Any, parts: list[str], rendered: str) -> str | None:
    import yaml

    for part in parts:
        node = _child(node, part)
        if node is None:
            return None
    one_line = node.start_mark.line == node.end_mark.line
    flow = (isinstance(node, yaml.ScalarNode) and node.style in (None, "'", '"')) or bool(getattr(node, "flow_style", False))
    if not (one_line and flow):
        return None
    return text[: node.start_mark.index] + rendered + text[node.end_mark.index :]


def _add_lines(text: str, root: Any, parts: list[str], rendered: str) -> str | None:
    """A key the file lacks, written as new lines after the last entry of the deepest
    block section it has (``runner:`` gets ``  model: gpt-5``)."""
    import yaml

    node, depth = root, 0
    while node is not None and depth < len(parts) - 1:
        child = _child(node, parts[depth])
        if child is None:
            break
        node, depth = child, depth + 1
    if node is not None and (not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value):
        return None
    if node is not None and _child(node, parts[depth]) is not None:
        return None  # the key is there (in a form _replace_value leaves alone): a second one would shadow it
    if node is None:  # an empty file
        indent, at = 0, len(text)
    else:
        indent = node.value[0][0].start_mark.column
        last = node.value[-1][1]
        at = last.end_mark.index if last.end_mark.column == 0 else text.find("\n", last.end_mark.index)
        at = len(text) if at < 0 else at + (0 if last.end_mark.column == 0 else 1)
    lines = [" " * (indent + 2 * j) + f"{part}:" for j, part in enumerate(parts[depth:-1])]
    lines.append(" " * (indent + 2 * (len(parts) - 1 - depth)) + f"{parts[-1]}: {rendered}")
    head = text[:at] if not text[:at] or text[:at].endswith("\n") else text[:at] + "\n"
    return head + "\n".join(lines) + "\n" + text[at:]


def _child(node: Any, name: str) -> Any:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name), None)
