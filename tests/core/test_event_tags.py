"""Every stored event tag, its schema version and its fields, pinned in a golden file.

Stored tags never change, and a stored field never changes type (ARCHITECTURE.md, section
4). ``fixtures/event_tags.json`` holds, per tag, the class, ``v`` and each field's JSON
schema as msgspec derives it (type, default, whether required). Any difference fails
here, with what changed.

When the change is on purpose (a new event type; a new field with a default, added last;
a new ``v`` with its upcaster and an old line under fixtures/), regenerate the file and
commit it with the change::

    PYTHONPATH=$PWD python3 -m tests.core.test_event_tags --write
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msgspec

from ds_events.events import ALL_EVENT_TYPES, CURRENT_VERSION
from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "event_tags.json"
REGENERATE = "PYTHONPATH=$PWD python3 -m tests.core.test_event_tags --write"


def current_tags() -> dict[str, Any]:
    """``{tag: {"class", "v", "fields": {name: {"schema", "required"}}}}`` of the union today."""
    _schemas, defs = msgspec.json.schema_components(ALL_EVENT_TYPES)
    out: dict[str, Any] = {}
    for cls in ALL_EVENT_TYPES:
        schema = defs[cls.__name__]
        (tag,) = schema["properties"]["type"]["enum"]
        required = set(schema.get("required", ()))
        fields = {
            name: {"schema": prop, "required": name in required}
            for name, prop in schema["properties"].items()
            if name != "type"
        }
        out[tag] = {"class": cls.__name__, "v": CURRENT_VERSION[tag], "fields": fields}
    return dict(sorted(out.items()))


def render(tags: dict[str, Any]) -> str:
    return json.dumps(tags, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def differences(pinned: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What changed, one line each, in words a reviewer can check."""
    out = [f"tag {t!r} is gone (stored tags never change)" for t in pinned if t not in now]
    out += [f"tag {t!r} is new" for t in now if t not in pinned]
    for tag in pinned.keys() & now.keys():
        old, new = pinned[tag], now[tag]
        if old["class"] != new["class"]:
            out.append(f"{tag}: class {old['class']} -> {new['class']}")
        if old["v"] != new["v"]:
            out.append(f"{tag}: v {old['v']} -> {new['v']} (needs an upcaster and an old line under fixtures/)")
        for name in old["fields"].keys() - new["fields"].keys():
            out.append(f"{tag}: field {name!r} removed")
        for name in new["fields"].keys() - old["fields"].keys():
            out.append(f"{tag}: field {name!r} added: {_short(new['fields'][name])}")
        for name in old["fields"].keys() & new["fields"].keys():
            if old["fields"][name] != new["fields"][name]:
                out.append(f"{tag}: field {name!r} {_short(old['fields'][name])} -> {_short(new['fields'][name])}")
    return sorted(out)


def _short(field: dict[str, Any]) -> str:
    return ("required " if field["required"] else "") + json.dumps(field["schema"], sort_keys=True)


def test_every_stored_event_tag_and_its_fields_match_the_golden_file() -> None:
    pinned = json.loads(GOLDEN.read_text())
    changed = differences(pinned, current_tags())
    assert not changed, (
        "event types differ from fixtures/event_tags.json:\n  "
        + "\n  ".join(changed)
        + f"\nIf this is on purpose, regenerate it: {REGENERATE}"
    )


def test_the_golden_file_is_exactly_what_the_generator_writes() -> None:
    # So a hand edit of the file (or a stale one) is caught as well as a code change.
    assert GOLDEN.read_text() == render(current_tags()), f"regenerate it: {REGENERATE}"


def test_a_changed_field_is_reported_by_tag_and_name() -> None:
    pinned = current_tags()
    now = json.loads(render(pinned))
    now["quest.created"]["fields"]["title"]["schema"] = {"type": "integer"}
    del now["bash.progress"]
    assert differences(pinned, now) == [
        'quest.created: field \'title\' required {"type": "string"} -> required {"type": "integer"}',
        "tag 'bash.progress' is gone (stored tags never change)",
    ]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {REGENERATE}")
    GOLDEN.write_text(render(current_tags()))
    print(f"wrote {GOLDEN}")
