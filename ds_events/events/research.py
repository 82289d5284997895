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

from typing import Any, Literal

from .base import Event

__all__ = ["IdeaSubmitted", "BranchActivated", "LineageIntent", "EVENTS"]

LineageIntent = Literal["continue_line", "branch_alternative"]


class IdeaSubmitted(Event, tag="research.idea_submitted", kw_only=True):
    """An idea was submitted: ``mode`` create (``submission_mode`` line: a new branch;
    candidate: no branch yet) or revise (the same idea, rewritten)."""

    idea_id: str
    title: str
    mode: Literal["create", "revise"] = "create"
    submission_mode: Literal["line", "candidate"] = "line"
    branch: str | None = None  # idea/<quest>-<idea_id>; None for a candidate
    branch_no: str | None = None  # "001", "002" ... in the order idea branches were made
    worktree: str | None = None  # relative to the quest root
    parent_branch: str | None = None  # the branch the idea grows from
    lineage_intent: LineageIntent | None = None
    foundation_ref: dict[str, Any] = {}  # {"kind", "ref", "branch", "label", ...}
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
    details: dict[str, Any] = {}  # selection_scores, mechanism_family, change_layer, source_lens, source_candidate_id


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
