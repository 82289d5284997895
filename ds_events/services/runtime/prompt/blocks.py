"""The blocks of a turn's prompt, in order: what each one says, from the inputs alone.

:func:`block_contents` makes every block of :data:`~.budget.BLOCKS` as a
:class:`~.budget.Block` (a heading and its items, which end survives a cut, and a hint
of where the rest is); :func:`~.budget.fit` cuts them to their budgets. Each reads only
bounded parts of the states (the newest items of a dict, the open requests), so a
prompt costs the same on a quest of 1,000 events and of 1,000,000.
"""

from __future__ import annotations

from itertools import islice

from projections.artifacts import State as ArtifactsState
from projections.bash_sessions import State as BashSessionsState
from projections.interactions import InboundItem, InteractionRecord, State as InteractionsState

from .budget import Block, one_line
from .inputs import EXCERPT, PromptInputs

__all__ = ["block_contents"]

_SCAN = 50  # newest records looked at for a bounded list (sessions, campaigns)


def block_contents(inputs: PromptInputs, skill: str, reason: str) -> dict[str, Block]:
    """Every block of the prompt for a turn using ``skill`` (chosen for ``reason``), uncut."""
    return {
        "system": Block("system", "", _lines(inputs.system_prompt.strip() or "(no system prompt was supplied)"), "head",
                        "lines", f"read the rest in `{inputs.system_prompt_path}`" if inputs.system_prompt_path else ""),
        "runtime": Block("runtime", "Runtime context", _runtime(inputs, skill, reason), "head", "lines"),
        "communication": Block("communication", "Talking to the user", _communication(inputs), "head", "lines"),
        "skills": Block("skills", "Skills", _skills(inputs, skill), "head", "lines"),
        "quest_files": Block("quest_files", "Quest files", _quest_files(inputs), "head", "files"),
        "durable_state": Block("durable_state", "Recent durable state", _durable_state(inputs), "head", "lines",
                               "SUMMARY.md and artifacts/ hold the full record"),
        "interaction_style": Block("interaction_style", "Interaction style", _lines(_STYLE), "head", "lines"),
        "memory": Block("memory", "Priority memory for this turn", _memory(inputs, skill), "head", "cards",
                        "memory.search finds more"),
        "conversation": Block("conversation", "Recent conversation", _conversation(inputs), "tail", "messages",
                              "artifact.interact(recent_message_limit=50) returns more of them"),
        "message": Block("message", "Current message", _current(inputs), "head", "lines",
                         "the whole text is in the quest log at the seq shown"),
    }  # fmt: skip


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _runtime(i: PromptInputs, skill: str, reason: str) -> list[str]:
    status, artifacts = i.status, i.artifacts
    worktree = f" (worktree `{artifacts.active_worktree}`)" if artifacts.active_worktree else ""
    return [
        f"- DS_HOME: `{i.home}`",
        f"- quest: `{i.quest_id}` \"{one_line(status.title, 200)}\", status {status.status}",
        f"- quest root (your working directory unless a branch has a worktree): `{i.quest_root}`",
        f"- active anchor: `{status.anchor}`; active branch: `{artifacts.active_branch}`{worktree}",
        f"- skill for this turn: `{skill}` ({reason})",
        f"- run: `{i.run_id}`; runner: `{i.runner}`; model: `{i.model or 'runner default'}`",
        f"- conversation: `{i.conversation_id}`",
        "- MCP namespaces: " + ", ".join(f"`{n}`" for n in i.namespaces)
        + " (tools appear as `mcp__<namespace>__<tool>`)",
    ]


def _communication(i: PromptInputs) -> list[str]:
    active = [b for b in i.interactions.bindings.values() if b.active]
    where = ", ".join(f"{b.label or b.connector} ({b.connector})" for b in active[:8])
    return [
        "The user reads only what you send with `artifact.interact`; your other output is kept in the log, not delivered.",
        "- `kind`: progress (routine status) | milestone (a result) | decision_request (the user must choose) | "
        "approval_result | answer (to a question).",
        "- A decision_request is blocking: give 2-12 `options` (id, label) and mark one `recommended`; the reply arrives "
        "as a message in a later turn or through a later `interact` call.",
        "- Every `interact` call also returns what the user sent meanwhile (`recent_inbound_messages`): read it and act on it.",
        f"- Delivered to: {where or 'this quest only'} (routing: {i.interactions.routing_policy}).",
    ]


def _skills(i: PromptInputs, skill: str) -> list[str]:
    chosen = i.skill_paths.get(skill)
    lines = [
        f"- this turn: `{skill}`: " + (f"`{chosen}` (read it first and follow it)" if chosen else "(its SKILL.md is missing)")
    ]
    others = [f"`{s}`: `{p}`" for s, p in i.skill_paths.items() if s != skill]
    if others:
        lines.append("- the others, when the quest moves to their stage: " + "; ".join(others))
    return lines


def _quest_files(i: PromptInputs) -> list[str]:
    if not i.quest_files:
        return ["(none yet)"]
    return [f"- `{rel}`" for rel in i.quest_files]


def _durable_state(i: PromptInputs) -> list[str]:
    a = i.artifacts
    lines = [*_baseline_gate(a), *_latest_run(a)]
    campaign = next(iter(reversed(a.campaigns.values())), None)
    if campaign is not None:
        lines.append(
            f"- analysis campaign `{campaign.campaign_id}` \"{one_line(campaign.title, 120)}\": "
            f"{campaign.done}/{len(campaign.slices)} slices recorded"
        )
    lines += _open_requests(i.interactions)
    lines += _sessions(i.bash_sessions)
    decisions = a.recent.get("decision", [])[-3:]
    for artifact_id in reversed(decisions):
        p = a.records[artifact_id].payload
        text = p.get("verdict") or p.get("title") or p.get("summary") or ""
        action = f" -> {p['action']}" if p.get("action") else ""
        lines.append(f"- decision `{artifact_id}`: {one_line(str(text), 160)}{action}: {one_line(str(p.get('reason', '')), 200)}")
    return lines


def _baseline_gate(a: ArtifactsState) -> list[str]:
    if a.confirmed_baseline is None and a.baseline_gate == "waived" and a.waiver is not None:
        return [
            f"- baseline gate: WAIVED ({a.waiver['reason']}); main experiments are recorded without a comparison."
        ]
    if a.confirmed_baseline is None:
        attached = f" (`{a.attached['baseline_id']}` is attached, not confirmed)" if a.attached else ""
        return [
            f"- baseline gate: CLOSED, no confirmed baseline{attached}. Main experiments are refused until "
            "`artifact.confirm_baseline` records one with its metric contract (or `artifact.waive_baseline` "
            "records why there is none)."
        ]
    c = a.baselines[a.confirmed_baseline].confirmed
    assert c is not None
    value = c.metrics_summary.get(c.primary_metric)
    return [
        f"- baseline gate: open, `{a.confirmed_baseline}` confirmed; primary metric `{c.primary_metric}` = {_num(value)} "
        f"({c.metric_directions.get(c.primary_metric, 'higher')} is better); contract `{c.contract_path}`"
    ]


def _latest_run(a: ArtifactsState) -> list[str]:
    if a.latest_run is None:
        return ["- main experiments: none recorded yet"]
    run = a.runs[a.latest_run]
    delta = run.comparisons.get(run.primary_metric, {}).get("delta")
    vs = f" ({_signed(delta)} vs `{run.baseline_id}`)" if delta is not None else ""
    return [
        f"- latest main experiment `{run.run}` \"{one_line(run.title, 120)}\": `{run.primary_metric}` = "
        f"{_num(run.metrics_summary.get(run.primary_metric))}{vs} on branch `{run.branch}`; {len(a.runs)} recorded"
    ]


def _open_requests(state: InteractionsState) -> list[str]:
    ids = state.open_requests
    if not ids:
        return ["- open requests: none"]
    lines = [f"- open requests waiting for the user: {len(ids)}"]
    for iid in ids[-5:]:
        r = state.interactions[iid]
        options = ", ".join(str(o.get("id")) for o in r.options[:12])
        lines.append(f"  - `{iid}` {r.kind}: {one_line(r.message, 300)}" + (f" (options: {options})" if options else ""))
    return lines


def _sessions(state: BashSessionsState) -> list[str]:
    running = [s for s in islice(reversed(state.sessions.values()), _SCAN) if s.status == "running"]
    if not running:
        return []
    lines = [f"- shell sessions running: {len(running)}" + ("+" if len(state.sessions) > _SCAN else "")]
    for s in running[:5]:
        progress = f"; progress {one_line(str(s.progress), 160)}" if s.progress else ""
        lines.append(f"  - `{s.id}` `{one_line(s.command, 160)}` ({s.lines} lines{progress})")
    return lines


def _memory(i: PromptInputs, skill: str) -> list[str]:
    lines = []
    if i.memory_note:
        lines.append(f"({i.memory_note})")
    if not i.memory:
        lines.append("(no cards yet: write what you learn with `memory.write`)")
        return lines
    searched = f"cards matching the message's words ({', '.join(i.memory_terms)}), then " if i.memory_terms else ""
    lines.append(f"The {searched}the newest cards of the `{skill}` stage's memory plan. Read a card with `memory.read`.")
    for item in i.memory:
        lines.append(f"- [{item.scope} {item.kind}, {item.why}] `{item.id}` {one_line(item.title, 200)}: `{item.path}`")
        if item.excerpt:
            lines.append(f"  {one_line(item.excerpt, EXCERPT)}")
    return lines


def _conversation(i: PromptInputs) -> list[str]:
    n = i.config.conversation_items
    limit = i.config.conversation_item_chars
    current = {m.id for m in i.messages}
    inbound = [m for m in islice(reversed(i.interactions.inbound.values()), n + len(current)) if m.id not in current][:n]
    outbound = list(islice(reversed(i.interactions.interactions.values()), n))
    merged: list[tuple[int, str]] = [(m.seq, _inbound_line(m, limit)) for m in inbound]
    merged += [(r.seq, _outbound_line(r, limit)) for r in outbound]
    merged.sort()
    if not merged:
        return ["(nothing yet)"]
    return [line for _seq, line in merged[-n:]] if n else ["(not shown: prompt.conversation_items is 0)"]


def _inbound_line(m: InboundItem, limit: int) -> str:
    who = "user" if m.kind == "message" else f"user, reply to `{m.interaction_id}`"
    return f"- [{m.ts}] {who}: {one_line(m.text, limit)}"


def _outbound_line(r: InteractionRecord, limit: int) -> str:
    return f"- [{r.ts}] you ({r.kind}, `{r.interaction_id}`, {r.status}): {one_line(r.message, limit)}"


def _current(i: PromptInputs) -> list[str]:
    note = [i.turn_note, ""] if i.turn_note else []
    if not i.messages:
        return [*note, "No new message: continue the quest from its recorded state (plan, open requests, running sessions)."]
    lines: list[str] = note
    for m in i.messages:
        if m.kind == "reply":
            option = f", option `{m.option_id}`" if m.option_id else ""
            lines.append(f"The user replied to `{m.interaction_id}`{option} (seq {m.seq}, {m.ts}):")
        else:
            lines.append(f"The user wrote (seq {m.seq}, {m.ts}):")
        lines += ["", *_lines(m.text), ""]
    return lines[:-1]


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def _signed(value: float) -> str:
    return f"{value:+.6g}"


_STYLE = """\
- Work first, then report: send `progress` when a real step ends (a run started or finished, a result recorded), \
not for every tool call, and never the same update twice.
- Keep messages short: what happened, the numbers, the paths to the evidence, what you do next.
- Ask only when the choice is the user's (scope, budget, a risky or irreversible step): one decision_request with \
options and your recommendation, then continue with work that does not depend on the answer.
- Answer in the user's language. Never report a result you have not recorded; say plainly when something failed.
- Before ending the turn, record what you learned (`memory.write`) and what you decided (`artifact.record`)."""

