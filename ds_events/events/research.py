"""Events of the `research` domain: ideas and their lineage, and which branch the agent
works on.

- :class:`IdeaSubmitted`: an idea was created (on its own ``idea/<quest>-<id>`` branch,
  numbered, with the branch it grows from and why), recorded as a candidate (no branch
  yet) or revised in place. The branch and worktree themselves are recorded by the
  ``git.branch_prepared`` event appended in the same batch.
- :class:`BranchActivated`: an existing branch became the agent's workspace again (its
  worktree made, if it had none), optionally promoted to the research head.

Git side effects happen once in the service; replay rebuilds the views from these.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from .base import Event

__all__ = [
    "IdeaSubmitted", "BranchActivated", "Foundation", "IdeaDetails", "IdeaText", "LineageIntent", "FoundationKind",
    "SubmissionMode", "EVENTS",
]  # fmt: skip

LineageIntent = Literal["continue_line", "branch_alternative"]
SubmissionMode = Literal["line", "candidate"]
FoundationKind = Literal["current_head", "baseline", "idea", "run", "branch"]


class Foundation(TypedDict):
    """What an idea branch starts from, resolved (``IdeaSubmitted.foundation_ref``): the
    kind of foundation and the ref the caller named, the branch it stands for and a
    label for people; the id behind it under its own name for an idea, a run or a
    baseline (stored before ``label``)."""

    kind: FoundationKind
    ref: str
    branch: str
    idea_id: NotRequired[str]
    run_id: NotRequired[str]
    baseline_id: NotRequired[str]
    label: str


class IdeaDetails(TypedDict, total=False):
    """The optional facts of an idea that only its listings show; a key is present only
    when the caller gave it."""

    selection_scores: dict[str, Any]
    mechanism_family: str
    change_layer: str
    source_lens: str
    source_candidate_id: str  # the candidate idea this one promotes


class IdeaText(TypedDict):
    """The idea in words, as the caller wrote it: what ``submit_idea`` takes and
    :class:`IdeaSubmitted` stores under the same names (a revision replaces all of it)."""

    problem: str
    hypothesis: str
    mechanism: str
    method_brief: str
    expected_gain: str
    decision_reason: str
    foundation_reason: str
    risks: list[str]
    evidence_paths: list[str]
    draft_markdown: str


class IdeaSubmitted(Event, tag="research.idea_submitted", kw_only=True):
    """An idea was submitted: ``mode`` create (``submission_mode`` line: a new branch;
    candidate: no branch yet) or revise (the same idea, rewritten)."""

    idea_id: str
    title: str
    mode: Literal["create", "revise"] = "create"
    submission_mode: SubmissionMode = "line"
    branch: str | None = None  # idea/<quest>-<idea_id>; None for a candidate
    branch_no: str | None = None  # "001", "002" ... in the order idea branches were made
    worktree: str | None = None  # relative to the quest root
    parent_branch: str | None = None  # the branch the idea grows from
    lineage_intent: LineageIntent | None = None
    # A Foundation (a plain object on the wire: its schema is pinned in event_tags.json).
    foundation_ref: dict[str, Any] = {}
    foundation_reason: str = ""
    next_target: str = "experiment"
    problem: str = ""
    hypothesis: str = ""
    mechanism: str = ""
    method_brief: str = ""
    expected_gain: str = ""
    decision_reason: str = ""
    risks: list[str] = []
    evidence_paths: list[str] = []
    draft_markdown: str = ""
    details: dict[str, Any] = {}  # IdeaDetails (a plain object on the wire, as foundation_ref)


class BranchActivated(Event, tag="research.branch_activated", kw_only=True):
    """An existing branch became the workspace (``worktree``, relative to the quest root)."""

    branch: str
    worktree: str | None = None
    worktree_created: bool = False
    idea_id: str | None = None
    run_id: str | None = None  # the branch's latest main experiment, if any
    anchor: str = ""  # the stage the quest moved to ("" when unchanged)
    promote_to_head: bool = False
    activated_by: str = "branch"  # branch | idea_id | run_id | checkout


EVENTS = (IdeaSubmitted, BranchActivated)
