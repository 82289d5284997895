"""The turn prompt: which stage skill a turn uses, and the text the runner is given.

Three steps, so the part that decides what the agent reads has no I/O at all:

- :func:`gather_inputs` (a context manager) reads: the quest's projection states, lent
  for the block rather than copied (``Views.lend``), the cards of the stage memory plan
  and a memory search with the words of the user's message, which context files and
  skill files exist, and ``config.yaml``'s ``prompt`` section.
- :func:`build_prompt` is pure: the same :class:`PromptInputs` give the same text, byte
  for byte. It reads only bounded parts of the states (the newest items of a dict, the
  open requests), so it costs the same on a quest of 1,000 events and of 1,000,000.
- :func:`write_prompt` stores the text at ``<quest>/.ds/runs/<run_id>/prompt.md``; its
  sha256 goes into the turn's event.

Blocks, in order (``config.yaml`` ``prompt.budgets`` names each one's budget): the system
prompt (``system``); runtime context (``runtime``: home, quest, anchor and branch, the
skill and why, runner, model, conversation, MCP namespaces); the communication surface
(``communication``: ``artifact.interact``); skill files, referenced by path
(``skills``); quest context files (``quest_files``); recent durable state
(``durable_state``: baseline gate, latest main experiment, open requests, running shell
sessions, recent decisions); interaction style (``interaction_style``); priority memory
(``memory``); the recent conversation (``conversation``); the current message(s)
(``message``). A block longer than its budget is cut where it matters least (the
oldest conversation, the lowest-ranked memory, the end of a text) and says so in the
text; if the blocks together still exceed ``prompt.max_chars``, they are shrunk in
:data:`SHRINK_ORDER` until the whole prompt fits.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from ds_events.config import PromptConfig
from ds_events.errors import Invalid, ServiceError
from ds_events.home import Quest
from ds_events.memory.store import MemoryContext
from ds_events.memory.text import STOPWORDS, words
from ds_events.paths import confined, write_atomic
from ds_events.services.memory.cards import search
from ds_events.services.memory.commands import SearchCards
from ds_events.services.memory.plan import pull_for_stage
from ds_events.services.runtime import skills as skills
from projections.artifacts import State as ArtifactsState
from projections.bash_sessions import State as BashSessionsState
from projections.interactions import InboundItem, InteractionRecord
from projections.interactions import State as InteractionsState
from projections.status import StatusState

__all__ = [
    "STAGE_SKILLS",
    "SKILLS",
    "BLOCKS",
    "SHRINK_ORDER",
    "NAMESPACES",
    "MemoryItem",
    "PromptInputs",
    "BlockInfo",
    "BuiltPrompt",
    "select_skill",
    "message_terms",
    "build_prompt",
    "gather_inputs",
    "prepare_prompt",
    "write_prompt",
    "prompt_path",
    "default_system_prompt_path",
    "default_skills_dir",
]

# The anchors a turn may work in with their own skill; ``decision`` is cross-cutting.
STAGE_SKILLS = ("scout", "baseline", "idea", "experiment", "analysis-campaign", "write", "finalize")
SKILLS = (*STAGE_SKILLS, "decision")
BLOCKS = (
    "system", "runtime", "communication", "skills", "quest_files", "durable_state",
    "interaction_style", "memory", "conversation", "message",
)  # fmt: skip
# Which blocks give way first when the whole prompt is over ``max_chars``: history and
# retrieved context before the rules and the user's own words.
SHRINK_ORDER = (
    "conversation", "memory", "durable_state", "quest_files", "skills", "interaction_style",
    "communication", "system", "message", "runtime",
)  # fmt: skip
NAMESPACES = ("memory", "artifact", "bash_exec")
CONTEXT_FILES = ("brief.md", "plan.md", "status.md", "SUMMARY.md", "MEMORY.md", "interactions/open_requests.md")

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_MIN_BLOCK = 200  # a shrunk block keeps at least this much (its heading and a marker)
_MIN_PARTIAL = 80  # an item cut to fit shows at least this much of itself, else it is left out
_MAX_TERMS = 12
_EXCERPT = 240
_SCAN = 50  # newest records looked at for a bounded list (sessions, campaigns)


@dataclass(frozen=True, kw_only=True)
class MemoryItem:
    """A card chosen for the turn: from the stage plan (``why="plan"``) or because it
    matched the user's words (``why="search"``)."""

    scope: str
    kind: str
    id: str
    title: str
    path: str
    why: str
    excerpt: str = ""


@dataclass(frozen=True, kw_only=True)
class PromptInputs:
    """Everything :func:`build_prompt` reads. The states are the quest's projection
    states; the rest is plain values."""

    home: str
    quest_id: str
    quest_root: str
    run_id: str
    runner: str
    model: str
    conversation_id: str
    status: StatusState
    interactions: InteractionsState
    artifacts: ArtifactsState
    bash_sessions: BashSessionsState
    messages: tuple[InboundItem, ...] = ()
    system_prompt: str = ""
    system_prompt_path: str = ""  # where the system prompt was read from (named when it is cut)
    skill_paths: Mapping[str, str] = field(default_factory=dict)  # skill -> path of its SKILL.md (existing ones)
    quest_files: tuple[str, ...] = ()  # context files that exist, relative to the quest root
    memory: tuple[MemoryItem, ...] = ()
    memory_terms: tuple[str, ...] = ()
    memory_note: str = ""  # why memory is missing or partial (e.g. the index was busy)
    turn_note: str = ""  # what the scheduler says about this turn (a continuation, a retry)
    namespaces: tuple[str, ...] = NAMESPACES
    config: PromptConfig = field(default_factory=PromptConfig)


@dataclass(frozen=True)
class BlockInfo:
    name: str
    chars: int
    truncated: bool


@dataclass(frozen=True)
class BuiltPrompt:
    text: str
    sha256: str
    blocks: tuple[BlockInfo, ...]
    skill: str
    skill_reason: str

    @property
    def chars(self) -> int:
        return len(self.text)


# -- skill selection ------------------------------------------------------------------


def select_skill(
    status_state: StatusState, interactions_state: InteractionsState, message: Iterable[InboundItem]
) -> tuple[str, str]:
    """``(skill, reason)`` for a turn delivering ``message`` (inbound items).

    A reply to a blocking request (one still open in the state, or one this very reply
    answered: the reply's own event closes it) uses ``decision``; otherwise the quest's
    active anchor when it is a stage skill; otherwise ``decision``.
    """
    for item in message:
        if item.kind != "reply" or not item.interaction_id:
            continue
        iid = item.interaction_id
        record = interactions_state.interactions.get(iid)
        if iid in interactions_state.open_requests or (record is not None and record.reply_mode == "blocking"):
            return "decision", f"the message replies to blocking request {iid}"
    anchor = status_state.anchor
    if anchor in STAGE_SKILLS:
        return anchor, f"the quest's active anchor is {anchor}"
    return "decision", f"the active anchor {anchor!r} is not a stage skill"


def message_terms(messages: Iterable[InboundItem], limit: int = _MAX_TERMS) -> list[str]:
    """The distinct content words of the user's messages, in order (a memory query)."""
    out: dict[str, None] = {}
    for item in messages:
        for w in words(item.text):
            if len(w) > 2 and w not in STOPWORDS and not w.isdigit():
                out.setdefault(w)
                if len(out) >= limit:
                    return list(out)
    return list(out)


# -- the pure builder -----------------------------------------------------------------


def build_prompt(inputs: PromptInputs) -> BuiltPrompt:
    """The turn's prompt from ``inputs``: no I/O, no clock, same inputs -> same bytes."""
    skill, reason = select_skill(inputs.status, inputs.interactions, inputs.messages)
    cfg = inputs.config
    blocks = {
        "system": _Block("system", "", _lines(inputs.system_prompt.strip() or "(no system prompt was supplied)"), "head",
                         "lines", f"read the rest in `{inputs.system_prompt_path}`" if inputs.system_prompt_path else ""),
        "runtime": _Block("runtime", "Runtime context", _runtime(inputs, skill, reason), "head", "lines"),
        "communication": _Block("communication", "Talking to the user", _communication(inputs), "head", "lines"),
        "skills": _Block("skills", "Skills", _skills(inputs, skill), "head", "lines"),
        "quest_files": _Block("quest_files", "Quest files", _quest_files(inputs), "head", "files"),
        "durable_state": _Block("durable_state", "Recent durable state", _durable_state(inputs), "head", "lines",
                                "SUMMARY.md and artifacts/ hold the full record"),
        "interaction_style": _Block("interaction_style", "Interaction style", _lines(_STYLE), "head", "lines"),
        "memory": _Block("memory", "Priority memory for this turn", _memory(inputs, skill), "head", "cards",
                         "memory.search finds more"),
        "conversation": _Block("conversation", "Recent conversation", _conversation(inputs), "tail", "messages",
                               "artifact.interact(recent_message_limit=50) returns more of them"),
        "message": _Block("message", "Current message", _current(inputs), "head", "lines",
                          "the whole text is in the quest log at the seq shown"),
    }  # fmt: skip
    budgets = {name: getattr(cfg.budgets, name) for name in BLOCKS}
    rendered = {name: blocks[name].fit(budgets[name]) for name in BLOCKS}
    # The whole prompt: blocks joined by a blank line. Over the cap, shrink blocks in
    # SHRINK_ORDER, each re-cut from its full content, until the excess is gone: first
    # down to a tenth of the cap each (so one huge block cannot leave the others
    # nothing), then, if that is not enough, down to the minimum.
    for floor in (max(_MIN_BLOCK, cfg.max_chars // 10), _MIN_BLOCK):
        for name in SHRINK_ORDER:
            excess = _total(rendered) - cfg.max_chars
            if excess <= 0:
                break
            budget = max(floor, len(rendered[name][0]) - excess)
            if budget < len(rendered[name][0]):
                rendered[name] = blocks[name].fit(budget)
    text = "\n\n".join(rendered[name][0] for name in BLOCKS) + "\n"
    if len(text) > cfg.max_chars:  # only when max_chars is below the blocks' minimums
        marker = "\n[… prompt cut at prompt.max_chars …]\n"
        text = text[: cfg.max_chars - len(marker)] + marker
    infos = tuple(BlockInfo(name, len(rendered[name][0]), rendered[name][1]) for name in BLOCKS)
    return BuiltPrompt(
        text=text, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), blocks=infos, skill=skill, skill_reason=reason
    )


# -- reading (the impure side) ----------------------------------------------------------


@contextlib.contextmanager
def gather_inputs(
    quest: Quest,
    *,
    run_id: str,
    runner: str,
    model: str = "",
    messages: Iterable[InboundItem] | None = None,
    conversation_id: str | None = None,
    mem: MemoryContext | None = None,
    system_prompt: str | None = None,
    skills_dir: str | Path | None = None,
    config: PromptConfig | None = None,
    turn_note: str = "",
) -> Iterator[PromptInputs]:
    """The inputs of a turn's prompt, valid for the ``with`` block.

    ``messages``: the inbound items the turn delivers (default: the quest's pending
    ones). ``mem``: a memory context to reuse (a daemon keeps one per quest); one is
    opened and closed here otherwise. ``system_prompt`` and ``skills_dir`` default to
    the repository's ``prompts/system.md`` and ``skills/``; ``config`` to
    ``config.yaml``'s ``prompt`` section.

    The projection states are lent, not handed out: nothing is copied on the next
    event, which is why the inputs must not be kept past the block (build the prompt
    inside it, or use :func:`prepare_prompt`).
    """
    check_run_id(run_id)
    cfg = config if config is not None else quest.home.config().prompt
    system_path = ""
    if system_prompt is None:
        path = default_system_prompt_path()
        system_prompt = path.read_text(encoding="utf-8") if path.is_file() else ""
        system_path = str(path) if system_prompt else ""
    skills_root = Path(skills_dir) if skills_dir is not None else default_skills_dir()
    skill_paths = {s: str(skills_root / s / "SKILL.md") for s in SKILLS if (skills_root / s / "SKILL.md").is_file()}
    quest_files = tuple(rel for rel in CONTEXT_FILES if (quest.root / rel).is_file())
    own_mem = mem is None
    if mem is None:
        mem = MemoryContext(quest=quest, actor="prompt")
    try:
        quest.views.catch_up(keep=False)
        with contextlib.ExitStack() as lent:
            status, interactions, artifacts, sessions = (
                lent.enter_context(quest.views.lend(name)) for name in ("status", "interactions", "artifacts", "bash_sessions")
            )
            chosen = tuple(messages) if messages is not None else tuple(interactions.inbound[i] for i in interactions.pending)
            skill, _reason = select_skill(status, interactions, chosen)
            terms = tuple(message_terms(chosen))
            memory, note = _pull_memory(mem, skill, terms, cfg)
            yield PromptInputs(
                home=str(quest.home.root),
                quest_id=quest.id,
                quest_root=str(quest.root),
                run_id=run_id,
                runner=runner,
                model=model,
                conversation_id=conversation_id or f"quest:{quest.id}",
                status=status,
                interactions=interactions,
                artifacts=artifacts,
                bash_sessions=sessions,
                messages=chosen,
                system_prompt=system_prompt,
                system_prompt_path=system_path,
                skill_paths=skill_paths,
                quest_files=quest_files,
                memory=memory,
                memory_terms=terms,
                memory_note=note,
                turn_note=turn_note,
                config=cfg,
            )
    finally:
        if own_mem:
            mem.close()


def prepare_prompt(quest: Quest, *, run_id: str, runner: str, write: bool = True, **kwargs: Any) -> BuiltPrompt:
    """Gather, build and (by default) store a turn's prompt; returns it."""
    with gather_inputs(quest, run_id=run_id, runner=runner, **kwargs) as inputs:
        built = build_prompt(inputs)
    if write:
        write_prompt(quest, run_id, built)
    return built


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one safe path component, else ``invalid_run_id``."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or ".." in run_id:
        raise Invalid(
            f"invalid run id {run_id!r}: use 1-128 letters, digits, '.', '-' or '_', starting with a letter or digit",
            code="invalid_run_id",
        )
    return run_id


def prompt_path(quest: Quest, run_id: str) -> Path:
    """Where the prompt of ``run_id`` is stored (confined to the quest root)."""
    rel = f".ds/runs/{check_run_id(run_id)}/prompt.md"
    try:
        return confined(quest.root, rel, field="run_id")
    except Invalid as exc:  # a planted link under .ds/runs
        raise Invalid(exc.message, code="invalid_run_id") from None


def write_prompt(quest: Quest, run_id: str, built: BuiltPrompt) -> Path:
    """Store ``built`` at ``<quest>/.ds/runs/<run_id>/prompt.md`` (atomically); returns the path."""
    path = prompt_path(quest, run_id)
    write_atomic(path, built.text.encode("utf-8"))
    return path


def default_system_prompt_path() -> Path:
    return skills.system_prompt_path()  # $DS_PROMPTS_DIR, else the repository's prompts/


def default_skills_dir() -> Path:
    return skills.skills_root()  # $DS_SKILLS_DIR, else the repository's skills/


# -- blocks -------------------------------------------------------------------------------


class _Block:
    """A block's heading and its full content as items, cut to a budget on demand.

    ``keep`` says which end survives a cut: ``head`` (the first items) or ``tail``
    (the newest, for the conversation). ``unit`` names the items in the marker.
    """

    def __init__(self, name: str, heading: str, items: list[str], keep: str, unit: str, hint: str = "") -> None:
        self.name, self.heading, self.items, self.keep, self.unit, self.hint = name, heading, items, keep, unit, hint
        self._head = f"## {heading}\n\n" if heading else ""

    def fit(self, budget: int) -> tuple[str, bool]:
        """``(text, truncated)`` with ``len(text) <= budget``."""
        full = self._head + "\n".join(self.items)
        if len(full) <= budget:
            return full, False
        total = len(self.items)
        marker_room = len(self._marker(total, total, budget)) + 1
        room = budget - len(self._head) - marker_room
        order = self.items if self.keep == "head" else reversed(self.items)
        kept: list[str] = []
        whole = used = 0
        for item in order:
            cost = len(item) + (1 if kept else 0)
            if used + cost > room:
                left = room - used - (1 if kept else 0)
                if left >= _MIN_PARTIAL:  # the item that does not fit: show the part that does
                    kept.append(item[: left - 1] + "…" if self.keep == "head" else "…" + item[-(left - 1) :])
                break
            kept.append(item)
            whole += 1
            used += cost
        if self.keep == "tail":
            kept.reverse()
        marker = self._marker(total - whole, total, budget)
        body = [marker, *kept] if self.keep == "tail" else [*kept, marker]
        return (self._head + "\n".join(body))[:budget], True

    def _marker(self, omitted: int, total: int, budget: int) -> str:
        where = "older" if self.keep == "tail" else "later"
        hint = f"; {self.hint}" if self.hint else ""
        return f"[… truncated: {omitted} of {total} {self.unit} ({where} ones) cut or left out to fit {budget} chars{hint} …]"


def _total(rendered: Mapping[str, tuple[str, bool]]) -> int:
    return sum(len(text) for text, _ in rendered.values()) + 2 * (len(rendered) - 1) + 1


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _runtime(i: PromptInputs, skill: str, reason: str) -> list[str]:
    status, artifacts = i.status, i.artifacts
    worktree = f" (worktree `{artifacts.active_worktree}`)" if artifacts.active_worktree else ""
    return [
        f"- DS_HOME: `{i.home}`",
        f"- quest: `{i.quest_id}` \"{_one_line(status.title, 200)}\", status {status.status}",
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
            f"- analysis campaign `{campaign.campaign_id}` \"{_one_line(campaign.title, 120)}\": "
            f"{campaign.done}/{len(campaign.slices)} slices recorded"
        )
    lines += _open_requests(i.interactions)
    lines += _sessions(i.bash_sessions)
    decisions = a.recent.get("decision", [])[-3:]
    for artifact_id in reversed(decisions):
        p = a.records[artifact_id].payload
        text = p.get("verdict") or p.get("title") or p.get("summary") or ""
        action = f" -> {p['action']}" if p.get("action") else ""
        lines.append(f"- decision `{artifact_id}`: {_one_line(str(text), 160)}{action}: {_one_line(str(p.get('reason', '')), 200)}")
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
        f"- latest main experiment `{run.run}` \"{_one_line(run.title, 120)}\": `{run.primary_metric}` = "
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
        lines.append(f"  - `{iid}` {r.kind}: {_one_line(r.message, 300)}" + (f" (options: {options})" if options else ""))
    return lines


def _sessions(state: BashSessionsState) -> list[str]:
    running = [s for s in islice(reversed(state.sessions.values()), _SCAN) if s.status == "running"]
    if not running:
        return []
    lines = [f"- shell sessions running: {len(running)}" + ("+" if len(state.sessions) > _SCAN else "")]
    for s in running[:5]:
        progress = f"; progress {_one_line(str(s.progress), 160)}" if s.progress else ""
        lines.append(f"  - `{s.id}` `{_one_line(s.command, 160)}` ({s.lines} lines{progress})")
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
        lines.append(f"- [{item.scope} {item.kind}, {item.why}] `{item.id}` {_one_line(item.title, 200)}: `{item.path}`")
        if item.excerpt:
            lines.append(f"  {_one_line(item.excerpt, _EXCERPT)}")
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
    return f"- [{m.ts}] {who}: {_one_line(m.text, limit)}"


def _outbound_line(r: InteractionRecord, limit: int) -> str:
    return f"- [{r.ts}] you ({r.kind}, `{r.interaction_id}`, {r.status}): {_one_line(r.message, limit)}"


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


def _pull_memory(mem: MemoryContext, skill: str, terms: tuple[str, ...], cfg: PromptConfig) -> tuple[tuple[MemoryItem, ...], str]:
    """Cards matching the message's words first, then the stage plan's (no repeats)."""
    items: list[MemoryItem] = []
    seen: set[str] = set()
    try:
        _pull_into(items, seen, mem, skill, terms, cfg)
    except ServiceError as exc:  # a busy or broken index must not stop the turn: say so instead
        return tuple(items), f"memory was not fully read: {exc.message} ({exc.code})"
    return tuple(items), ""


def _pull_into(
    items: list[MemoryItem], seen: set[str], mem: MemoryContext, skill: str, terms: tuple[str, ...], cfg: PromptConfig
) -> None:
    if terms and cfg.memory_search_limit:
        found = search(mem, SearchCards(query=" ".join(terms), scope="both", limit=cfg.memory_search_limit))
        for hit in found.results:
            seen.add(hit.id)
            items.append(MemoryItem(scope=hit.scope, kind=hit.kind, id=hit.id, title=hit.title, path=hit.path,
                                    why="search", excerpt=hit.snippet))  # fmt: skip
    if cfg.memory_per_kind:
        plan = []
        for step in pull_for_stage(mem, skill, per_kind=cfg.memory_per_kind):
            for c in step["cards"]:
                if c.id not in seen:
                    seen.add(c.id)
                    plan.append(c)
        bodies = _bodies(mem, plan)
        for c in plan:
            items.append(MemoryItem(scope=c.scope, kind=c.kind, id=c.id, title=c.title, path=c.path, why="plan",
                                    excerpt=_one_line(bodies.get((c.scope, c.id), ""), _EXCERPT)))  # fmt: skip


def _bodies(mem: MemoryContext, infos: list[Any]) -> dict[tuple[str, str], str]:
    """The bodies of these cards (own quest and global ones), one lent state per store."""
    out: dict[tuple[str, str], str] = {}
    for scope in ("quest", "global"):
        wanted = [c.id for c in infos if c.scope == scope and not c.read_only]
        if wanted:
            with mem.store(scope).lent_state() as state:
                for cid in wanted:
                    card = state.cards.get(cid)
                    if card is not None:
                        out[(scope, cid)] = card.body
    return out


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def _signed(value: Any) -> str:
    return f"{value:+.6g}"


_STYLE = """\
- Work first, then report: send `progress` when a real step ends (a run started or finished, a result recorded), \
not for every tool call, and never the same update twice.
- Keep messages short: what happened, the numbers, the paths to the evidence, what you do next.
- Ask only when the choice is the user's (scope, budget, a risky or irreversible step): one decision_request with \
options and your recommendation, then continue with work that does not depend on the answer.
- Answer in the user's language. Never report a result you have not recorded; say plainly when something failed.
- Before ending the turn, record what you learned (`memory.write`) and what you decided (`artifact.record`)."""
