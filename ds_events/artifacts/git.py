"""Git primitives of the artifact domain, below the services that decide when to use them.

A command that changes the quest repository (a branch, a worktree, a commit) does so
*before* it appends the event that records it, and mostly outside the log's lock: the
lock is only held to re-check and append. So everything here is made to be safe without
that lock and to be taken back:

- :func:`create_branches` creates branches and worktrees all-or-nothing; the
  repository's own lock (``.git/ds-refs.lock``, never the log's) decides between two
  processes creating the same name (one gets ``branch_exists``), and every step
  registers its undo on a :class:`Rollback`;
- :func:`stage_tree` scans and writes a tree without moving anything, and
  :func:`commit_staged` moves the branch only if it still points at the commit the tree
  was staged against (``branch_moved`` otherwise);
- :func:`reserve` holds a name (an analysis campaign id) across processes while its
  branches are made, as a ref under ``refs/ds/reserved/``;
- :class:`Rollback` undoes what was registered unless the command says the event that
  records it reached the log.

Nothing here reads or writes the event log. Error codes: ``invalid_branch_name``,
``unknown_start_point``, ``branch_exists``, ``worktree_exists``, ``branch_moved``, and
``path_outside_root`` (a worktree path that leads out of the quest).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events.artifact import SkippedPath
from ds_events.paths import confined

from .hygiene import scan_worktree

__all__ = [
    "BRANCH_KINDS",
    "WORKTREES_DIR",
    "GIT_SIGNATURE",
    "LOG_HEAD_TRAILER",
    "BranchSpec",
    "Rollback",
    "StagedTree",
    "validate_branch_name",
    "worktree_name",
    "worktree_path",
    "resolve_start",
    "branch_head",
    "check_free",
    "create_branches",
    "reserve",
    "release",
    "stage_tree",
    "commit_staged",
    "write_index",
    "with_trailer",
    "log_head_trailer",
    "undo_commit",
    "commit_all",
]

BRANCH_KINDS = ("idea", "run", "analysis", "paper")
WORKTREES_DIR = ".ds/worktrees"
GIT_SIGNATURE = ("ds-events", "ds-events@localhost")
# Last paragraph of every checkpoint commit message: "DS-Log-Head: <seq> <hash>", the
# log's last seq and chain hash when the commit was made (an anchor `ds verify` checks).
LOG_HEAD_TRAILER = "DS-Log-Head"
_RESERVED = "refs/ds/reserved/"


@dataclass(frozen=True)
class BranchSpec:
    """A branch to create (and its worktree, when ``worktree`` is set)."""

    branch: str
    kind: str
    worktree: str | None


class Rollback:
    """Undo steps for side effects made before the event that records them is in the log.

    ``with Rollback() as undo:`` — after each side effect register its undo
    (``undo.add(fn, *args)``); once the recording event is in the log call
    :meth:`keep`. If the block ends without :meth:`keep` (it raised, or gave up to try
    again) the steps run newest first. A step that fails does not stop the others; its
    error is noted on the exception that ended the block (or raised, if none did).
    """

    def __init__(self) -> None:
        self._steps: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
        self.kept = False

    def add(self, fn: Callable[..., Any], *args: Any) -> None:
        self._steps.append((fn, args))

    def keep(self) -> None:
        """The side effects are recorded: they stand."""
        self.kept = True

    def __enter__(self) -> Rollback:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.kept:
            return
        failures: list[BaseException] = []
        for fn, args in reversed(self._steps):
            try:
                fn(*args)
            except Exception as err:  # keep undoing the rest
                failures.append(err)
        self._steps.clear()
        for failure in failures:
            if exc is not None:
                exc.add_note(f"undoing a side effect failed too: {failure!r}")
        if failures and exc is None:
            raise failures[0]


@dataclass
class StagedTree:
    """A working tree scanned and written as a git tree, not yet committed."""

    repo: pygit2.Repository
    index: pygit2.Index
    tree: pygit2.Oid
    parent: pygit2.Commit
    files: int
    skipped: list[SkippedPath]
    skipped_total: int

    @property
    def unchanged(self) -> bool:
        return self.tree == self.parent.tree_id


# -- names --------------------------------------------------------------------------------


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


def worktree_name(branch: str) -> str:
    """The name git knows a branch's worktree by (``.git/worktrees/<name>``)."""
    return branch.replace("/", "__")


def worktree_path(branch: str) -> str:
    """Where a branch's worktree lives, relative to the quest root."""
    return f"{WORKTREES_DIR}/{worktree_name(branch)}"


# -- branches and worktrees -----------------------------------------------------------------


def resolve_start(repo: pygit2.Repository, start_point: str | None, default_branch: str) -> tuple[str, str]:
    """``(sha, label)`` of a start point: a local branch, or anything git can parse to a commit."""
    label = start_point if start_point is not None else default_branch
    if not isinstance(label, str) or not label or label.startswith("-"):
        # Names nothing the repository could hold: the same refusal as a name it lacks.
        raise NotFound("start_point must be a branch name or a commit sha", code="unknown_start_point")
    ref = repo.branches.local.get(label)
    if ref is None and start_point is None:
        label, ref = "main", repo.branches.local.get("main")  # the active branch was deleted
    try:
        target = ref.peel(pygit2.Commit) if ref is not None else repo.revparse_single(label).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        raise NotFound(f"start_point {label!r} is not a branch or commit of the quest repository", code="unknown_start_point") from None
    return str(target.id), label


def branch_head(repo: pygit2.Repository, name: str) -> str | None:
    ref = repo.branches.local.get(name)
    return str(ref.peel(pygit2.Commit).id) if ref is not None else None


def check_free(root: Path, repo: pygit2.Repository, specs: list[BranchSpec]) -> None:
    """Refuse (``branch_exists``, ``worktree_exists``, ``path_outside_root``) what
    :func:`create_branches` could not create. A cheap early answer; the creation itself
    decides races."""
    worktrees = set(repo.list_worktrees())
    for spec in specs:
        taken = False
        if spec.worktree is not None:
            # .ds/worktrees may be a link an agent planted: never check out through it
            path = confined(root, spec.worktree, field="worktree")
            taken = worktree_name(spec.branch) in worktrees or path.exists() or path.is_symlink()
        # Branches are listed after the worktree is looked at: a worktree another process
        # is making for this very branch then shows as the branch_exists it is.
        clash = _clashes(repo, spec.branch)
        if clash:
            raise _branch_exists(spec.branch, clash)
        if taken:
            raise Conflict(f"a worktree already exists at {spec.worktree}", code="worktree_exists", worktree=spec.worktree)


def create_branches(root: Path, repo: pygit2.Repository, specs: list[BranchSpec], start_sha: str, undo: Rollback) -> None:
    """Create every branch (and worktree) from ``start_sha``, registering each undo.

    Safe without the log's lock: each branch is checked and created, and its worktree
    added, under the repository's own lock (:func:`_repo_locked`), so of two processes
    creating one name exactly one does; the other gets ``branch_exists`` (or
    ``worktree_exists``) and ``undo``'s owner takes back only what this call made.
    """
    commit = repo[start_sha].peel(pygit2.Commit)
    for spec in specs:
        path = confined(root, spec.worktree, field="worktree") if spec.worktree is not None else None
        with _repo_locked(repo):
            clash = _clashes(repo, spec.branch)
            if clash:
                raise _branch_exists(spec.branch, clash)
            try:
                ref = repo.branches.local.create(spec.branch, commit)
            except (pygit2.GitError, OSError, ValueError) as exc:
                raise Conflict(
                    f"branch {spec.branch!r} could not be created: {exc}", code="branch_exists", branch=spec.branch
                ) from None
            undo.add(_delete_branch, repo, spec.branch, str(ref.target))
            if path is None:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                repo.add_worktree(worktree_name(spec.branch), str(path), ref)
            except (pygit2.GitError, OSError, ValueError) as exc:
                raise Conflict(
                    f"a worktree already exists at {spec.worktree} ({exc})", code="worktree_exists", worktree=spec.worktree
                ) from None
            undo.add(_remove_worktree, root, repo, spec)


def reserve(repo: pygit2.Repository, name: str, sha: str) -> bool:
    """Hold ``name`` across processes (True), or learn someone holds it (False).

    The reservation is the ref ``refs/ds/reserved/<name>``, created under the
    repository's lock only if absent, so of two processes exactly one gets it.
    :func:`release` drops it. A process killed while holding one leaves the ref, and the
    name stays skipped: harmless for names allocated by counting up (campaign ids).
    """
    refname = _RESERVED + name
    with _repo_locked(repo):
        if repo.references.get(refname) is not None:
            return False
        repo.references.create(refname, pygit2.Oid(hex=sha))
    return True


def release(repo: pygit2.Repository, name: str) -> None:
    with _repo_locked(repo):
        ref = repo.references.get(_RESERVED + name)
        if ref is not None:
            ref.delete()


# -- commits ----------------------------------------------------------------------------


_WT_CHANGED = pygit2.enums.FileStatus.WT_MODIFIED | pygit2.enums.FileStatus.WT_TYPECHANGE


def stage_tree(repo: pygit2.Repository, max_file_bytes: int) -> StagedTree:
    """Scan ``repo``'s working tree (checkpoint hygiene), stage it in memory and write the
    tree. The branch, the on-disk index and the working files are left as they are: the
    only writes are tree and blob objects, which nothing refers to until a commit does."""
    parent = repo.head.peel(pygit2.Commit)
    scan = scan_worktree(repo, max_file_bytes)
    index = _stage(repo, scan.files)
    return StagedTree(
        repo=repo,
        index=index,
        tree=index.write_tree(),
        parent=parent,
        files=len(scan.files),
        skipped=scan.skipped,
        skipped_total=scan.skipped_total,
    )


def commit_staged(staged: StagedTree, message: str, undo: Rollback) -> str:
    """Commit ``staged`` on its parent and move HEAD's branch to it, only if the branch
    still points at that parent (``branch_moved`` otherwise). Registers the move back.

    The on-disk index is not written here: :func:`write_index` does it once the commit
    is recorded (it is git's stat cache; a stale one costs the next scan some hashing).
    """
    repo, parent = staged.repo, staged.parent
    current = _head_sha(repo)
    if current != str(parent.id):
        raise _moved(repo, str(parent.id), current)
    sig = pygit2.Signature(*GIT_SIGNATURE)
    try:
        # libgit2 refuses when the branch's tip is not the first parent any more: a git
        # process in the worktree committed since the check above.
        oid = repo.create_commit("HEAD", sig, sig, message, staged.tree, [parent.id])
    except pygit2.GitError:
        raise _moved(repo, str(parent.id), _head_sha(repo)) from None
    undo.add(_move_head_back, repo, str(oid), str(parent.id))
    return str(oid)


def write_index(staged: StagedTree) -> None:
    """Write the staged index to disk, so ``git status`` in the tree is clean."""
    try:
        staged.index.write()
    except (pygit2.GitError, OSError):
        pass  # only a cache: the next checkpoint hashes what it cannot trust


def with_trailer(message: str, seq: int, chain_hash: str) -> str:
    """``message`` with a last paragraph ``DS-Log-Head: <seq> <hash>``."""
    return f"{message.rstrip()}\n\n{LOG_HEAD_TRAILER}: {seq} {chain_hash}\n"


def commit_all(repo: pygit2.Repository, message: str) -> str:
    """Stage everything git does not ignore and commit it on HEAD (the quest's first commit)."""
    index = repo.index
    index.add_all()
    index.write()
    tree = index.write_tree()
    sig = pygit2.Signature(*GIT_SIGNATURE)
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("HEAD", sig, sig, message, tree, parents))


# -- helpers ------------------------------------------------------------------------------


def _segment_ok(part: str) -> bool:
    return bool(part) and part[0].isalnum() and all(c.isalnum() or c in "._-" for c in part) and not part.endswith(".lock")


def _stage(repo: pygit2.Repository, files: list[str]) -> pygit2.Index:
    """The index holding exactly ``files``. Only new and changed files are hashed: git's
    stat cache (through ``status``) tells which tracked files changed, so an incremental
    checkpoint costs what ``git add`` costs, not a re-read of the whole tree."""
    index: pygit2.Index = repo.index
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


def _head_sha(repo: pygit2.Repository) -> str:
    return str(repo.revparse_single("HEAD").peel(pygit2.Commit).id)


def _moved(repo: pygit2.Repository, expected: str, found: str) -> Conflict:
    where = "HEAD" if repo.head_is_detached else repo.head.shorthand
    return Conflict(
        f"{where} moved from {expected[:10]} to {found[:10]} while the checkpoint was being prepared: checkpoint again",
        code="branch_moved",
        branch=where,
        expected=expected,
        found=found,
    )


def log_head_trailer(message: str) -> tuple[int, str] | None:
    """The ``DS-Log-Head: <seq> <hash>`` a checkpoint's message ends with, or None."""
    last = message.rstrip().rsplit("\n", 1)[-1]
    key, _, value = last.partition(": ")
    seq, _, chain_hash = value.partition(" ")
    if key != LOG_HEAD_TRAILER or not seq.isdigit() or not chain_hash:
        return None
    return int(seq), chain_hash.strip()


def undo_commit(repo: pygit2.Repository, made: str, parent: str) -> None:
    """What a checkpoint's :class:`Rollback` does when its event does not reach the log:
    HEAD's branch back at ``parent`` if it is still at ``made``."""
    _move_head_back(repo, made, parent)


def _move_head_back(repo: pygit2.Repository, made: str, parent: str) -> None:
    """Point HEAD's branch (or a detached HEAD) back at ``parent`` if it is still at
    ``made``; a commit someone made on top since is left alone."""
    if repo.head_is_detached:
        if str(repo.head.target) == made:
            repo.set_head(pygit2.Oid(hex=parent))
        return
    ref = repo.references[repo.head.name]
    if str(ref.target) == made:
        ref.set_target(pygit2.Oid(hex=parent), "ds-events: checkpoint not recorded in the log, undone")


def _clashes(repo: pygit2.Repository, branch: str) -> str | None:
    """A local branch that ``branch`` cannot be created next to: itself, or one that
    would need a ref to be a file and a directory at once (``run/a`` vs ``run/a/b``)."""
    for b in repo.branches.local:
        if b == branch or b.startswith(branch + "/") or branch.startswith(b + "/"):
            return b
    return None


def _branch_exists(branch: str, clash: str) -> Conflict:
    return Conflict(f"branch {branch!r} already exists (or clashes with {clash!r})", code="branch_exists", branch=branch)


def _delete_branch(repo: pygit2.Repository, name: str, made: str) -> None:
    with _repo_locked(repo):
        ref = repo.branches.local.get(name)
        if ref is not None and str(ref.target) == made:
            ref.delete()


def _remove_worktree(root: Path, repo: pygit2.Repository, spec: BranchSpec) -> None:
    assert spec.worktree is not None
    path = root / spec.worktree
    with _repo_locked(repo):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        try:
            repo.lookup_worktree(worktree_name(spec.branch)).prune(True)
        except (KeyError, pygit2.GitError):
            pass


@contextlib.contextmanager
def _repo_locked(repo: pygit2.Repository) -> Iterator[None]:
    """The quest repository's own lock (``.git/ds-refs.lock``), held to check-and-create
    a ref or add or remove a worktree. It is not the log's lock: appenders never wait on
    it. Needed because libgit2 checks that a ref is absent *before* it locks the ref
    (two "create if absent" calls can both succeed), and checks that a branch is not
    checked out elsewhere by reading every worktree, misreading one that another process
    is halfway through making. Not re-entrant: never nest it."""
    fd = os.open(os.path.join(repo.path, "ds-refs.lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock
