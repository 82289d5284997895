"""The contract every MCP tool keeps, checked for every tool of every namespace as the
servers list them (a new tool is covered without a line here):

- an unknown argument is refused with ``unknown_argument`` naming it, and writes nothing;
- a lone surrogate in any string (a value, a nested value, a name) is refused with
  ``invalid_text`` naming its path, and writes nothing but the call's record;
- an unknown tool is refused with ``unknown_tool``, naming the namespace's tools;
- every parameter with a default says it in its description (the Codex CLI strips
  ``default`` from the schema the model sees);
- every object-typed parameter has a real schema (a type, and properties or a description
  of what goes in it; never the empty ``{}`` that accepts anything);
- the tool declares an output schema.

And one server answers other calls while a long checkpoint runs: a big first checkpoint
on the artifact server does not hold up reads and ``record`` on the same server.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from ds_events.events.artifact import GitCheckpointed
from ds_events.home import Home, Quest

from .mcp_support import (
    Snapshot,
    changed,
    discover_tools,
    is_log_file,
    open_clients,
    snapshot,
    tool_ids,
    unstructured_reason,
    verify_every_log,
)

TOOLS = discover_tools()
UNKNOWN = "zz_not_an_argument"

# One read-only call per namespace that makes its server open the quest (and set up its
# namespace state: indexes, reconciled sessions) before a snapshot is taken.
_WARM_UP: dict[str, tuple[str, dict[str, Any]]] = {
    "memory": ("list_recent", {}),
    "artifact": ("get_interaction", {"interaction_id": "ia-warm-up"}),
    "bash_exec": ("bash_exec", {"mode": "list"}),
}


async def _warmed(clients: dict[str, Any], namespace: str, home: Home, quest: Quest) -> tuple[Any, int, Snapshot]:
    """The namespace's client once its server has opened the quest, with the log's last seq
    and the home's files as they are then (what a refused call must leave unchanged)."""
    client = clients[namespace]
    warm_tool, warm_args = _WARM_UP[namespace]
    await client.call_tool(warm_tool, warm_args)
    return client, quest.log.last_seq, snapshot(home.root)


def test_every_namespace_lists_tools() -> None:
    assert {namespace for namespace, _ in TOOLS} == {"memory", "artifact", "bash_exec"}
    assert len(TOOLS) == len(set(tool_ids(TOOLS)))


@pytest.mark.parametrize(("namespace", "tool"), TOOLS, ids=tool_ids(TOOLS))
async def test_an_unknown_argument_is_refused_by_name_and_changes_nothing_but_its_record(
    namespace: str, tool: Any, home: Home, quest: Quest
) -> None:
    async with open_clients(home) as clients:
        client, before_seq, before = await _warmed(clients, namespace, home, quest)
        # With every required argument present, the unknown one alone is what is wrong.
        args = {**_required_placeholders(tool.input_schema), UNKNOWN: "x"}
        result = await client.call_tool(tool.name, args)
        alone = await client.call_tool(tool.name, {UNKNOWN: 1})
    for answer in (result, alone):
        assert unstructured_reason(answer) is None, unstructured_reason(answer)
        payload = json.loads(answer.content[0].text)
        assert payload["error"] == "unknown_argument", payload
        assert payload["arguments"] == [UNKNOWN] and UNKNOWN in payload["message"]
        assert set(payload["allowed"]) == set(tool.input_schema.get("properties", {}))
    # The refusal is logged (a tool.call_finished per call, status error); no domain event
    # is appended and no other file changes than the log's own.
    records = list(quest.log.read(before_seq))
    assert [(e.type, e.status, e.error_code) for e in records] == [("tool.call_finished", "error", "unknown_argument")] * 2
    assert [p for p in changed(before, snapshot(home.root)) if not is_log_file(p)] == []


@pytest.mark.parametrize(("namespace", "tool"), TOOLS, ids=tool_ids(TOOLS))
async def test_a_lone_surrogate_anywhere_is_invalid_text_and_changes_nothing_but_its_record(
    namespace: str, tool: Any, home: Home, quest: Quest
) -> None:
    # ``comment`` is every command's: a string, or an object of anything. (A name with a
    # surrogate never gets here: the client cannot even serialise it.)
    forms = [
        ({"comment": "a\ud800b"}, "comment"),
        ({"comment": {"why": ["ok", {"deep": "\udfff"}]}}, "comment.why[1].deep"),
    ]
    async with open_clients(home) as clients:
        client, before_seq, before = await _warmed(clients, namespace, home, quest)
        answers = [await client.call_tool(tool.name, {**_required_placeholders(tool.input_schema), **extra}) for extra, _ in forms]
    for answer, (_, path) in zip(answers, forms, strict=False):
        assert unstructured_reason(answer) is None, unstructured_reason(answer)
        payload = json.loads(answer.content[0].text)
        assert payload["error"] == "invalid_text" and payload["argument"] == path, payload
    # Each refusal has its record (its arguments stored with the surrogate escaped), nothing else.
    records = list(quest.log.read(before_seq))
    assert [(e.type, e.status, e.error_code) for e in records] == [("tool.call_finished", "error", "invalid_text")] * len(forms)
    assert records[0].arguments["comment"] == "a\\ud800b"
    assert [p for p in changed(before, snapshot(home.root)) if not is_log_file(p)] == []


@pytest.mark.parametrize("namespace", sorted({namespace for namespace, _ in TOOLS}))
async def test_an_unknown_tool_is_refused_in_our_shape_naming_the_tools_and_changes_nothing(
    namespace: str, home: Home, quest: Quest
) -> None:
    async with open_clients(home) as clients:
        client, before_seq, before = await _warmed(clients, namespace, home, quest)
        result = await client.call_tool("zz_no_such_tool", {"x": 1})
    assert unstructured_reason(result) is None, unstructured_reason(result)
    payload = json.loads(result.content[0].text)
    assert (payload["error"], payload["tool"]) == ("unknown_tool", "zz_no_such_tool")
    assert payload["tools"] == [tool.name for ns, tool in TOOLS if ns == namespace]
    # No tool ran, so there is no call to record either.
    assert list(quest.log.read(before_seq)) == []
    assert [p for p in changed(before, snapshot(home.root)) if not is_log_file(p)] == []



@pytest.mark.parametrize(("namespace", "tool"), TOOLS, ids=tool_ids(TOOLS))
def test_every_default_is_stated_in_its_parameter_description(namespace: str, tool: Any) -> None:
    # Codex strips ``default``, so the text says it; a null default is what leaving the
    # argument out means, and null is not among its types either; an empty-text default
    # too (a text left out is empty), so it is not said.
    for name, prop in tool.input_schema.get("properties", {}).items():
        if "default" not in prop or prop["default"] == "":
            continue
        if prop["default"] is None:
            assert "null" not in json.dumps({k: v for k, v in prop.items() if k not in ("description", "default")}), (name, prop)
            continue
        description = prop.get("description", "")
        stated = f"Default: {json.dumps(prop['default'], ensure_ascii=False)}."
        assert stated in description or "default" in description.lower(), (name, description)
        assert json.dumps(prop["default"], ensure_ascii=False).strip('"') in description, (name, description)


@pytest.mark.parametrize(("namespace", "tool"), TOOLS, ids=tool_ids(TOOLS))
def test_every_object_parameter_has_a_real_schema(namespace: str, tool: Any) -> None:
    schema = tool.input_schema
    assert schema.get("type") == "object" and schema.get("additionalProperties") is False
    for name, prop in schema.get("properties", {}).items():
        assert prop, f"{name}: an empty schema accepts anything"
        assert prop.get("description", "").strip(), f"{name}: no description"
        for where, sub in _subschemas(prop, name):
            assert sub != {}, f"{where}: an empty schema accepts anything"
            assert {"type", "anyOf", "enum", "$ref", "const"} & sub.keys(), f"{where}: no type: {sub}"
            if _is_object(sub):
                # A free-form object is fine as a parameter (its description says what goes
                # in) or as the values of a map the schema shapes; nested anywhere else
                # it must say its own shape.
                top = re.fullmatch(rf"{re.escape(name)}(\.anyOf\[\d+\])?", where) is not None or where.endswith(".*")
                shaped = sub.get("properties") or isinstance(sub.get("additionalProperties"), dict)
                assert shaped or top or sub.get("description"), f"{where}: an object of unknown shape: {sub}"


@pytest.mark.parametrize(("namespace", "tool"), TOOLS, ids=tool_ids(TOOLS))
def test_every_tool_has_an_output_schema(namespace: str, tool: Any) -> None:
    out = tool.output_schema
    assert out, f"{namespace}.{tool.name} has no output schema"
    assert out.get("type") == "object", out
    # Typed (its fields) or, for a plain dict answer, described (what comes back).
    assert out.get("properties") or out.get("description", "").strip(), out


# -- concurrency: one server, a long checkpoint, other calls meanwhile -------------------


class _ScanGate:
    """Holds a checkpoint at the start of its scan of ``tree`` until released.

    The scan walks the tree with ``os.walk``; the wrapper (the real walk still runs)
    signals that the scan started, then waits for :meth:`release`. If the server ran its
    calls one after the other, the calls made meanwhile could not complete: the gate
    opens by itself after ``timeout`` so such a failure is reported, not hung.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tree: Path, timeout: float = 60.0) -> None:
        self.started = threading.Event()
        self.released = threading.Event()
        self.timed_out = False
        real_walk = os.walk
        target = os.path.realpath(tree)

        def walk(top: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            if os.path.realpath(top) == target and not self.started.is_set():
                self.started.set()
                self.timed_out = not self.released.wait(timeout)
            yield from real_walk(top, *args, **kwargs)

        monkeypatch.setattr(os, "walk", walk)

    def release(self) -> None:
        self.released.set()


async def test_calls_on_one_server_complete_while_a_big_first_checkpoint_runs(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(2000):
        d = quest.root / "src" / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i}.py").write_text(f"x = {i}\n")
    order: list[str] = []
    results: dict[str, Any] = {}
    async with open_clients(home) as clients:
        artifact = clients["artifact"]
        sent = await artifact.call_tool("interact", {"message": "starting the big checkpoint"})
        assert not sent.is_error, sent.content
        interaction_id = sent.structured_content["interaction_id"]
        gate = _ScanGate(monkeypatch, quest.root)

        async def run_checkpoint() -> None:
            results["checkpoint"] = await artifact.call_tool("checkpoint", {"message": "two thousand files"})
            order.append("checkpoint done")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_checkpoint)
            assert await anyio.to_thread.run_sync(gate.started.wait, 60), "the checkpoint never started its scan"
            order.append("checkpoint scanning")
            # Meanwhile, on the SAME server: reads, then a write.
            for name, args in [
                ("get_interaction", {"interaction_id": interaction_id}),
                ("arxiv", {"paper_id": "1512.03385", "mode": "list"}),
                ("record", {"payload": {"kind": "progress", "message": "recorded during the checkpoint"}}),
            ]:
                results[name] = await artifact.call_tool(name, args)
                order.append(f"{name} done")
            gate.release()
    assert not gate.timed_out, "the calls waited for the checkpoint: the gate had to open by itself"
    assert order == ["checkpoint scanning", "get_interaction done", "arxiv done", "record done", "checkpoint done"]
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
    assert results["get_interaction"].structured_content["interaction"]["interaction_id"] == interaction_id
    # The record's event is in the log before the checkpoint's, which commits it too.
    record_seq, checkpoint = results["record"].structured_content["seq"], results["checkpoint"].structured_content
    assert record_seq < checkpoint["seq"]
    assert isinstance(quest.log.get(checkpoint["seq"]), GitCheckpointed)
    assert checkpoint["files"] >= 2000
    assert verify_every_log(home) == {}


# -- private helpers ---------------------------------------------------------------------


def _required_placeholders(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of the right JSON type for every required parameter."""
    props = schema.get("properties", {})
    return {name: _placeholder(props.get(name, {})) for name in schema.get("required", [])}


def _placeholder(prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if kind is None and "anyOf" in prop:
        return _placeholder(prop["anyOf"][0])
    if isinstance(kind, list):
        kind = kind[0]
    if "enum" in prop:
        return prop["enum"][0]
    return {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}.get(kind, "x")


def _subschemas(schema: dict[str, Any], where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema nested in ``schema`` (itself included), with where it sits."""
    yield where, schema
    for i, branch in enumerate(schema.get("anyOf", [])):
        yield from _subschemas(branch, f"{where}.anyOf[{i}]")
    for key, sub in schema.get("properties", {}).items():
        yield from _subschemas(sub, f"{where}.{key}")
    if isinstance(schema.get("items"), dict):
        yield from _subschemas(schema["items"], f"{where}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _subschemas(schema["additionalProperties"], f"{where}.*")


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)
