"""Every MCP tool's input schema reaches the model whole through the Codex CLI.

Codex 0.169 reads an MCP tool's ``inputSchema`` into its own JSON-schema struct and, when
that normalised schema is longer than 5000 bytes of compact JSON, removes every
description in it: the model then sees parameter names and types only
(``fixtures/schemas/codex_rule.py`` says the rule and where it was read;
``measure.py codex --probe`` pinned the budget on the real CLI, byte by byte).
``artifact.interact`` was 7.5 KB and reached the model with none of its 39 descriptions.

In Codex's code-mode layout (its default model) the same compacted schema reaches the
model as a TypeScript declaration with the descriptions as comments, except a root
description and one on a scalar union member, which it cannot show.

The fast tests compute each tool's forwarded schema with that rule, and check the rule
itself against what the real Codex forwarded (both recordings: before the fix, when
interact lost its descriptions, and today's). The slow test runs the real Codex once and
reads its first model request.

The other clients' recordings (``fixtures/schemas/measure.py CLIENT``: Claude Code,
codex-acp, Gemini CLI, each one real turn against its scripted endpoint) must be of
today's tools and show every declared description reaching the model; one slow test per
client measures it again live and compares.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .mcp_support import discover_tools

SCHEMAS = Path(__file__).resolve().parent.parent / "fixtures" / "schemas"
LIMIT = 3400
"""What every tool's normalised input schema must stay under: 15% below the smallest
budget of a Codex core we drive -- codex-acp 0.16.0 runs an older Codex core whose budget
is 4000 bytes (``codex-acp.json`` "rule", measured by ``measure.py codex-acp``), Codex
0.169's is 5000 -- so that a parameter text that grows a little does not cost a tool
every description. Its normaliser also drops ``minItems``, so a schema under this limit
for Codex is under it for codex-acp."""


def _fixture(name: str) -> ModuleType:
    module_name = f"ds_fixture_schemas_{name}"
    if module_name not in sys.modules:
        if str(SCHEMAS) not in sys.path:
            sys.path.insert(0, str(SCHEMAS))  # probe_server imports codex_rule by name
        spec = importlib.util.spec_from_file_location(module_name, SCHEMAS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]


rule = _fixture("codex_rule")
TOOLS = {f"{namespace}.{tool.name}": dict(tool.input_schema) for namespace, tool in discover_tools()}


def _lost(declared: dict[str, Any], forwarded: dict[str, Any]) -> list[str]:
    """The declared description texts that the forwarded schema does not carry."""
    missing = Counter(rule.descriptions(declared)) - Counter(rule.descriptions(forwarded))
    return sorted(missing.elements())


def test_every_tool_keeps_every_description_through_codex_with_margin() -> None:
    problems = {}
    for name, schema in TOOLS.items():
        forwarded = rule.forwarded(schema)
        size = rule.normalized_bytes(forwarded)
        lost = _lost(schema, forwarded)
        if lost or size > LIMIT:
            problems[name] = {"bytes": size, "limit": LIMIT, "budget": rule.BUDGET, "descriptions_lost": len(lost)}
    assert problems == {}, (
        "shorten these tools' parameter texts or nested schemas (move examples into the tool's description or a "
        f"skill): {json.dumps(problems, indent=1)}"
    )


@pytest.mark.parametrize("recording", ["codex.forwarded.before.json", "codex.forwarded.json"])
def test_the_rule_forwards_exactly_what_the_real_codex_forwarded(recording: str) -> None:
    pairs = json.loads((SCHEMAS / recording).read_text(encoding="utf-8"))
    # the current recording holds every tool; the one from before the fix, the tools of its day
    assert set(pairs) == set(TOOLS) if recording == "codex.forwarded.json" else set(pairs) <= set(TOOLS)
    wrong = [name for name, pair in pairs.items() if rule.forwarded(pair["declared"]) != pair["forwarded"]]
    assert wrong == []


def test_the_rule_strips_exactly_the_tools_codex_stripped() -> None:
    # Before the fix the real Codex dropped interact's descriptions and kept every other
    # tool's: the rule says the same of those schemas, for the stated reason (the size).
    pairs = json.loads((SCHEMAS / "codex.forwarded.before.json").read_text(encoding="utf-8"))
    stripped = {name for name, pair in pairs.items() if _lost(pair["declared"], pair["forwarded"])}
    assert stripped == {"artifact.interact"}
    over = {name for name, pair in pairs.items() if rule.normalized_bytes(rule.forwarded(pair["declared"], budget=10**9)) > rule.BUDGET}
    assert over == stripped


def test_the_recorded_tables_agree_with_the_recorded_schemas_and_the_budget() -> None:
    for table_file, pairs_file in (("codex.before.json", "codex.forwarded.before.json"), ("codex.json", "codex.forwarded.json")):
        table = json.loads((SCHEMAS / table_file).read_text(encoding="utf-8"))
        pairs = json.loads((SCHEMAS / pairs_file).read_text(encoding="utf-8"))
        assert table["client"] == "codex" and table["version"] == "0.169.0"
        assert table["rule"]["budget_bytes"] == rule.BUDGET
        probe = table["rule"]["probe"]
        assert probe["kept_max"] == rule.BUDGET and probe["lost_min"] == rule.BUDGET + 1
        assert set(table["tools"]) == set(pairs)
        for name, row in table["tools"].items():
            declared, forwarded = pairs[name]["declared"], pairs[name]["forwarded"]
            assert row["bytes"] == len(json.dumps(forwarded, separators=(",", ":"), ensure_ascii=False).encode()), name
            assert row["descriptions_declared"] == len(rule.descriptions(declared)), name
            assert row["descriptions_kept"] == row["descriptions_declared"] - len(_lost(declared, forwarded)), name
    # Today's recording is of today's tools, every one kept whole.
    today = json.loads((SCHEMAS / "codex.json").read_text(encoding="utf-8"))["tools"]
    assert set(today) == set(TOOLS)
    assert all(row["descriptions_kept"] == row["descriptions_declared"] for row in today.values())


def test_a_schema_one_byte_over_the_budget_loses_every_description() -> None:
    # The guard can fail: the probe server's schemas, measured on the real Codex at these
    # sizes (kept at 5000, lost at 5001).
    probe = _fixture("probe_server")
    at, over = probe.probe_schema(rule.BUDGET), probe.probe_schema(rule.BUDGET + 1)
    assert _lost(at, rule.forwarded(at)) == []
    assert len(_lost(over, rule.forwarded(over))) == len(over["properties"])
    assert rule.descriptions(rule.forwarded(over)) == []


def test_fields_codex_drops_cost_nothing_and_the_ones_it_keeps_count() -> None:
    schema = {"type": "object", "title": "T", "properties": {"a": {"type": "string", "default": "x", "maxLength": 3,
              "description": "d"}, "b": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}}}  # fmt: skip
    assert rule.forwarded(schema) == {
        "type": "object",
        "properties": {"a": {"type": "string", "description": "d"}, "b": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
    }


def _hidden_in_code_mode(schema: Any, where: str = "") -> list[str]:
    """Where a description sits that Codex's code-mode declaration (TypeScript, parameter
    descriptions as comments) does not show: on the root, or on a non-object union member."""
    found = []
    if isinstance(schema, dict):
        if not where and "description" in schema:
            found.append("(root)")
        for i, member in enumerate(schema.get("anyOf") or []):
            if isinstance(member, dict) and "description" in member and member.get("type") != "object":
                found.append(f"{where}.anyOf[{i}]")
        for name, sub in (schema.get("properties") or {}).items():
            found += _hidden_in_code_mode(sub, f"{where}.{name}")
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                found += _hidden_in_code_mode(schema[key], f"{where}.{key}")
        for i, member in enumerate(schema.get("anyOf") or []):
            found += _hidden_in_code_mode(member, f"{where}.anyOf[{i}]")
    return found


def test_every_description_is_where_the_code_mode_declaration_shows_it() -> None:
    hidden = {name: spots for name, schema in TOOLS.items() if (spots := _hidden_in_code_mode(schema))}
    assert hidden == {}
    # And the recording of the real Codex's code-mode layout agrees: every one was there.
    table = json.loads((SCHEMAS / "codex-code-mode.json").read_text(encoding="utf-8"))
    assert table["model"] == "gpt-6-astra" and set(table["tools"]) == set(TOOLS)
    assert {name: row for name, row in table["tools"].items() if row["descriptions_kept"] != row["descriptions_declared"]} == {}


@pytest.mark.slow
def test_the_real_codex_forwards_every_tool_with_every_description() -> None:
    from tests.runtime.codex_support import codex_executable

    codex = codex_executable()
    measure = _fixture("measure")
    requests = asyncio.run(measure.run_codex_once(codex))
    forwarded = measure.forwarded_parameters(requests[0])
    assert set(forwarded) == set(TOOLS)
    table = measure.measure(TOOLS, forwarded)
    short = {name: row for name, row in table.items() if row["descriptions_kept"] != row["descriptions_declared"]}
    assert short == {}
    assert max(row["bytes"] for row in table.values()) <= LIMIT
    # And exactly what the rule computes, tool by tool.
    assert {name: rule.forwarded(schema) for name, schema in TOOLS.items()} == forwarded


# -- every client's recording ------------------------------------------------------------

CLIENTS = ["codex", "claude-code", "codex-acp", "gemini"]


def _stale(client: str, recording: dict[str, Any]) -> dict[str, str]:
    """Why ``client``'s recording is not of today's tools: a tool it lacks or has too many
    of, a declared description count that is not the live schema's."""
    rows = recording["tools"]
    why = {name: "not recorded" for name in TOOLS if name not in rows}
    why |= {name: "no such tool now" for name in rows if name not in TOOLS}
    for name, row in rows.items():
        if name in TOOLS and row["descriptions_declared"] != len(rule.descriptions(TOOLS[name])):
            why[name] = f"declared {row['descriptions_declared']} descriptions, the live schema {len(rule.descriptions(TOOLS[name]))}"
    return why


def _short(recording: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {name: row for name, row in recording["tools"].items() if row["descriptions_kept"] != row["descriptions_declared"]}


@pytest.mark.parametrize("client", CLIENTS)
def test_each_clients_recording_is_of_todays_tools_and_keeps_every_description(client: str) -> None:
    path = SCHEMAS / f"{client}.json"
    assert path.exists(), f"no recording for {client}: run fixtures/schemas/measure.py {client}"
    recording = json.loads(path.read_text(encoding="utf-8"))
    assert recording["client"] == client and recording["version"]
    stale = _stale(client, recording)
    assert stale == {}, f"the recording is older than the tools: re-run fixtures/schemas/measure.py {client}: {stale}"
    assert _short(recording) == {}, f"{client} {recording['version']} drops descriptions of these tools"
    if "rule" in recording:  # a Codex core: every tool within the budget it was measured to have
        budget = recording["rule"]["budget_bytes"]
        assert {n: r["bytes"] for n, r in recording["tools"].items() if r["bytes"] > budget} == {}


def test_the_limit_is_within_every_recorded_codex_cores_budget() -> None:
    budgets = {}
    for client in ("codex", "codex-acp"):
        recorded = json.loads((SCHEMAS / f"{client}.json").read_text(encoding="utf-8"))["rule"]
        assert recorded["probe"]["lost_min"] == recorded["budget_bytes"] + 1  # found to the byte
        budgets[client] = recorded["budget_bytes"]
    assert budgets == {"codex": rule.BUDGET, "codex-acp": 4000}
    assert LIMIT <= min(budgets.values())


def test_a_stale_or_short_recording_fails_the_guard() -> None:
    # The guard can fail: a recording missing a tool, one counting a description the
    # schema no longer declares, one whose client dropped a description.
    recording = json.loads((SCHEMAS / "claude-code.json").read_text(encoding="utf-8"))
    name = next(iter(recording["tools"]))
    missing = {**recording, "tools": {k: v for k, v in recording["tools"].items() if k != name}}
    assert _stale("claude-code", missing) == {name: "not recorded"}
    recounted = {**recording, "tools": {**recording["tools"], name: {**recording["tools"][name], "descriptions_declared": 0}}}
    assert list(_stale("claude-code", recounted)) == [name]
    row = recording["tools"][name]
    dropped = {**recording, "tools": {**recording["tools"], name: {**row, "descriptions_kept": row["descriptions_kept"] - 1}}}
    assert list(_short(dropped)) == [name]


def test_description_paths_count_a_description_kept_only_where_it_was_declared() -> None:
    measure = _fixture("measure")
    declared = {"t": {"type": "object", "properties": {"a": {"type": "string", "description": "x"},
                                                       "b": {"type": "string", "description": "x"}}}}  # fmt: skip
    moved = {"t": {"type": "object", "description": "x", "properties": {"a": {"type": "string", "description": "x"}}}}
    assert measure.measure(declared, moved)["t"]["descriptions_kept"] == 1
    assert measure.measure(declared, declared)["t"] == {"bytes": measure.compact_bytes(declared["t"]),
                                                        "descriptions_declared": 2, "descriptions_kept": 2}  # fmt: skip
    assert measure.measure(declared, {})["t"]["descriptions_kept"] == 0  # the tool not offered at all


def test_the_table_shows_every_tool_for_every_client() -> None:
    measure = _fixture("measure")
    recordings = measure.read_recordings(SCHEMAS)
    assert list(recordings) == CLIENTS
    lines = measure.table_markdown(recordings).splitlines()
    assert lines[0].startswith("| tool | codex 0.169.0 | claude-code ") and len(lines) == 2 + len(TOOLS)
    row = next(line for line in lines if line.startswith("| `memory.write` |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    write = {c: recordings[c]["tools"]["memory.write"] for c in CLIENTS}
    assert cells[1:] == [f"{w['bytes']} ({w['descriptions_kept']}/{w['descriptions_declared']})" for w in write.values()]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("client", ["claude-code", "codex-acp", "gemini"])
def test_the_real_client_forwards_what_its_recording_says(client: str) -> None:
    from tests.runtime.acp_real_support import agent_executable

    exe = agent_executable({"claude-code": "claude", "codex-acp": "codex-acp", "gemini": "gemini"}[client])
    measure = _fixture("measure")
    live, first = measure.measure_client(client, exe, TOOLS)
    assert set(measure.forwarded_schemas(client, first)) == set(TOOLS)
    assert _short(live) == {}
    recorded = json.loads((SCHEMAS / f"{client}.json").read_text(encoding="utf-8"))
    assert live == {key: recorded[key] for key in live}, f"re-run fixtures/schemas/measure.py {client}"
