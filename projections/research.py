"""The `research` view: ideas and their lineage, the research head and the workspace,
the active analysis campaign, and a window of the conversation — what an agent needs
to pick up its work at the start of a turn.

A fold over the ``research.*`` events and the artifact and interaction events that move
the research line (a prepared or activated branch, a main experiment, a campaign and its
slices, messages both ways). Branch numbers are given to idea branches in the order they
were made ("001", "002" ...).

Materialises ``ideas/<idea_id>/idea.md`` (the idea as submitted, latest revision) and
``ideas/<idea_id>/draft.md`` (the agent's draft, or an outline to fill in).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
from msgspec.structs import replace

from ds_events.events import ConversationMessage, Event
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    BranchPrepared,
    MainExperimentRecorded,
)
from ds_events.events.interaction import InteractionReplied, InteractionSent
from ds_events.events.research import BranchActivated, IdeaSubmitted

from .base import Files, Projection

__all__ = [
    "State",
    "Idea",
    "CampaignProgress",
    "ConversationItem",
    "PROJECTION",
    "CONVERSATION_WINDOW",
    "format_branch_no",
    "idea_paths",
]

CONVERSATION_WINDOW = 200  # messages kept in the view; the log keeps them all


class Idea(msgspec.Struct, kw_only=True):
    """An idea as it stands: its latest submission (the event itself; a revision keeps the
    lineage the idea was created with, and its foundation_reason when it gives none),
    how often it was revised, and when it was created."""

    submitted: IdeaSubmitted
    revisions: int = 0
    created_seq: int = 0
    created_at: str = ""

    @property
    def updated_seq(self) -> int:
        return self.submitted.seq

    @property
    def updated_at(self) -> str:
        return self.submitted.ts


class CampaignProgress(msgspec.Struct, kw_only=True):
    campaign_id: str
    parent_branch: str
    slice_ids: list[str]
    done: list[str] = []

    @property
    def complete(self) -> bool:
        return all(s in self.done for s in self.slice_ids)


class ConversationItem(msgspec.Struct, kw_only=True):
    id: str
    seq: int
    ts: str
    role: str  # user | assistant | system
    source: str = ""
    content: str = ""
    kind: str = "message"  # message | interaction | reply
    interaction_id: str | None = None  # the agent's interaction, or the one a reply answers
    run_id: str | None = None


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    ideas: dict[str, Idea] = {}  # in submission order
    branch_numbers: dict[str, int] = {}  # idea branch -> its number
    worktrees: dict[str, str | None] = {}  # branch -> worktree (relative), as prepared or activated
    active_idea_id: str | None = None
    research_head_branch: str | None = None
    current_workspace_branch: str | None = None  # None: the quest root (main)
    current_workspace: str | None = None  # its worktree, relative to the quest root
    active_campaign_id: str | None = None
    campaigns: dict[str, CampaignProgress] = {}
    last_flow_type: str = ""
    activations: int = 0
    conversation: list[ConversationItem] = []  # the newest CONVERSATION_WINDOW, oldest first
    conversation_total: int = 0


def initial() -> State:
    return State()


def format_branch_no(number: int) -> str:
    """``7`` -> ``"007"``; from 1000 on the plain number."""
    return f"{number:03d}" if number < 1000 else str(number)


def idea_paths(idea_id: str) -> tuple[str, str]:
    """Where an idea's page and its draft are materialised (relative to the quest root)."""
    return f"ideas/{idea_id}/idea.md", f"ideas/{idea_id}/draft.md"


def apply(state: State, event: Event) -> State:
    # Records are replaced, never changed in place (the rule in projections.base).
    state.last_seq = event.seq
    match event:
        case ConversationMessage(role=role, content=content, source=source):
            _say(state, ConversationItem(id=event.id, seq=event.seq, ts=event.ts, role=role, source=source,
                                         content=content, run_id=event.run_id))  # fmt: skip
        case InteractionSent():
            _say(state, ConversationItem(id=event.id, seq=event.seq, ts=event.ts, role="assistant", source=event.actor,
                                         content=event.message, kind="interaction", interaction_id=event.interaction_id,
                                         run_id=event.run_id))  # fmt: skip
        case InteractionReplied():
            _say(state, ConversationItem(id=event.id, seq=event.seq, ts=event.ts, role="user", source=event.source,
                                         content=event.text, kind="reply", interaction_id=event.interaction_id))  # fmt: skip
        case IdeaSubmitted():
            _apply_idea(state, event)
        case BranchActivated():
            state.worktrees[event.branch] = event.worktree
            state.current_workspace_branch, state.current_workspace = event.branch, event.worktree
            if event.idea_id:
                state.active_idea_id = event.idea_id
            if event.promote_to_head:
                state.research_head_branch = event.branch
            state.active_campaign_id = None
            state.activations += 1
            state.last_flow_type = "branch_activation"
        case BranchPrepared():
            state.worktrees[event.branch] = event.worktree
            if event.activate:
                state.current_workspace_branch, state.current_workspace = event.branch, event.worktree
                state.last_flow_type = "prepare_branch"
        case MainExperimentRecorded(branch=branch):
            # The run's branch carries the line on: it is the head and the workspace now.
            state.research_head_branch = branch
            if state.current_workspace_branch != branch:
                state.current_workspace_branch = branch
                state.current_workspace = state.worktrees.get(branch)
            if event.idea_id:
                state.active_idea_id = event.idea_id
            state.last_flow_type = "main_experiment"
        case AnalysisCampaignCreated():
            ids = [str(s.get("slice_id", "")) for s in event.slices]
            for s in event.slices:
                state.worktrees[str(s.get("branch", ""))] = s.get("worktree")
            state.campaigns[event.campaign_id] = CampaignProgress(
                campaign_id=event.campaign_id, parent_branch=event.parent_branch, slice_ids=ids
            )
            state.active_campaign_id = event.campaign_id
            state.last_flow_type = "analysis_campaign"
        case AnalysisSliceRecorded():
            progress = state.campaigns.get(event.campaign_id)
            if progress is not None and event.slice_id not in progress.done:
                progress = replace(progress, done=[*progress.done, event.slice_id])
                state.campaigns[event.campaign_id] = progress
                if progress.complete and state.active_campaign_id == event.campaign_id:
                    state.active_campaign_id = None
    return state


def _apply_idea(state: State, event: IdeaSubmitted) -> None:
    old = state.ideas.get(event.idea_id)
    if event.mode == "revise" and old is not None:
        # The lineage stays what the idea was created with; the text is the new one.
        was = old.submitted
        kept = replace(
            event, branch=was.branch, branch_no=was.branch_no, worktree=was.worktree, parent_branch=was.parent_branch,
            lineage_intent=was.lineage_intent, foundation_ref=was.foundation_ref, submission_mode=was.submission_mode,
            foundation_reason=event.foundation_reason or was.foundation_reason,
        )  # fmt: skip
        state.ideas[event.idea_id] = replace(old, submitted=kept, revisions=old.revisions + 1)
    else:
        state.ideas[event.idea_id] = Idea(submitted=event, created_seq=event.seq, created_at=event.ts)
    if event.submission_mode == "candidate" and event.mode == "create":
        return
    state.active_idea_id = event.idea_id
    if event.mode == "create" and event.branch:
        if event.branch_no and event.branch_no.isdigit():
            state.branch_numbers[event.branch] = int(event.branch_no)
        state.worktrees[event.branch] = event.worktree
        state.research_head_branch = event.branch
        state.current_workspace_branch, state.current_workspace = event.branch, event.worktree
        state.active_campaign_id = None
        state.last_flow_type = "idea_submission"
    else:
        state.last_flow_type = "idea_revision"


def _say(state: State, item: ConversationItem) -> None:
    state.conversation.append(item)
    state.conversation_total += 1
    if len(state.conversation) > CONVERSATION_WINDOW:
        del state.conversation[: len(state.conversation) - CONVERSATION_WINDOW]


# -- render -----------------------------------------------------------------------------


def render(state: State) -> Files:
    files: Files = {}
    for idea in state.ideas.values():
        files.update(_idea_files(idea))
    return files


def render_changed(state: State, events: Iterable[Event]) -> Files:
    files: Files = {}
    for event in events:
        if isinstance(event, IdeaSubmitted) and event.idea_id in state.ideas:
            files.update(_idea_files(state.ideas[event.idea_id]))
    return files


def _idea_files(idea: Idea) -> Files:
    page, draft = idea_paths(idea.submitted.idea_id)
    return {page: _idea_page(idea).encode(), draft: _idea_draft(idea.submitted).encode()}


def _idea_page(record: Idea) -> str:
    idea = record.submitted
    foundation = idea.foundation_ref.get("label") or idea.foundation_ref.get("branch") or "-"
    lines = [
        f"# Idea {idea.idea_id}: {idea.title}",
        "",
        f"- branch: `{idea.branch}` (no. {idea.branch_no})" if idea.branch else "- branch: none yet (candidate)",
        f"- grows from: `{idea.parent_branch or '-'}` ({idea.lineage_intent or 'lineage not stated'})",
        f"- foundation: {foundation}" + (f" — {idea.foundation_reason}" if idea.foundation_reason else ""),
        f"- next: {idea.next_target}",
        f"- revisions: {record.revisions}",
        "",
    ]
    for heading, text in (
        ("Problem", idea.problem), ("Hypothesis", idea.hypothesis), ("Mechanism", idea.mechanism),
        ("Method", idea.method_brief), ("Expected gain", idea.expected_gain), ("Why this idea", idea.decision_reason),
    ):  # fmt: skip
        if text.strip():
            lines += [f"## {heading}", "", text.strip(), ""]
    for heading, items in (("Risks", idea.risks), ("Evidence", idea.evidence_paths)):
        if items:
            lines += [f"## {heading}", "", *[f"- {i}" for i in items], ""]
    return "\n".join(lines)


def _idea_draft(idea: IdeaSubmitted) -> str:
    if idea.draft_markdown.strip():
        text = idea.draft_markdown
        return text if text.endswith("\n") else text + "\n"
    return (
        f"# Draft: {idea.title}\n\n"
        "_No draft was submitted with this idea. Outline the change before the experiment:_\n\n"
        "## What changes in the code\n\n## How it is measured\n\n## What would prove it wrong\n"
    )


PROJECTION: Projection[State] = Projection(
    name="research",
    # 2: an Idea keeps its latest IdeaSubmitted instead of a copy of its fields.
    version=2,
    state_type=State,
    initial=initial,
    apply=apply,
    render=render,
    render_changed=render_changed,
)
