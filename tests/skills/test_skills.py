"""The stage skills and the system prompt: every skill parses (frontmatter, sections), and
every tool call they tell the agent to make is one our MCP servers offer — the tool, its
argument names, its required arguments and literal values against its input schema.

The catalogue of tools comes from the three real servers, listed through the real MCP
client (one in-process client per namespace, bound to a real quest), so a renamed tool
or argument fails here until the skills are brought back in line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ds_events.artifacts.validate import APPROVAL_VERDICTS, DECISION_ACTIONS
from ds_events.errors import Invalid, NotFound
from ds_events.home import Home
from ds_events.memory.store import SCOPES
from ds_events.services.artifacts.arxiv import MODES as ARXIV_MODES
from ds_events.services.artifacts.campaigns import SLICE_STATUSES
from ds_events.services.artifacts.checkpoints import BRANCH_KINDS
from ds_events.services.bash.commands import MODES as BASH_MODES
from ds_events.services.interactions.commands import KINDS as INTERACTION_KINDS, REPLY_MODES
from ds_events.services.memory.plan import stage_memory_plan
from ds_events.services.runtime import skills as skills
from ds_events.services.runtime.skills import (
    SECTIONS,
    SKILL_NAMES,
    ToolRef,
    check_tool_calls,
    literal_value,
    load_skill,
    parse_skill,
    section_titles,
    tool_calls,
    tool_references,
)
from projections.memory import KINDS as MEMORY_KINDS, RECORD_TYPES
from tests.mcp_support import open_clients

REPO = Path(__file__).resolve().parent.parent.parent
Catalogue = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalogue]:
    """``{"namespace.tool": input_schema}`` as the servers list their tools to a client."""
    root = tmp_path_factory.mktemp("skills") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DS_HOME", str(root))
        home = Home(root)
        home.init()
        home.create_quest("Skills", quest_id="q1", brief="List the tools.").close()
        yield asyncio.run(_list_tools(home))


async def _list_tools(home: Home) -> Catalogue:
    found: Catalogue = {}
    async with open_clients(home) as clients:
        for namespace, client in clients.items():
            for tool in (await client.list_tools()).tools:
                found[f"{namespace}.{tool.name}"] = dict(tool.input_schema)
    return found


def test_the_catalogue_holds_every_namespace(catalogue: Catalogue) -> None:
    assert {ref.split(".")[0] for ref in catalogue} == {"memory", "artifact", "bash_exec"}
    assert "artifact.interact" in catalogue and "message" in catalogue["artifact.interact"]["properties"]


# ---------------------------------------------------------------------------
# the skills as files


def test_the_skills_directory_holds_exactly_the_eight_stage_skills() -> None:
    dirs = sorted(p.name for p in skills.skills_root().iterdir() if p.is_dir())
    assert dirs == sorted(SKILL_NAMES)
    assert skills.skills_root() == REPO / "skills"


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_a_skill_has_its_frontmatter_and_every_section_in_order(name: str) -> None:
    skill = load_skill(name)
    assert skill.name == name == Path(skill.path).parent.name
    assert len(skill.description) >= 40 and len(skill.when_to_use) >= 40
    assert [t for t in section_titles(skill.body) if t in SECTIONS] == list(SECTIONS)
    lines = len(Path(skill.path).read_text(encoding="utf-8").splitlines())
    assert 50 <= lines <= 170, f"{name}: {lines} lines; keep a skill concise (roughly 60-150)"


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_every_tool_call_of_a_skill_is_one_the_servers_offer(name: str, catalogue: Catalogue) -> None:
    skill = load_skill(name)
    assert check_tool_calls(skill.body, catalogue) == []
    # The Tool calls section really lists calls (so the check above had something to check).
    section = _section(skill.body, "Tool calls")
    calls = [c for c in tool_calls(section) if c.called]
    assert len(calls) >= 4, f"{name}: only {len(calls)} calls in its Tool calls section"
    assert any(c.namespace == "artifact" and c.tool == "interact" for c in tool_calls(skill.body)), name


@pytest.mark.parametrize("name", SKILL_NAMES)
def test_a_skill_pulls_memory_first_as_its_stage_memory_plan_says(name: str) -> None:
    plan = stage_memory_plan(name)
    calls = [c for c in tool_calls(_section(load_skill(name).body, "Tool calls")) if c.called]
    memory_reads = [c for c in calls if (c.namespace, c.tool) in {("memory", "search"), ("memory", "list_recent")}]
    assert memory_reads, f"{name}: no memory read in its Tool calls"
    # Its first calls are memory reads, and the first one asks for the plan's first quest kind.
    assert calls[0] is memory_reads[0]
    assert _literal_arg(memory_reads[0], "kind") == plan.quest[0]
    # Every kind it asks for is one its plan pulls (quest or global).
    allowed = set(plan.quest) | set(plan.global_)
    asked = {_literal_arg(c, "kind") for c in memory_reads} - {None}
    assert asked <= allowed, f"{name}: kinds {sorted(asked - allowed)} are not in its memory plan"


@pytest.mark.parametrize("name", ["experiment", "write", "analysis-campaign", "decision"])
def test_moving_back_is_recorded_with_its_reason_through_a_decision(name: str) -> None:
    body = load_skill(name).body
    decisions = [
        c
        for c in tool_calls(body)
        if (c.namespace, c.tool) == ("artifact", "record") and '"kind": "decision"' in c.arguments.get("payload", "")
    ]
    assert decisions, f"{name}: no decision record"
    assert any('"reason"' in c.arguments["payload"] for c in decisions)
    assert "back" in body.lower()


# Arguments whose values the schemas describe in words only ("papers | ideas | ..."): the
# values the services accept, from the services' own constants.
ENUMERATED: dict[tuple[str, str], tuple[str, ...]] = {
    **{(ref, "kind"): MEMORY_KINDS for ref in ("memory.write", "memory.search", "memory.list_recent")},
    **{(ref, "scope"): SCOPES for ref in ("memory.write", "memory.search", "memory.list_recent", "memory.read", "memory.audit")},
    ("memory.append_memory", "record_type"): RECORD_TYPES,
    ("artifact.interact", "kind"): INTERACTION_KINDS,
    ("artifact.interact", "reply_mode"): REPLY_MODES,
    ("artifact.arxiv", "mode"): ARXIV_MODES,
    ("artifact.prepare_branch", "branch_kind"): BRANCH_KINDS,
    ("artifact.record_analysis_slice", "status"): SLICE_STATUSES,
    ("bash_exec.bash_exec", "mode"): BASH_MODES,
}


@pytest.mark.parametrize("path", [f"skills/{name}/SKILL.md" for name in SKILL_NAMES] + ["prompts/system.md"])
def test_enumerated_values_in_skills_are_ones_the_services_accept(path: str) -> None:
    bad = []
    for call in tool_calls((REPO / path).read_text(encoding="utf-8")):
        ref = f"{call.namespace}.{call.tool}"
        for arg, source in call.arguments.items():
            allowed = ENUMERATED.get((ref, arg))
            value = literal_value(source)
            if allowed and isinstance(value, str) and not value.startswith("<") and value not in allowed:
                bad.append(f"line {call.line}: {ref}({arg}={value!r}) not in {allowed}")
        if ref == "artifact.record":
            payload = literal_value(call.arguments.get("payload", ""))
            if isinstance(payload, dict) and payload.get("kind") == "decision":
                if payload.get("action") not in DECISION_ACTIONS:
                    bad.append(f"line {call.line}: decision action {payload.get('action')!r}")
                if payload.get("next_anchor") not in (*SKILL_NAMES, None):
                    bad.append(f"line {call.line}: next_anchor {payload.get('next_anchor')!r}")
            if isinstance(payload, dict) and payload.get("kind") == "approval":
                if payload.get("verdict") not in APPROVAL_VERDICTS:
                    bad.append(f"line {call.line}: approval verdict {payload.get('verdict')!r}")
    assert bad == []


# ---------------------------------------------------------------------------
# the system prompt


def test_the_system_prompt_names_only_tools_the_servers_offer(catalogue: Catalogue) -> None:
    path = skills.system_prompt_path()
    assert path == REPO / "prompts" / "system.md"
    text = path.read_text(encoding="utf-8")
    assert check_tool_calls(text, catalogue) == []
    named = {(r.namespace, r.tool) for r in tool_references(text)}
    assert {ns for ns, _ in named} == {"memory", "artifact", "bash_exec"}
    assert ("artifact", "interact") in named
    assert len(text.splitlines()) <= 130
    for name in SKILL_NAMES:
        assert f"`{name}`" in text, f"the system prompt does not name the {name} skill"


def test_the_readmes_describe_what_is_there() -> None:
    skills_readme = (REPO / "skills" / "README.md").read_text(encoding="utf-8")
    prompts_readme = (REPO / "prompts" / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}/`" in skills_readme for name in SKILL_NAMES)
    assert "ds_events.services.runtime.skills" in skills_readme and "ds_events.services.runtime.skills" in prompts_readme
    assert "`system.md`" in prompts_readme


# ---------------------------------------------------------------------------
# the checker catches what is wrong


_BOGUS = """\
---
name: scout
description: A synthetic skill that names things the servers do not offer.
when_to_use: Only in this test, to show the checker refuses each kind of mistake.
---

## Tool calls

1. `artifact.launch_rocket(target="moon")`
2. `memory.search(query="warmup", fuzzy=True)`
3. `memory.write(title="no kind given")`
4. `bash_exec.bash_exec(mode="await", wait_timeout_seconds="soon")`
5. `artifact.record(payload={"kind": "experiment", "title": "x"})`
6. `memory.read("knowledge-1a2b3c4d")`
7. Names count too: `artifact.teleport` and mcp__memory__forget.
"""


def test_the_checker_catches_a_bogus_tool_argument_and_value(catalogue: Catalogue) -> None:
    parse_skill(_BOGUS, name="scout")  # a well-formed skill: only its tool calls are wrong
    problems = check_tool_calls(_BOGUS, catalogue)
    joined = "\n".join(problems)
    assert "artifact.launch_rocket: no such tool" in joined
    assert "memory.search: no argument 'fuzzy'" in joined
    assert "memory.write: required argument(s) missing: kind" in joined
    assert "bash_exec.bash_exec: argument 'wait_timeout_seconds'" in joined
    assert "artifact.record: argument 'payload'" in joined and "experiment" in joined
    assert "memory.read: argument without a name" in joined
    assert "artifact.teleport: no such tool" in joined and "memory.forget: no such tool" in joined
    assert len(problems) == 8, problems
    # Each problem says where it is.
    assert problems[0].startswith("line 9: ")


def test_the_checker_accepts_good_calls_and_placeholders(catalogue: Catalogue) -> None:
    text = """\
```
memory.search(query="warmup diverges", kind="episodes", limit=5)
bash_exec.bash_exec(command="python train.py --out 'runs/a,b' (x)", mode="detach", timeout_seconds=7200)
artifact.record_main_experiment(run_id=<run_id>, title="LS 0.1", metrics_summary={"top1": 0.921})
artifact.interact(...)
```
and `artifact.checkpoint`, mcp__artifact__interact.
"""
    assert check_tool_calls(text, catalogue) == []


# ---------------------------------------------------------------------------
# parsing


def test_tool_references_parse_calls_names_and_ignore_paths_and_prose() -> None:
    text = """\
See handlers/mcp/memory.py and ds_events.services.memory.plan; memory.md is a file.
Call `artifact.interact(message="a, b (c)", kind="progress")` then
```
bash_exec.bash_exec(
    command='echo "x)"',
    mode="await",
)
```
and the bare `memory.audit`, or mcp__bash_exec__bash_exec as runners show it; memory.search without a code span is prose.
"""
    assert tool_references(text) == [
        ToolRef("artifact", "interact", ["message", "kind"]),
        ToolRef("bash_exec", "bash_exec", ["command", "mode"]),
        ToolRef("memory", "audit", []),
        ToolRef("bash_exec", "bash_exec", []),
    ]
    calls = tool_calls(text)
    assert [c.line for c in calls] == [2, 4, 9, 9]
    assert calls[1].arguments == {"command": "'echo \"x)\"'", "mode": '"await"'}


def test_an_unclosed_call_is_reported(catalogue: Catalogue) -> None:
    problems = check_tool_calls('`memory.search(query="x"`', catalogue)
    assert problems == ["line 1: memory.search: the call's parenthesis is never closed"]


# ---------------------------------------------------------------------------
# loading: bad names and bad files are refused with stable codes


def test_an_unknown_skill_is_refused_with_its_code() -> None:
    with pytest.raises(NotFound) as err:
        load_skill("brainstorm")
    assert err.value.code == "unknown_skill" and "scout" in err.value.message
    assert err.value.to_dict()["allowed"] == list(SKILL_NAMES)
    with pytest.raises(NotFound):
        load_skill("../prompts/system")


def test_the_skills_dir_can_be_overridden_and_a_missing_file_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DS_SKILLS_DIR", str(tmp_path))
    (tmp_path / "idea").mkdir()
    (tmp_path / "idea" / "SKILL.md").write_text(
        "---\nname: idea\ndescription: Pick one idea.\nwhen_to_use: After the baseline.\n---\n## Goal\nOne idea.\n"
    )
    skill = load_skill("idea")
    assert skill.path == str(tmp_path / "idea" / "SKILL.md") and skill.body == "## Goal\nOne idea.\n"
    with pytest.raises(NotFound) as err:
        load_skill("write")
    assert err.value.code == "skill_missing"
    monkeypatch.setenv("DS_PROMPTS_DIR", str(tmp_path))
    assert skills.system_prompt_path() == tmp_path / "system.md"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("# no frontmatter\n", "no frontmatter"),
        ("---\nname: idea\n", "not closed"),
        ("---\n[a, b\n---\n", "not YAML"),
        ("---\n- a\n---\n", "must be a mapping"),
        ("---\nname: idea\ndescription: d\n---\n", "when_to_use"),
        ("---\nname: idea\ndescription: ''\nwhen_to_use: w\n---\n", "description"),
        ("---\nname: write\ndescription: d\nwhen_to_use: w\n---\n", "is not the skill's name"),
        (" ---\nname: idea\ndescription: d\nwhen_to_use: w\n---\n", "no frontmatter"),
    ],
)
def test_a_malformed_skill_file_is_refused(text: str, fragment: str) -> None:
    with pytest.raises(Invalid) as err:
        parse_skill(text, name="idea", path="skills/idea/SKILL.md")
    assert err.value.code == "invalid_skill" and fragment in err.value.message


# ---------------------------------------------------------------------------


def _section(body: str, title: str) -> str:
    """The text of section ``## title`` up to the next ``## `` heading."""
    lines = body.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.rstrip() == f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "".join(lines[start:end])


def _literal_arg(call: Any, name: str) -> Any:
    source = call.arguments.get(name)
    return None if source is None else source.strip("\"'")


def test_the_decision_skill_lists_exactly_the_actions_a_decision_record_accepts() -> None:
    text = skills.skill_path("decision").read_text()
    listed = text.split("7. The decision. Actions:", 1)[1].split(".\n", 1)[0]
    assert sorted(a.strip() for a in listed.replace("\n", " ").split(",")) == sorted(DECISION_ACTIONS)
