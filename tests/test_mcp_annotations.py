"""What every MCP tool tells a client it does (its ``ToolAnnotations``), and that the
queries keep their word.

Clients run a tool marked ``readOnlyHint`` without asking, so a tool that changes the
quest must never carry it. The table below is the decision, tool by tool; the listing
must say exactly that. Then every read-only tool is called with valid arguments
against a quest with something in it, through an in-process client: the only event
any log of the home may gain is the call's own ``tool.call_finished`` record, and no
file may change but the logs and their indexes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ds_events.home import Home, Quest

from .mcp_support import SCENE, changed, discover_tools, is_log_file, open_clients, snapshot

TOOLS = discover_tools()

QUERY = "query"
# tool -> QUERY, or (destructive, idempotent) for a tool that changes something.
DECLARED: dict[str, str | tuple[bool, bool]] = {
    "memory.write": (False, False),  # superseding marks the old card superseded; it stays readable
    "memory.read": QUERY,
    "memory.search": QUERY,
    "memory.list_recent": QUERY,
    "memory.promote_to_global": (False, True),  # a second promotion is refused
    "memory.audit": QUERY,
    "memory.read_memory": QUERY,
    "memory.append_memory": (False, False),
    "memory.audit_memory": QUERY,
    "artifact.record": (False, False),
    "artifact.refresh_summary": (False, True),
    "artifact.arxiv": (False, True),  # the first read of a paper adds it to the library
    "artifact.checkpoint": (False, False),
    "artifact.prepare_branch": (False, True),
    "artifact.render_git_graph": (False, True),
    "artifact.publish_baseline": (False, True),
    "artifact.attach_baseline": (False, True),
    "artifact.confirm_baseline": (False, False),
    "artifact.record_main_experiment": (False, False),
    "artifact.waive_baseline": (False, False),
    "artifact.overwrite_baseline": (True, False),
    "artifact.create_analysis_campaign": (False, False),
    "artifact.record_analysis_slice": (False, False),
    "artifact.get_method_scoreboard": QUERY,
    "artifact.get_optimization_frontier": QUERY,
    "artifact.interact": (False, False),
    "artifact.get_interaction": QUERY,
    "artifact.submit_idea": (True, False),  # mode="revise" rewrites the active idea
    "artifact.activate_branch": (False, False),
    "artifact.list_research_branches": QUERY,
    "artifact.resolve_runtime_refs": QUERY,
    "artifact.get_quest_state": QUERY,
    "artifact.read_quest_documents": QUERY,
    "artifact.get_conversation_context": QUERY,
    "artifact.get_analysis_campaign": QUERY,
    "artifact.get_global_status": QUERY,
    "artifact.get_research_map_status": QUERY,
    "artifact.git": (False, False),
    "artifact.complete_quest": (False, True),
    "artifact.submit_paper_outline": (True, False),  # revise rewrites the selected outline
    "artifact.list_paper_outlines": QUERY,
    "artifact.compile_outline_to_writing_plan": (True, True),  # a new compile replaces the plan
    "artifact.submit_paper_bundle": (False, False),
    "artifact.get_paper_contract": QUERY,
    "artifact.get_paper_contract_health": QUERY,
    "artifact.validate_academic_outline": QUERY,
    "artifact.validate_manuscript_language": QUERY,
    "artifact.validate_manuscript_coverage": QUERY,
    "bash_exec.bash_exec": (True, False),  # any shell command; kill stops a session
}

# Valid arguments for every read-only tool; "{card_id}" and "{interaction_id}" are
# filled from the scene's answers. Several calls a tool where its modes read differently.
QUERY_CALLS: dict[str, list[dict[str, Any]]] = {
    "memory.read": [{"card_id": "{card_id}"}],
    "memory.search": [{"query": "warmup", "scope": "both"}],
    "memory.list_recent": [{}],
    "memory.audit": [{}],
    "memory.read_memory": [{}, {"task_description": "rerun with a clean tokenizer cache", "top_k": 3}],
    "memory.audit_memory": [{}],
    "artifact.get_method_scoreboard": [{}],
    "artifact.get_optimization_frontier": [{}],
    "artifact.get_interaction": [{"interaction_id": "{interaction_id}"}],
    "artifact.list_research_branches": [{}],
    "artifact.resolve_runtime_refs": [{}],
    "artifact.get_quest_state": [{"detail": "summary"}, {"detail": "full"}],
    "artifact.read_quest_documents": [{"mode": "full"}],
    "artifact.get_conversation_context": [{}],
    "artifact.get_analysis_campaign": [{"campaign_id": "active"}],
    "artifact.get_global_status": [{}],
    "artifact.get_research_map_status": [{"detail": "full"}],
    "artifact.list_paper_outlines": [{}],
    "artifact.get_paper_contract": [{"detail": "full"}, {"detail": "summary"}],
    "artifact.get_paper_contract_health": [{"detail": "summary"}, {"detail": "full"}],
    "artifact.validate_academic_outline": [{}],
    "artifact.validate_manuscript_language": [{"scope": "all"}],
    "artifact.validate_manuscript_coverage": [{"detail": "full"}],
}


def _declared(tool: Any) -> str | tuple[bool, bool | None] | None:
    """What the listing says of ``tool``, in the table's terms (None: it says nothing)."""
    hints = tool.annotations
    if hints is None or hints.read_only_hint is None:
        return None
    if hints.read_only_hint:
        return QUERY
    return (hints.destructive_hint, hints.idempotent_hint)


def test_every_tool_declares_what_the_table_says() -> None:
    listed = {f"{namespace}.{tool.name}": _declared(tool) for namespace, tool in TOOLS}
    assert set(listed) == set(DECLARED), "a tool was added or removed: decide its annotations in DECLARED"
    wrong = {name: (said, DECLARED[name]) for name, said in listed.items() if said != DECLARED[name]}
    assert wrong == {}, f"tool: (listed, declared here): {wrong}"


def test_every_read_only_tool_has_a_valid_call_below() -> None:
    read_only = {f"{namespace}.{tool.name}" for namespace, tool in TOOLS if _declared(tool) == QUERY}
    assert set(QUERY_CALLS) == read_only


async def test_a_read_only_tool_appends_nothing_but_its_own_call_record(home: Home, quest: Quest) -> None:
    async with open_clients(home) as clients:
        found: dict[str, str] = {}
        for namespace, tool, args in SCENE:
            result = await clients[namespace].call_tool(tool, args)
            assert not result.is_error, (tool, result.content)
            content = result.structured_content
            if (namespace, tool) == ("memory", "write"):
                found["card_id"] = content["id"]
            if tool == "interact":
                found["interaction_id"] = content["interaction_id"]
        problems: list[str] = []
        for namespace, tool in TOOLS:
            name = f"{namespace}.{tool.name}"
            if _declared(tool) != QUERY:
                continue
            for args in QUERY_CALLS.get(name, []):
                args = json.loads(json.dumps(args).replace("{card_id}", found["card_id"]).replace(
                    "{interaction_id}", found["interaction_id"]))  # fmt: skip
                logs, files = _log_sizes(home), snapshot(home.root)
                result = await clients[namespace].call_tool(tool.name, args)
                if result.is_error:
                    problems.append(f"{name}({args}) failed: {result.content[0].text[:300]}")
                    continue
                appended = _appended(home, since=logs)
                if appended != [("tool.call_finished", tool.name, "ok")]:
                    problems.append(f"{name}({args}) appended {appended}")
                touched = [p for p in changed(files, snapshot(home.root)) if not is_log_file(p)]
                if touched:
                    problems.append(f"{name}({args}) changed {touched}")
    assert problems == [], "\n".join(problems)


# -- private helpers ---------------------------------------------------------------------


def _log_sizes(home: Home) -> dict[Path, int]:
    return {log: log.stat().st_size for log in home.root.rglob("events.jsonl")}


def _appended(home: Home, *, since: dict[Path, int]) -> list[tuple[str, str, str]]:
    """(type, tool, status) of every event any log of the home gained after ``since``
    (tool and status are empty for an event that is not a call record)."""
    found = []
    for log in sorted(home.root.rglob("events.jsonl")):
        with open(log, "rb") as f:
            f.seek(since.get(log, 0))
            for line in f.read().splitlines():
                event = json.loads(line)
                found.append((event["type"], event.get("tool", ""), event.get("status", "")))
    return found



# Calls that change the quest, for every tool the table says changes something (the
# SCENE's calls count too). Run in this order after the SCENE; "{...}" is filled from
# earlier answers. A tool declared as changing that no call here shows changing would be
# a query without readOnlyHint, which clients ask about before every read.
CHANGE_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory.promote_to_global", {"card_id": "{card_id}"}),
    ("artifact.refresh_summary", {"reason": "annotations test"}),
    ("artifact.arxiv", {"paper_id": "1512.03385"}),
    ("artifact.render_git_graph", {}),
    ("artifact.attach_baseline", {"baseline_id": "resnet20"}),
    ("artifact.overwrite_baseline", {"metrics_summary": {"top1": 0.91}, "change_summary": "a re-run"}),
    # the scene selected an outline, which opened paper/r1: a draft there makes a bundle
    ("bash_exec.bash_exec", {"command": "mkdir -p paper && printf '# Introduction\\n' > paper/draft.md", "mode": "await",
                             "workdir": ".ds/worktrees/paper__r1"}),
    ("artifact.submit_paper_bundle", {"title": "LS"}),
    ("artifact.record_analysis_slice", {"campaign_id": "{campaign_id}", "slice_id": "s1", "metrics_summary": {"top1": 0.9}}),
    ("artifact.record_analysis_slice", {"campaign_id": "{campaign_id}", "slice_id": "s2", "metrics_summary": {"top1": 0.9}}),
    ("artifact.activate_branch", {"run_id": "r1"}),
    ("artifact.submit_idea", {"title": "Wider", "problem": "saturates", "hypothesis": "capacity helps"}),
    ("artifact.git", {"action": "commit", "message": "annotations test", "allow_empty": True}),
    ("bash_exec.bash_exec", {"command": "true", "mode": "await"}),
    ("artifact.interact", {"kind": "decision_request", "message": "May I close the quest?", "reply_mode": "blocking",
                           "reply_schema": {"decision_type": "quest_completion_approval"},
                           "options": [{"id": "yes", "label": "Close it"}, {"id": "no", "label": "Keep going"}]}),
    ("artifact.complete_quest", {"summary": "closed by the annotations test"}),
]  # fmt: skip
# waive_baseline is refused once a baseline is confirmed: shown on a quest without one.
WAIVE = ("artifact.waive_baseline", {"reason": "a new task: nothing to compare with"})


async def test_every_tool_declared_as_changing_is_shown_changing_the_quest(home: Home, quest: Quest) -> None:
    from ds_events.services.interactions.commands import Reply
    from ds_events.services.interactions.mailbox import reply

    changing = {name for name, said in DECLARED.items() if said != QUERY}
    shown: set[str] = set()
    found: dict[str, str] = {}
    problems: list[str] = []

    async def call(clients: dict[str, Any], name: str, args: dict[str, Any]) -> None:
        namespace, tool = name.split(".", 1)
        for key, value in found.items():
            args = json.loads(json.dumps(args).replace(f"{{{key}}}", value))
        logs = _log_sizes(home)
        result = await clients[namespace].call_tool(tool, args)
        if result.is_error:
            problems.append(f"{name}({args}) failed: {result.content[0].text[:300]}")
            return
        content = result.structured_content
        for key in ("id", "interaction_id", "campaign_id"):
            if isinstance(content.get(key), str):
                found["card_id" if key == "id" and namespace == "memory" else key] = content[key]
        if tool == "interact" and "reply_schema" in args:  # the user approves the completion
            reply(quest, Reply(interaction_id=content["interaction_id"], text="yes", option_id="yes"))
        if [t for t, _, _ in _appended(home, since=logs) if not t.startswith("tool.call")]:
            shown.add(name)

    async with open_clients(home) as clients:
        for namespace, tool, args in SCENE:
            await call(clients, f"{namespace}.{tool}", args)
        for name, args in CHANGE_CALLS:
            await call(clients, name, args)
    home.create_quest("Without a baseline", quest_id="q2", brief="No baseline can exist.").close()
    async with open_clients(home, "q2") as clients:
        await call(clients, *WAIVE)
    assert problems == [], "\n".join(problems)
    assert changing - shown == set(), "declared as changing, never shown changing anything (a query?)"


def test_every_tool_says_what_a_refusal_or_a_read_changes() -> None:
    # True of every tool: tests/test_mcp_contract.py shows a refused call of any tool
    # appends nothing but its own call record; the read-only test above shows a query
    # appends nothing else either.
    missing = []
    for namespace, tool in TOOLS:
        said = tool.description or ""
        if _declared(tool) == QUERY and "read-only" not in said.lower():
            missing.append(f"{namespace}.{tool.name}: say 'Read-only.'")
        if _declared(tool) != QUERY and "A refused call changes nothing." not in said:
            missing.append(f"{namespace}.{tool.name}: say 'A refused call changes nothing.'")
    assert missing == []
