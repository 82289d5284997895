"""What every research verb asks of the research line, read from the views and the
quest's refs: the branch the agent works on, a branch's kind, whether a branch exists,
whether the baseline gate lets ideas in, and the idea that lives on a branch.

Reads only; nothing here appends.
"""

from __future__ import annotations

from typing import Literal

import pygit2

from ds_events.artifacts import git as git_ops
from projections.artifacts import State as ArtifactsState
from projections.research import Idea, State as ResearchState

__all__ = ["workspace_branch", "branch_kind_of", "has_branch", "baseline_gate", "idea_on", "BaselineGate"]

BaselineGate = Literal["confirmed", "waived", "pending"]


def workspace_branch(research: ResearchState, artifacts: ArtifactsState) -> str:
    """The branch the agent works on: the research view's workspace, else the active one."""
    return research.current_workspace_branch or artifacts.active_branch or "main"


def branch_kind_of(branch: str | None) -> str:
    """idea | run | analysis | paper | main | other, from the branch name's scheme."""
    if not branch or branch == "main":
        return "main"
    head = branch.split("/", 1)[0]
    return head if head in git_ops.BRANCH_KINDS else "other"


def has_branch(repo: pygit2.Repository, name: object) -> bool:
    """Whether ``name`` is a local branch; any value may be asked (a huge or malformed
    name, or something that is not a string, is simply not one)."""
    if not isinstance(name, str) or not name or len(name) > 250 or "\x00" in name:
        return False
    try:
        return repo.branches.local.get(name) is not None
    except (ValueError, KeyError, pygit2.GitError, pygit2.InvalidSpecError):
        return False


def baseline_gate(artifacts: ArtifactsState) -> BaselineGate:
    """confirmed | waived | pending: whether ideas may be submitted yet."""
    if artifacts.baseline_gate == "confirmed":
        return "confirmed"
    if artifacts.baseline_gate == "waived":
        return "waived"
    return "confirmed" if artifacts.confirmed_baseline is not None else "pending"


def idea_on(research: ResearchState, branch: str) -> Idea | None:
    """The newest idea whose branch is ``branch``."""
    return next((i for i in reversed(research.ideas.values()) if i.submitted.branch == branch), None)
