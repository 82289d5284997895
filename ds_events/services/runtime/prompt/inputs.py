"""What a turn's prompt is built from: the stage skill it uses, and the inputs gathered
from the quest (the one impure step).

:func:`select_skill` picks the skill from the projections; :func:`gather_inputs` (a
context manager) reads the quest's projection states, lent for the block rather than
copied (``Views.lend``), the cards of the stage memory plan and a memory search with the
words of the user's message, which context files and skill files exist, and
``config.yaml``'s ``prompt`` section, into one :class:`PromptInputs`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ds_events.config import PromptConfig
from ds_events.errors import ServiceError
from ds_events.home import Quest
from ds_events.memory.store import MemoryContext
from ds_events.memory.text import STOPWORDS, words
from ds_events.services.memory.cards import search
from ds_events.services.memory.commands import CardInfo, SearchCards
from ds_events.services.memory.plan import pull_for_stage
from ds_events.services.runtime import skills as skills
from projections.artifacts import State as ArtifactsState
from projections.bash_sessions import State as BashSessionsState
from projections.interactions import InboundItem, State as InteractionsState
from projections.status import StatusState

from .budget import one_line
from .files import check_run_id

__all__ = [
    "STAGE_SKILLS",
    "SKILLS",
    "NAMESPACES",
    "CONTEXT_FILES",
    "EXCERPT",
    "MemoryItem",
    "PromptInputs",
    "select_skill",
    "message_terms",
    "gather_inputs",
    "default_system_prompt_path",
    "default_skills_dir",
]

# The anchors a turn may work in with their own skill; ``decision`` is cross-cutting.
STAGE_SKILLS = skills.STAGE_SKILLS
SKILLS = skills.SKILL_NAMES
NAMESPACES = skills.TOOL_NAMESPACES
CONTEXT_FILES = ("brief.md", "plan.md", "status.md", "SUMMARY.md", "MEMORY.md", "interactions/open_requests.md")
_MAX_TERMS = 12
EXCERPT = 240  # characters of a card shown under its title


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


def default_system_prompt_path() -> Path:
    return skills.system_prompt_path()  # $DS_PROMPTS_DIR, else the repository's prompts/


def default_skills_dir() -> Path:
    return skills.skills_root()  # $DS_SKILLS_DIR, else the repository's skills/


# -- private helpers ---------------------------------------------------------------


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
            for c in step.cards:
                if c.id not in seen:
                    seen.add(c.id)
                    plan.append(c)
        bodies = _bodies(mem, plan)
        for c in plan:
            items.append(MemoryItem(scope=c.scope, kind=c.kind, id=c.id, title=c.title, path=c.path, why="plan",
                                    excerpt=one_line(bodies.get((c.scope, c.id), ""), EXCERPT)))  # fmt: skip


def _bodies(mem: MemoryContext, infos: list[CardInfo]) -> dict[tuple[str, str], str]:
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
