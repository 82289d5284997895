"""The JSON schemas a tool lists: its command's as the input schema, its result's as the
output schema, both with the referenced object inlined at the top (clients expect an
object schema there, not a ``$ref``).

Every default but null and the empty string is also said in its parameter's
description, because the Codex CLI strips ``default`` before the model sees a schema.
Those two are what leaving an argument out means (an optional text left out is empty),
so saying them only costs bytes of a schema the Codex CLI weighs: past its budget (5000
bytes in Codex 0.169, 4000 in the older core of codex-acp 0.16) it drops every
description (fixtures/schemas/codex_rule.py; tests/test_mcp_schemas.py guards it). For
the same reason an optional argument whose default is null does not list ``null`` among
its types (an explicit null is still accepted): each ``anyOf: [..., {"type": "null"}]``
costs bytes too.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, get_origin

import msgspec

from ds_events.services.commands import Command

__all__ = ["input_schema", "output_schema", "returns_paragraph"]


def input_schema(command: type[Command]) -> dict[str, Any]:
    """The command's JSON schema as a tool's input schema, with every default spelled out
    in its parameter's description."""
    schema = _inline(msgspec.json.schema(command))
    # The command's docstring is for whoever reads the code; the model reads the tool's
    # description (Codex's code-mode layout drops a root description anyway).
    schema.pop("description", None)
    _restore_extra_schemas(command, schema)
    for prop in schema.get("properties", {}).values():
        if "default" in prop and prop["default"] is None:
            _drop_null_branch(prop)
        if "default" in prop:
            value = json.dumps(prop["default"], ensure_ascii=False)
            text = prop.get("description", "").rstrip()
            # Said unless the text already names the default with its value; a null or
            # empty-text default is not said (an argument left out is null, a text left out
            # is empty: 'Default: "".' only costs bytes of a schema that Codex weighs, see
            # fixtures/schemas/codex_rule.py).
            if prop["default"] not in (None, "") and not ("default" in text.lower() and value.strip('"') in text):
                prop["description"] = f"{text} Default: {value}.".strip()
    return schema


def output_schema(result: Any, *, description: str = "") -> dict[str, Any] | None:
    """The JSON schema of a result type: a Struct's or a TypedDict's own; for a plain
    ``dict`` an object schema described by ``description`` (a tool must declare an output
    schema, and a client must be told its answer is an object); None for anything else."""
    if isinstance(result, type) and (issubclass(result, msgspec.Struct) or hasattr(result, "__total__")):
        return _inline(msgspec.json.schema(result))
    if result is dict or get_origin(result) is dict:
        said = description or "A JSON object; its fields are listed in the tool's description."
        return {"type": "object", "description": said, "additionalProperties": True}
    return None


def returns_paragraph(doc: str) -> str:
    """The docstring's paragraph that says what comes back ("Returns: ..."), on one line."""
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        at = paragraph.find("Returns")
        if at >= 0:
            said = paragraph[at:].split("Example")[0]  # the examples are the description's
            return " ".join(said.split())
    return ""


# -- private helpers -------------------------------------------------------------------


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec's ``{"$ref": ..., "$defs": ...}`` with the referenced object at the top."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    defs = dict(schema.get("$defs", {}))
    top = dict(defs.pop(ref.rsplit("/", 1)[1]))
    if defs:
        top["$defs"] = defs
    return top


def _drop_null_branch(prop: dict[str, Any]) -> None:
    """``{"anyOf": [X, {"type": "null"}]}`` becomes X (the parameter's own description
    wins over X's); with several other branches only the null one goes."""
    branches = prop.get("anyOf")
    if not isinstance(branches, list) or {"type": "null"} not in branches:
        return
    rest = [b for b in branches if b != {"type": "null"}]
    if len(rest) == 1:
        del prop["anyOf"]
        for key, value in rest[0].items():
            prop.setdefault(key, value)
    elif rest:
        prop["anyOf"] = rest


def _restore_extra_schemas(command: type[Command], schema: dict[str, Any]) -> None:
    """Put back each field's ``Meta(extra_json_schema=...)``: msgspec drops the ``anyOf``
    of an optional field's extra schema in favour of its own, so ``list[dict] | None``
    described in detail came out as ``{"type": "object"}`` items of unknown shape."""
    props = schema.get("properties", {})
    for f in msgspec.structs.fields(command):
        for meta in getattr(f.type, "__metadata__", ()):
            extra = getattr(meta, "extra_json_schema", None)
            if isinstance(meta, msgspec.Meta) and extra and f.encode_name in props:
                props[f.encode_name].update(extra)
