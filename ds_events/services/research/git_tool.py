"""The ``git`` tool of the `artifact` namespace: status, commit, branch, checkout, log,
show, diff — on the agent's workspace (the worktree of the branch it works on, or the
quest root), confined to the quest repository and its worktrees.

Reads (status, log, show, diff) go through pygit2 and append nothing. Changes go
through the existing commands, so each is recorded by the event they already emit:
``commit`` is a checkpoint of the workspace (``git.checkpointed``, same hygiene);
``branch`` prepares a branch of our naming scheme ``<kind>/<name>``
(``git.branch_prepared``), with a worktree when ``checkout_new_branch``; ``checkout``
makes an existing branch the workspace (``research.branch_activated``) — it never moves
the HEAD of a checkout that exists, so no one's uncommitted work is overwritten.

Error codes: ``invalid_git_action``, ``missing_fields``, ``unknown_ref``,
``invalid_limit``, ``checkout_needs_branch``, plus those of :mod:`.git` and
:mod:`.branches` (``activate_branch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pygit2

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.home import Quest
from ds_events.services.artifacts import checkpoints as git_service
from ds_events.services.artifacts.commands import Checkpoint, PrepareBranch, RenderGitGraph
from ds_events.services.research.branches import activate_branch
from ds_events.services.research.commands import GIT_ACTIONS, ActivateBranch, Git, GitResult
from ds_events.services.research.lineage import has_branch, workspace_branch

__all__ = ["git", "changed_files", "ChangedFiles", "FileChange"]


class FileChange(TypedDict):
    """One file of a diff, as ``git(action="diff")`` lists it."""

    path: str
    old_path: str
    status: str  # added | deleted | modified | renamed | copied | typechange | changed
    additions: int
    deletions: int
    binary: bool | None  # None when the bindings could not tell


class ChangedFiles(TypedDict):
    """What :func:`changed_files` answers: the files ``head`` changed against ``base``."""

    base: str | None
    head: str
    files: list[FileChange]
    file_count: int
    truncated: bool


class _DiffFiles(TypedDict):
    files: list[FileChange]
    file_count: int
    patch: str | None
    truncated: bool

_MAX_LOG = 500
_MAX_PATCH_BYTES = 200_000  # diff text returned per call; the rest is cut (``truncated``)
_MAX_STATUS = 500  # changed paths listed by status
_STATUS_WORDS = (
    (pygit2.enums.FileStatus.INDEX_NEW, "added"), (pygit2.enums.FileStatus.INDEX_MODIFIED, "staged"),
    (pygit2.enums.FileStatus.INDEX_DELETED, "staged_deleted"), (pygit2.enums.FileStatus.INDEX_RENAMED, "renamed"),
    (pygit2.enums.FileStatus.WT_NEW, "untracked"), (pygit2.enums.FileStatus.WT_MODIFIED, "modified"),
    (pygit2.enums.FileStatus.WT_DELETED, "deleted"), (pygit2.enums.FileStatus.CONFLICTED, "conflicted"),
)  # fmt: skip
_DELTA_WORDS = {
    pygit2.enums.DeltaStatus.ADDED: "added", pygit2.enums.DeltaStatus.DELETED: "deleted",
    pygit2.enums.DeltaStatus.MODIFIED: "modified", pygit2.enums.DeltaStatus.RENAMED: "renamed",
    pygit2.enums.DeltaStatus.COPIED: "copied", pygit2.enums.DeltaStatus.TYPECHANGE: "typechange",
}  # fmt: skip


def git(quest: Quest, cmd: Git) -> GitResult:
    """Run one git action on the workspace; see the module docstring."""
    action = cmd.action.strip().lower()
    if action not in GIT_ACTIONS:
        raise Invalid(f"unknown git action {cmd.action!r}: use {', '.join(GIT_ACTIONS)}", code="invalid_git_action",
                      allowed=list(GIT_ACTIONS))  # fmt: skip
    branch, root = _workspace(quest)
    repo = pygit2.Repository(str(root))
    seq: int | None = None
    if action == "status":
        result = _status(repo, root, branch)
    elif action == "log":
        result = _log(repo, cmd, branch)
    elif action == "show":
        target = cmd.sha or cmd.ref or cmd.head
        if not target:
            raise Invalid("show needs sha (or ref)", code="missing_fields", missing=["sha"])
        result = _commit_detail(_commit(repo, target), cmd.path)
    elif action == "diff":
        result = _diff(repo, cmd)
    elif action == "commit":
        result, seq = _commit_workspace(quest, cmd, branch)
    elif action == "branch":
        result, seq = _branch(quest, cmd, branch)
    elif action == "graph":  # DeepScientist's graph action: the same snapshot as render_git_graph
        drawn = git_service.render_git_graph(quest, RenderGitGraph(max_commits=min(max(cmd.limit, 1), 2000)))
        result, seq = {"graph": drawn.graph, "json_path": drawn.json_path, "svg_path": drawn.svg_path}, drawn.seq
    else:
        result, seq = _checkout(quest, cmd, branch)
    branch, root = _workspace(quest)
    repo = pygit2.Repository(str(root))
    return GitResult(ok=True, action=action, quest_id=quest.id, repo=str(root), current_ref=branch,
                     head=_head(repo), result=result, seq=seq)  # fmt: skip


# -- the workspace ------------------------------------------------------------------------


def changed_files(repo: pygit2.Repository, base: str | None, head: str) -> ChangedFiles:
    """What ``git(action="diff")`` lists, without the patch: the files ``head`` changed
    against ``base`` (``base`` None: the commit ``head`` against its parent).
    Returns base, head, files (path, old_path, status, additions, deletions, binary),
    file_count, truncated."""
    commit = _commit(repo, head)
    if base is None:
        parent = commit.parents[0] if commit.parents else None
        diff = _against_parent(commit)
        base = str(parent.id) if parent is not None else None
    else:
        diff = _commit(repo, base).tree.diff_to_tree(commit.tree)
    files = _files(diff, None, patch=False)
    return {"base": base, "head": str(commit.id), "files": files["files"], "file_count": files["file_count"],
            "truncated": files["truncated"]}  # fmt: skip


def _workspace(quest: Quest) -> tuple[str, Path]:
    """The branch the agent works on and the directory checked out for it."""
    state, artifacts = quest.state("research"), quest.state("artifacts")
    branch = workspace_branch(state, artifacts)
    rel = state.current_workspace if state.current_workspace_branch == branch else None
    if rel is None and branch in artifacts.branches and branch == artifacts.active_branch:
        rel = artifacts.active_worktree
    if rel is not None:
        path = quest.root / rel
        if (path / ".git").is_file() and not path.is_symlink():
            return branch, path
    # No worktree of its own: the quest root, on whatever it has checked out (main).
    repo = quest.repo()
    return ("main" if repo.head_is_detached or repo.head_is_unborn else repo.head.shorthand), quest.root


def _head(repo: pygit2.Repository) -> str | None:
    try:
        return str(repo.head.target)
    except pygit2.GitError:
        return None


def _against_parent(commit: pygit2.Commit) -> pygit2.Diff:
    """A commit against its first parent (a root commit: against the empty tree)."""
    parent = commit.parents[0] if commit.parents else None
    return parent.tree.diff_to_tree(commit.tree) if parent is not None else commit.tree.diff_to_tree(swap=True)


def _commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit:
    if not isinstance(ref, str) or not ref or ref.startswith("-") or "\x00" in ref or len(ref) > 250:
        raise NotFound(f"{ref!r} is not a branch or commit of the quest repository", code="unknown_ref", ref=str(ref)[:250])
    try:
        found = repo.branches.local.get(ref)
        obj = found.peel(pygit2.Commit) if found is not None else repo.revparse_single(ref).peel(pygit2.Commit)
    except (KeyError, ValueError, TypeError, pygit2.GitError, pygit2.InvalidSpecError):
        raise NotFound(f"{ref!r} is not a branch or commit of the quest repository", code="unknown_ref", ref=ref[:250]) from None
    return obj


# -- reads --------------------------------------------------------------------------------


def _status(repo: pygit2.Repository, root: Path, branch: str) -> dict[str, Any]:
    changes = []
    for path, flags in sorted(repo.status().items()):
        if flags & pygit2.enums.FileStatus.IGNORED:
            continue
        words = [w for f, w in _STATUS_WORDS if flags & f]
        changes.append({"path": path, "status": words[0] if len(words) == 1 else "+".join(words) or "unknown"})
    return {
        "repo": str(root),
        "branch": branch,
        "head": _head(repo),
        "clean": not changes,
        "changed_count": len(changes),
        "changes": changes[:_MAX_STATUS],
        "truncated": len(changes) > _MAX_STATUS,
    }


def _log(repo: pygit2.Repository, cmd: Git, branch: str) -> dict[str, Any]:
    if isinstance(cmd.limit, bool) or not 1 <= cmd.limit <= _MAX_LOG:
        raise Invalid(f"limit must be an integer from 1 to {_MAX_LOG}", code="invalid_limit", field="limit")
    ref = cmd.ref or cmd.branch or branch
    head = _commit(repo, ref)
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    if cmd.base:
        walker.hide(_commit(repo, cmd.base).id)
    commits: list[dict[str, Any]] = []
    for commit in walker:
        if len(commits) == cmd.limit:
            return {"ref": ref, "base": cmd.base, "commits": commits, "count": len(commits), "truncated": True}
        commits.append(_summary(commit))
    return {"ref": ref, "base": cmd.base, "commits": commits, "count": len(commits), "truncated": False}


def _diff(repo: pygit2.Repository, cmd: Git) -> dict[str, Any]:
    if cmd.sha:
        return _commit_detail(_commit(repo, cmd.sha), cmd.path)
    if cmd.base and cmd.head:
        base, head = _commit(repo, cmd.base), _commit(repo, cmd.head)
        diff = base.tree.diff_to_tree(head.tree)
        return {"base": str(base.id), "head": str(head.id), **_files(diff, cmd.path, patch=True)}
    raise Invalid("diff needs sha (a commit against its parent) or base and head", code="missing_fields",
                  missing=["sha"] if not (cmd.base or cmd.head) else ["head" if cmd.base else "base"])  # fmt: skip


def _summary(commit: pygit2.Commit) -> dict[str, Any]:
    return {
        "sha": str(commit.id),
        "short_sha": str(commit.id)[:7],
        "subject": commit.message.splitlines()[0] if commit.message else "",
        "author": commit.author.name,
        "time": commit.commit_time,
        "parents": [str(p) for p in commit.parent_ids],
    }


def _commit_detail(commit: pygit2.Commit, path: str | None) -> dict[str, Any]:
    return {**_summary(commit), "message": commit.message, **_files(_against_parent(commit), path, patch=True)}


def _files(diff: pygit2.Diff, path: str | None, *, patch: bool) -> _DiffFiles:
    files: list[FileChange] = []
    text: list[str] = []
    size, cut = 0, False
    for p in diff:
        if p is None:  # the bindings may yield no patch for a delta they cannot load
            continue
        name = p.delta.new_file.path
        if path is not None and name != path and p.delta.old_file.path != path:
            continue
        _ctx, additions, deletions = p.line_stats
        files.append({"path": name, "old_path": p.delta.old_file.path, "status": _DELTA_WORDS.get(p.delta.status, "changed"),
                      "additions": additions, "deletions": deletions, "binary": p.delta.is_binary})  # fmt: skip
        if patch and not cut:
            chunk = p.text or ""
            if size + len(chunk) > _MAX_PATCH_BYTES:
                cut = True
            else:
                text.append(chunk)
                size += len(chunk)
    return {"files": files, "file_count": len(files), "patch": "".join(text) if patch else None, "truncated": cut}


# -- changes ------------------------------------------------------------------------------


def _commit_workspace(quest: Quest, cmd: Git, branch: str) -> tuple[dict[str, Any], int | None]:
    message = (cmd.message or "").strip() or "Update workspace"
    before = _head(pygit2.Repository(str(_workspace(quest)[1])))
    try:
        done = git_service.checkpoint(quest, Checkpoint(message=message, allow_empty=cmd.allow_empty, branch=branch))
    except Conflict as exc:
        if exc.code != "nothing_to_commit":
            raise
        return {"committed": False, "branch": branch, "head": before, "before_head": before, "after_head": before,
                "subject": message, "reason": "nothing to commit: the tree did not change"}, None  # fmt: skip
    return {
        "committed": True, "branch": done.branch, "sha": done.sha, "short_sha": done.sha[:7], "subject": message,
        "head": done.sha, "before_head": before, "after_head": done.sha, "parents": [done.parent],
        "files": done.files, "skipped": done.skipped, "worktree": done.worktree,
    }, done.seq  # fmt: skip


def _branch(quest: Quest, cmd: Git, branch: str) -> tuple[dict[str, Any], int | None]:
    name = cmd.branch
    if not name:
        raise Invalid("branch needs the new branch's name, <kind>/<name>", code="missing_fields", missing=["branch"])
    kind = name.split("/", 1)[0] if "/" in name else ""
    if kind not in git_service.BRANCH_KINDS:
        raise Invalid(f"invalid branch name {name!r}: use <kind>/<name> with kind one of {', '.join(git_service.BRANCH_KINDS)}",
                      code="invalid_branch_name", branch=name)  # fmt: skip
    start = cmd.create_from or branch
    if len(start) > 250 or "\x00" in start:
        raise NotFound("create_from is not a branch or commit of the quest repository", code="unknown_start_point")
    done = git_service.prepare_branch(quest, PrepareBranch(
        branch=name, branch_kind=kind, create_worktree=cmd.checkout_new_branch, start_point=start,
    ))  # fmt: skip
    return {
        "created": True, "branch": done.branch, "branch_kind": done.branch_kind, "start_sha": done.start_sha,
        "create_from": done.start_point, "worktree": done.worktree, "worktree_root": done.worktree_path,
        "before_branch": branch, "after_branch": done.branch if done.active else branch, "target_ref": done.branch,
    }, done.seq  # fmt: skip


def _checkout(quest: Quest, cmd: Git, branch: str) -> tuple[dict[str, Any], int | None]:
    target = cmd.branch or cmd.ref
    if not target:
        if cmd.sha or cmd.head:
            raise Invalid("checkout works on branches: the workspace never detaches; use show or diff to read a commit",
                          code="checkout_needs_branch")  # fmt: skip
        raise Invalid("checkout needs branch (or ref)", code="missing_fields", missing=["branch"])
    if not has_branch(quest.repo(), target):
        raise NotFound(f"no branch {target[:250]!r} in the quest repository: checkout works on branches",
                       code="unknown_branch", branch=target[:250])  # fmt: skip
    done = activate_branch(quest, ActivateBranch(branch=target, anchor=None), activated_by="checkout", anchor_change=False)
    return {
        "ok": True, "target": target, "target_ref": target, "before_branch": branch, "after_branch": done.branch,
        "branch": done.branch, "worktree": done.worktree, "worktree_root": done.worktree_root,
        "worktree_created": done.worktree_created,
    }, done.seq  # fmt: skip
