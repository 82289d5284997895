"""``activate_branch`` of the `artifact` namespace: an existing branch becomes the
agent's workspace again (a worktree made for it if it has none, undone if the event
does not reach the log), optionally the research head; the quest moves to the stage
its state calls for. The ``git`` tool's checkout goes through here too, without the
stage move.

Error codes: ``campaign_active``, ``unknown_branch``, ``unknown_idea``,
``idea_has_no_branch``, ``unknown_run``, ``missing_fields``, ``invalid_anchor``,
``baseline_gate_closed``, ``worktree_missing``, ``worktree_exists``.
"""

from __future__ import annotations

import shutil

import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.research import BranchActivated
from ds_events.home import Quest
from ds_events.paths import confined
from ds_events.services.quest.commands import ANCHORS
from ds_events.services.research.batch import append_batch
from ds_events.services.research.commands import ActivateBranch, ActivateBranchResult
from ds_events.services.research.lineage import baseline_gate, branch_kind_of, has_branch, idea_on
from ds_events.store import StoreTransaction
from projections.artifacts import State as ArtifactsState
from projections.research import State as ResearchState, idea_paths

__all__ = ["activate_branch"]

_ANCHOR_ALIASES = {"analysis": "analysis-campaign"}


def activate_branch(
    quest: Quest, cmd: ActivateBranch, *, activated_by: str | None = None, anchor_change: bool = True
) -> ActivateBranchResult:
    """Make an existing branch the workspace again. ``activated_by="checkout"`` and
    ``anchor_change=False`` serve the ``git`` tool's checkout."""
    research, artifacts = quest.state("research"), quest.state("artifacts")
    if research.active_campaign_id is not None:
        raise Conflict(
            f"analysis campaign {research.active_campaign_id} is still open: record its remaining slices first",
            code="campaign_active", campaign_id=research.active_campaign_id,
        )  # fmt: skip
    repo = quest.repo()
    branch, by = _activation_target(repo, research, artifacts, cmd)
    kind = branch_kind_of(branch)
    if kind != "paper" and baseline_gate(artifacts) == "pending" and anchor_change:
        raise Conflict("activate_branch needs a confirmed or waived baseline first", code="baseline_gate_closed")
    idea = idea_on(research, branch)
    # An idea's main runs are recorded on their own run/ branches: activating the idea's
    # branch finds them by its idea id too (so "auto" moves on to the decision).
    idea_key = idea.submitted.idea_id if idea else None
    runs = [r for r in artifacts.runs.values() if r.branch == branch or (idea_key is not None and r.idea_id == idea_key)]
    latest_run = max(runs, key=lambda r: r.seq) if runs else None
    idea_id = idea.submitted.idea_id if idea else (latest_run.idea_id if latest_run else None)
    next_anchor = _activation_anchor(cmd.anchor, kind, bool(idea_id), latest_run is not None) if anchor_change else ""
    recorded = research.worktrees.get(branch) or (artifacts.branches[branch].worktree if branch in artifacts.branches else None)
    with git_ops.Rollback() as undo:
        worktree, created = _ensure_worktree(quest, repo, branch, recorded, cmd.create_worktree_if_missing, undo)

        def decide(txn: StoreTransaction) -> list[Event]:
            if quest.state("research").active_campaign_id is not None:
                raise Conflict("an analysis campaign opened meanwhile: record its slices first", code="campaign_active")
            batch: list[Event] = [BranchActivated(
                branch=branch, worktree=worktree, worktree_created=created, idea_id=idea_id,
                run_id=latest_run.run if latest_run else None, anchor=next_anchor,
                promote_to_head=cmd.promote_to_head, activated_by=activated_by or by,
            )]  # fmt: skip
            previous = quest.state("status").anchor
            if next_anchor and next_anchor != previous:
                batch.append(QuestAnchorChanged(anchor=next_anchor, previous=previous, reason=f"branch {branch} activated"))
            return batch

        stored = append_batch(quest, undo, decide)
    page, draft = idea_paths(idea_id) if idea_id else (None, None)
    return ActivateBranchResult(
        ok=True, branch=branch, branch_kind=kind, worktree=worktree,
        worktree_root=str(quest.root / worktree) if worktree else str(quest.root), worktree_created=created,
        idea_id=idea_id, latest_main_run_id=latest_run.run if latest_run else None,
        source_parent_branch=idea.submitted.parent_branch if idea else None,
        idea_md_path=str(quest.root / page) if page else None, idea_draft_path=str(quest.root / draft) if draft else None,
        workspace_mode=kind, next_anchor=next_anchor or quest.state("status").anchor,
        promote_to_head=cmd.promote_to_head, seq=stored[0].seq,
    )  # fmt: skip


# -- private helpers ----------------------------------------------------------------------


def _activation_target(
    repo: pygit2.Repository, research: ResearchState, artifacts: ArtifactsState, cmd: ActivateBranch
) -> tuple[str, str]:
    """The branch the command names, and by which argument."""
    if cmd.branch is not None:
        if not has_branch(repo, cmd.branch):
            raise NotFound(f"no branch {str(cmd.branch)[:250]!r} in the quest repository", code="unknown_branch",
                           branch=str(cmd.branch)[:250])  # fmt: skip
        return cmd.branch, "branch"
    if cmd.idea_id is not None:
        idea = research.ideas.get(cmd.idea_id)
        if idea is None:
            raise NotFound(f"no idea {cmd.idea_id!r} in this quest", code="unknown_idea", idea_id=cmd.idea_id)
        if idea.submitted.branch is None:
            raise Conflict(f"idea {cmd.idea_id!r} is a candidate without a branch: submit it with mode=create first",
                           code="idea_has_no_branch", idea_id=cmd.idea_id)  # fmt: skip
        return idea.submitted.branch, "idea_id"
    if cmd.run_id is not None:
        run = artifacts.runs.get(cmd.run_id)
        if run is None:
            raise NotFound(f"no main experiment {cmd.run_id!r} in this quest", code="unknown_run", run_id=cmd.run_id)
        return run.branch, "run_id"
    raise Invalid("say which branch: branch, idea_id or run_id", code="missing_fields", missing=["branch"])


def _activation_anchor(anchor: str | None, kind: str, has_idea: bool, has_result: bool) -> str:
    wanted = (anchor or "auto").strip().lower()
    if wanted == "auto":
        if kind == "paper":
            return "write"
        return "decision" if has_result else "experiment" if has_idea else "idea"
    wanted = _ANCHOR_ALIASES.get(wanted, wanted)
    if wanted not in ANCHORS:
        raise Invalid(f"unknown anchor {anchor!r}: use auto or one of {', '.join(ANCHORS)}", code="invalid_anchor")
    return wanted


def _ensure_worktree(
    quest: Quest, repo: pygit2.Repository, branch: str, recorded: str | None, create: bool, undo: git_ops.Rollback
) -> tuple[str | None, bool]:
    """The branch's worktree (relative), made now if it has none and ``create``."""
    if branch == "main" or (repo.head_is_detached is False and repo.head.shorthand == branch):
        return None, False  # the quest root itself
    for rel in [recorded, git_ops.worktree_path(branch)]:
        if rel is None:
            continue
        path = confined(quest.root, rel, field="worktree")
        if (path / ".git").is_file() and not path.is_symlink():
            return rel, False
    if not create:
        raise NotFound(f"branch {branch!r} has no worktree: pass create_worktree_if_missing=true",
                       code="worktree_missing", branch=branch)  # fmt: skip
    rel = git_ops.worktree_path(branch)
    path = confined(quest.root, rel, field="worktree")
    if path.exists() or path.is_symlink():
        raise Conflict(f"something is in the way at {rel}", code="worktree_exists", worktree=rel)
    name = git_ops.worktree_name(branch)
    if name in repo.list_worktrees():  # its directory is gone: forget it before adding it again
        repo.lookup_worktree(name).prune(True)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        repo.add_worktree(name, str(path), repo.branches.local[branch])
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise Conflict(f"could not check out {branch!r} at {rel}: {exc}", code="worktree_exists", worktree=rel) from None
    undo.add(_remove_worktree, quest, repo, branch, rel)
    return rel, True


def _remove_worktree(quest: Quest, repo: pygit2.Repository, branch: str, rel: str) -> None:
    path = quest.root / rel
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    try:
        repo.lookup_worktree(git_ops.worktree_name(branch)).prune(True)
    except (KeyError, pygit2.GitError):
        pass
