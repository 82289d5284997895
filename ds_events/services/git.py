"""Git side of the `artifact` namespace: checkpoints, branches and worktrees, the graph.

Each command does its git side effect once, under the quest's append lock (so two
processes cannot race on one branch name), then appends the event that records what
happened. Replay never touches git. Error codes: ``invalid_branch_kind``,
``missing_fields``, ``invalid_branch_name``, ``branch_exists``, ``worktree_exists``,
``unknown_start_point``, ``unknown_branch``, ``branch_has_no_worktree``,
``worktree_missing``, ``nothing_to_commit``, plus the id and text codes of
:mod:`ds_events.artifacts.validate`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

import pygit2

from ds_events.artifacts.hygiene import scan_worktree
from ds_events.artifacts.validate import check_text, optional_id
from ds_events.events.artifact import BranchPrepared, GitCheckpointed, GitGraphRendered
from ds_events.home import GIT_SIGNATURE, Quest
from projections.artifacts import render_graph_svg

from ds_events.errors import Conflict, Invalid, NotFound

__all__ = [
    "BRANCH_KINDS",
    "WORKTREES_DIR",
    "BranchSpec",
    "checkpoint",
    "prepare_branch",
    "render_git_graph",
    "git_graph",
    "validate_branch_name",
    "resolve_start",
    "create_branches",
    "check_free",
    "branch_head",
]

BRANCH_KINDS = ("idea", "run", "analysis", "paper")
WORKTREES_DIR = ".ds/worktrees"
_MAX_MESSAGE = 5000


@dataclass(frozen=True)
class BranchSpec:
    """A branch to create (and its worktree, when ``worktree`` is set)."""

    branch: str
    kind: str
    worktree: str | None


def checkpoint(quest: Quest, message: str, *, allow_empty: bool = False, branch: str | None = None) -> dict[str, Any]:
    """Commit the active worktree (or ``branch``'s worktree, or ``main`` for the quest
    root), skipping what hygiene excludes. Returns sha, branch, skipped paths."""
    message = check_text(message, "message", max_chars=_MAX_MESSAGE)
    if not isinstance(allow_empty, bool):
        raise Invalid("allow_empty must be true or false", code="invalid_field", field="allow_empty")
    max_bytes = int(quest.home.config()["git"]["max_file_bytes"])
    quest.views.materialise()  # the quest root's files reflect every event so far
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        target = branch if branch is not None else state.active_branch
        repo, worktree = _open_target(quest, state, target)
        if worktree is None and not repo.head_is_detached:
            target = repo.head.shorthand  # whatever the quest root has checked out (normally main)
        scan = scan_worktree(repo, max_bytes)
        index = _stage(repo, scan.files)
        tree = index.write_tree()
        parent = repo.head.peel(pygit2.Commit)
        if tree == parent.tree_id and not allow_empty:
            raise Conflict(
                f"nothing to commit on {target}: the tree equals {str(parent.id)[:10]}; pass allow_empty=true to commit anyway",
                code="nothing_to_commit",
                branch=target,
                head=str(parent.id),
                skipped=scan.skipped,
            )
        sig = pygit2.Signature(*GIT_SIGNATURE)
        sha = str(repo.create_commit("HEAD", sig, sig, message, tree, [parent.id]))
        index.write()
        event = GitCheckpointed(
            sha=sha,
            message=message,
            branch=target,
            parent=str(parent.id),
            worktree=worktree,
            files=len(scan.files),
            skipped=scan.skipped,
            allow_empty=allow_empty,
        )
        stored = txn.append(event)[0]
    return {
        "sha": sha,
        "branch": target,
        "parent": str(parent.id),
        "worktree": worktree,
        "files": len(scan.files),
        "skipped": scan.skipped,
        "skipped_total": scan.skipped_total,
        "seq": stored.seq,
    }


def prepare_branch(
    quest: Quest,
    *,
    run_id: str | None = None,
    idea_id: str | None = None,
    branch: str | None = None,
    branch_kind: str = "run",
    create_worktree: bool = True,
    start_point: str | None = None,
) -> dict[str, Any]:
    """Create a branch named by the scheme (``run/<run_id>``, ``idea/<quest>-<idea_id>``,
    ``analysis/<idea_id>/<run_id>``, ``paper/<id>``) or the given ``branch``, from
    ``start_point`` (default: the active branch), with a worktree under ``.ds/worktrees/``.
    The new worktree becomes the active one: later checkpoints commit it."""
    if branch_kind not in BRANCH_KINDS:
        raise Invalid(f"unknown branch_kind {branch_kind!r}: use {', '.join(BRANCH_KINDS)}", code="invalid_branch_kind")
    run_id = optional_id(run_id, "run_id")
    idea_id = optional_id(idea_id, "idea_id")
    if not isinstance(create_worktree, bool):
        raise Invalid("create_worktree must be true or false", code="invalid_field", field="create_worktree")
    name = _branch_name(quest.id, branch_kind, branch, run_id, idea_id)
    spec = BranchSpec(branch=name, kind=branch_kind, worktree=_worktree_path(name) if create_worktree else None)
    with quest.transaction() as txn:
        state = quest.state("artifacts")
        repo = quest.repo()
        start_sha, start_label = resolve_start(repo, start_point, state.active_branch)
        check_free(quest, repo, [spec])
        create_branches(quest, repo, [spec], start_sha)
        event = BranchPrepared(
            branch=name,
            branch_kind=branch_kind,
            start_sha=start_sha,
            start_point=start_label,
            worktree=spec.worktree,
            run=run_id,
            idea_id=idea_id,
            activate=spec.worktree is not None,
        )
        try:
            stored = txn.append(event)[0]
        except BaseException:
            _remove_branches(quest, repo, [spec])
            raise
    return {
        "branch": name,
        "branch_kind": branch_kind,
        "start_sha": start_sha,
        "start_point": start_label,
        "worktree": spec.worktree,
        "worktree_path": str(quest.root / spec.worktree) if spec.worktree else None,
        "active": spec.worktree is not None,
        "seq": stored.seq,
    }


def render_git_graph(quest: Quest, *, max_commits: int = 200) -> dict[str, Any]:
    """Snapshot the branch graph into the log; ``artifacts/graphs/git_graph.{json,svg}``
    are materialised from it. Returns the graph, the SVG text and the file paths."""
    if not isinstance(max_commits, int) or isinstance(max_commits, bool) or not 1 <= max_commits <= 2000:
        raise Invalid("max_commits must be an integer from 1 to 2000", code="invalid_field", field="max_commits")
    state = quest.state("artifacts")
    graph = git_graph(quest.repo(), state, max_commits=max_commits)
    stored = quest.emit(GitGraphRendered(graph=graph))[0]
    return {
        "graph": graph,
        "svg": render_graph_svg(graph),
        "json_path": "artifacts/graphs/git_graph.json",
        "svg_path": "artifacts/graphs/git_graph.svg",
        "seq": stored.seq,
    }


def git_graph(repo: pygit2.Repository, state: Any, *, max_commits: int = 200) -> dict[str, Any]:
    """Branches (main first) with kind, worktree and fork point, and the commits reachable
    from them (newest ``max_commits``), each on the lane of the first branch that reaches it
    along first parents."""
    names = sorted(repo.branches.local, key=lambda n: (n != "main", n))
    heads = {n: repo.branches.local[n].peel(pygit2.Commit).id for n in names}
    main_head = heads.get("main")
    branches = []
    for name in names:
        info = state.branches.get(name)
        base = None
        if main_head is not None and name != "main":
            found = repo.merge_base(heads[name], main_head)
            base = str(found) if found is not None else None
        branches.append(
            {
                "name": name,
                "head": str(heads[name]),
                "kind": info.kind if info else ("main" if name == "main" else "other"),
                "worktree": info.worktree if info else None,
                "start_sha": info.start_sha if info else None,
                "merge_base_with_main": base,
            }
        )
    walker = repo.walk(None, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    for oid in heads.values():
        walker.push(oid)
    commits = []
    for commit in walker:
        if len(commits) >= max_commits:
            break
        commits.append(commit)
    lane: dict[str, str] = {}
    kept = {str(c.id) for c in commits}
    for name in names:
        current: pygit2.Commit | None = repo[heads[name]]
        while current is not None and str(current.id) in kept and str(current.id) not in lane:
            lane[str(current.id)] = name
            current = current.parents[0] if current.parents else None
    return {
        "active_branch": state.active_branch,
        "branches": branches,
        "commits": [
            {
                "sha": str(c.id),
                "parents": [str(p) for p in c.parent_ids],
                "message": c.message.splitlines()[0] if c.message else "",
                "lane": lane.get(str(c.id), "main"),
                "time": c.commit_time,
            }
            for c in reversed(commits)
        ],
        "truncated": len(commits) >= max_commits,
    }


def validate_branch_name(name: Any, kind: str) -> str:
    """A branch name git accepts and our scheme allows: ``<kind>/<segment>[/<segment>...]``."""
    if (
        not isinstance(name, str)
        or len(name) > 200
        or not name.startswith(f"{kind}/")
        or not all(_segment_ok(part) for part in name.split("/"))
        or not pygit2.reference_is_valid_name(f"refs/heads/{name}")
    ):
        raise Invalid(
            f"invalid branch name {name!r}: use {kind}/<segment>[/<segment>], segments of letters, digits, '.', '_' or '-'",
            code="invalid_branch_name",
            branch=name if isinstance(name, str) else repr(name),
        )
    return name


def resolve_start(repo: pygit2.Repository, start_point: str | None, default_branch: str) -> tuple[str, str]:
    """``(sha, label)`` of a start point: a local branch, or anything git can parse to a commit."""
    label = start_point if start_point is not None else default_branch
    if not isinstance(label, str) or not label or label.startswith("-"):
        raise Invalid("start_point must be a branch name or a commit sha", code="unknown_start_point")
    ref = repo.branches.local.get(label)
    if ref is None and start_point is None:
        label, ref = "main", repo.branches.local.get("main")  # the active branch was deleted
    try:
        target = ref.peel(pygit2.Commit) if ref is not None else repo.revparse_single(label).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise NotFound(f"start_point {label!r} is not a branch or commit of the quest repository", code="unknown_start_point") from None
    return str(target.id), label


def create_branches(quest: Quest, repo: pygit2.Repository, specs: list[BranchSpec], start_sha: str) -> None:
    """Create every branch (and worktree) or, if one fails, none."""
    commit = repo[start_sha]
    done: list[BranchSpec] = []
    try:
        for spec in specs:
            ref = repo.branches.local.create(spec.branch, commit)
            done.append(spec)
            if spec.worktree is not None:
                path = quest.root / spec.worktree
                path.parent.mkdir(parents=True, exist_ok=True)
                repo.add_worktree(_worktree_name(spec.branch), str(path), ref)
    except BaseException:
        _remove_branches(quest, repo, done)
        raise


def branch_head(repo: pygit2.Repository, name: str) -> str | None:
    ref = repo.branches.local.get(name)
    return str(ref.peel(pygit2.Commit).id) if ref is not None else None


# -- helpers ------------------------------------------------------------------------------


def _branch_name(quest_id: str, kind: str, branch: str | None, run_id: str | None, idea_id: str | None) -> str:
    if branch is not None:
        return validate_branch_name(branch, kind)
    if kind == "run":
        if run_id is None:
            raise Invalid("a run branch needs run_id (or an explicit branch)", code="missing_fields", missing=["run_id"])
        name = f"run/{run_id}"
    elif kind == "idea":
        if idea_id is None:
            raise Invalid("an idea branch needs idea_id (or an explicit branch)", code="missing_fields", missing=["idea_id"])
        name = f"idea/{quest_id}-{idea_id}"
    elif kind == "analysis":
        missing = [f for f, v in (("idea_id", idea_id), ("run_id", run_id)) if v is None]
        if missing:
            raise Invalid("an analysis branch needs idea_id and run_id (or an explicit branch)", code="missing_fields", missing=missing)
        name = f"analysis/{idea_id}/{run_id}"
    else:
        if run_id is None and idea_id is None:
            raise Invalid("a paper branch needs run_id or idea_id (or an explicit branch)", code="missing_fields", missing=["run_id"])
        name = f"paper/{run_id or idea_id}"
    return validate_branch_name(name, kind)


def _segment_ok(part: str) -> bool:
    return bool(part) and part[0].isalnum() and all(c.isalnum() or c in "._-" for c in part) and not part.endswith(".lock")


def _worktree_name(branch: str) -> str:
    return branch.replace("/", "__")


def _worktree_path(branch: str) -> str:
    return f"{WORKTREES_DIR}/{_worktree_name(branch)}"


def check_free(quest: Quest, repo: pygit2.Repository, specs: list[BranchSpec]) -> None:
    existing = set(repo.branches.local)
    worktrees = set(repo.list_worktrees())
    for spec in specs:
        # git refuses "run/a" next to "run/a/b" (a ref cannot be a directory and a file)
        clash = [b for b in existing if b == spec.branch or b.startswith(spec.branch + "/") or spec.branch.startswith(b + "/")]
        if clash:
            raise Conflict(f"branch {spec.branch!r} already exists (or clashes with {clash[0]!r})", code="branch_exists", branch=spec.branch)
        if spec.worktree is not None and (
            _worktree_name(spec.branch) in worktrees or (quest.root / spec.worktree).exists()
        ):
            raise Conflict(f"a worktree already exists at {spec.worktree}", code="worktree_exists", worktree=spec.worktree)


def _remove_branches(quest: Quest, repo: pygit2.Repository, specs: list[BranchSpec]) -> None:
    for spec in reversed(specs):
        if spec.worktree is not None:
            shutil.rmtree(quest.root / spec.worktree, ignore_errors=True)
            try:
                repo.lookup_worktree(_worktree_name(spec.branch)).prune(True)
            except (KeyError, pygit2.GitError):
                pass
        ref = repo.branches.local.get(spec.branch)
        if ref is not None:
            ref.delete()


_WT_CHANGED = pygit2.enums.FileStatus.WT_MODIFIED | pygit2.enums.FileStatus.WT_TYPECHANGE


def _stage(repo: pygit2.Repository, files: list[str]) -> pygit2.Index:
    """The index holding exactly ``files``. Only new and changed files are hashed: git's
    stat cache (through ``status``) tells which tracked files changed, so an incremental
    checkpoint costs what ``git add`` costs, not a re-read of the whole tree."""
    index = repo.index
    index.read(force=True)
    tracked = {entry.path for entry in index}
    changed = {path for path, flags in repo.status(untracked_files="no").items() if flags & _WT_CHANGED}
    keep = set(files)
    for path in tracked - keep:
        index.remove(path)
    for path in files:
        if path not in tracked or path in changed:
            index.add(path)
    return index


def _open_target(quest: Quest, state: Any, target: Any) -> tuple[pygit2.Repository, str | None]:
    if not isinstance(target, str):
        raise Invalid("branch must be a branch name", code="invalid_field", field="branch")
    if target == "main":
        return quest.repo(), None
    info = state.branches.get(target)
    if info is None:
        raise NotFound(f"no prepared branch {target!r}: see prepare_branch", code="unknown_branch", branch=target)
    if info.worktree is None:
        raise Conflict(
            f"branch {target!r} has no worktree to commit: prepare it with create_worktree=true",
            code="branch_has_no_worktree",
            branch=target,
        )
    path = quest.root / info.worktree
    if not (path / ".git").exists():
        raise NotFound(f"the worktree of {target!r} is missing at {info.worktree}", code="worktree_missing", branch=target)
    return pygit2.Repository(str(path)), info.worktree

