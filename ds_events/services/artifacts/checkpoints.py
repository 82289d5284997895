"""Git side of the `artifact` namespace: checkpoints, branches and worktrees, the graph.

Each command makes its git side effect first and outside the log's lock (scanning and
writing the tree of a checkpoint of thousands of files, or checking out the worktrees of
a campaign, must not hold up every other writer of the quest), then holds the lock only
to re-check what may have moved, finish (a checkpoint's commit) and append the event
that records what happened: :func:`append_recording`. If that event does not reach the
log, the side effects are undone, so the repository never holds a branch or a commit the
log does not know (and a retry does not meet a ``branch_exists`` of its own making).
Replay never touches git. Each command takes its command struct (:mod:`.commands`) and
returns its result struct (:mod:`.results`); the domain's error codes are catalogued in
:mod:`.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.git import BRANCH_KINDS, BranchSpec, Rollback
from ds_events.artifacts.validate import check_materialised, check_text, optional_id
from ds_events.crashpoints import crashpoint
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, EventDecodeError, decode_line
from ds_events.events.artifact import BranchPrepared, GitCheckpointed, GitGraphRendered
from ds_events.home import Quest
from ds_events.log import LogError, line_hash
from ds_events.store import StoreTransaction
from projections.artifacts import GRAPH_FILES, State, render_graph_svg

from .commands import Checkpoint, PrepareBranch, RenderGitGraph
from .results import BranchResult, CheckpointResult, GitGraphResult

__all__ = [
    "BRANCH_KINDS",
    "checkpoint",
    "prepare_branch",
    "render_git_graph",
    "git_graph",
    "append_recording",
    "undo_unrecorded_checkpoints",
]

_MAX_MESSAGE = 5000
# A checkpoint whose branch moved between its scan and its commit is prepared again
# this many times in all before it gives up with ``branch_moved``.
_CHECKPOINT_ATTEMPTS = 3


def checkpoint(quest: Quest, cmd: Checkpoint) -> CheckpointResult:
    """Commit the active worktree (or ``branch``'s worktree, or ``main`` for the quest
    root), skipping what hygiene excludes. Returns sha, branch, skipped paths.

    The scan, the hashing of new and changed files and the tree are done outside the
    log's lock; under it only the branch head is checked (if it moved since the scan,
    everything is prepared again, up to three times, then ``branch_moved``), the commit
    made, with the trailer ``DS-Log-Head: <seq> <hash>`` naming the log's head at that
    moment, and the event appended.
    """
    message = check_text(cmd.message, "message", max_chars=_MAX_MESSAGE)
    max_bytes = quest.home.config().git.max_file_bytes
    quest.views.materialise()  # the quest root's files reflect every event so far
    for attempt in range(1, _CHECKPOINT_ATTEMPTS + 1):
        try:
            return _checkpoint_once(quest, message, cmd.allow_empty, cmd.branch, max_bytes)
        except Conflict as exc:
            if exc.code != "branch_moved" or attempt == _CHECKPOINT_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def prepare_branch(quest: Quest, cmd: PrepareBranch) -> BranchResult:
    """Create a branch named by the scheme (``run/<run_id>``, ``idea/<quest>-<idea_id>``,
    ``analysis/<idea_id>/<run_id>``, ``paper/<id>``) or the given ``branch``, from
    ``start_point`` (default: the active branch), with a worktree under ``.ds/worktrees/``.
    The new worktree becomes the active one: later checkpoints commit it."""
    branch_kind = cmd.branch_kind
    if branch_kind not in BRANCH_KINDS:
        raise Invalid(f"unknown branch_kind {branch_kind!r}: use {', '.join(BRANCH_KINDS)}", code="invalid_branch_kind")
    run_id = optional_id(cmd.run_id, "run_id")
    idea_id = optional_id(cmd.idea_id, "idea_id")
    name = _branch_name(quest.id, branch_kind, cmd.branch, run_id, idea_id)
    worktree = git_ops.worktree_path(name) if _create_worktree(cmd) else None
    spec = BranchSpec(branch=name, kind=branch_kind, worktree=worktree)
    state = quest.state("artifacts")
    repo = quest.repo()
    start_sha, start_label = git_ops.resolve_start(repo, cmd.start_point, state.active_branch)
    git_ops.check_free(quest.root, repo, [spec])
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
    # Outside the lock: git's ref lock decides if another process creates this branch
    # at the same moment (we get branch_exists and undo only what we made).
    with Rollback() as undo:
        git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
        stored = append_recording(quest, undo, lambda txn: event)
    return BranchResult(
        branch=name,
        branch_kind=branch_kind,
        start_sha=start_sha,
        start_point=start_label,
        worktree=spec.worktree,
        worktree_path=str(quest.root / spec.worktree) if spec.worktree else None,
        active=spec.worktree is not None,
        seq=stored.seq,
    )


def render_git_graph(quest: Quest, cmd: RenderGitGraph) -> GitGraphResult:
    """Snapshot the branch graph into the log; ``artifacts/graphs/git_graph.{json,svg}``
    are materialised from it. Returns the graph, the SVG text and the file paths."""
    max_commits = cmd.max_commits
    if not 1 <= max_commits <= 2000:
        raise Invalid("max_commits must be an integer from 1 to 2000", code="invalid_field", field="max_commits")
    check_materialised(quest.root, GRAPH_FILES)
    state = quest.state("artifacts")
    graph = git_graph(quest.repo(), state, max_commits=max_commits)
    stored = quest.emit(GitGraphRendered(graph=graph))
    where = {"json_path": str(quest.root / GRAPH_FILES[0]), "svg_path": str(quest.root / GRAPH_FILES[1])}
    return GitGraphResult(
        graph={**graph, **where}, svg=render_graph_svg(graph), json_path=GRAPH_FILES[0], svg_path=GRAPH_FILES[1], seq=stored.seq
    )


def git_graph(repo: pygit2.Repository, state: State, *, max_commits: int = 200) -> dict[str, Any]:
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
    commits: list[pygit2.Commit] = []
    for commit in walker:
        if len(commits) >= max_commits:
            break
        commits.append(commit)
    lane: dict[str, str] = {}
    kept = {str(c.id) for c in commits}
    for name in names:
        current: pygit2.Commit | None = repo[heads[name]].peel(pygit2.Commit)
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


def append_recording(quest: Quest, undo: Rollback, decide: Callable[[StoreTransaction], Event]) -> Event:
    """Append the event that records the side effects registered on ``undo``; returns it
    as stored. Used by every command that changes the repository before it appends.

    Under the log's lock ``decide(txn)`` re-checks what may have changed since the side
    effects were made (raising refuses the call) and returns the event; it may make the
    last side effect itself (a checkpoint's commit), registering its undo. If the event
    is in the log, the side effects stand (``undo.keep()``); if not, they are undone as
    ``undo``'s block ends, and the error propagates.

    "In the log" is judged by the file, not by whether the append returned: a failed
    sync leaves the written line in the log (not acknowledged, yet replayed by every
    reader), and then the repository keeps what that line says, so the two agree.
    """
    before = 0
    event: Event | None = None
    try:
        with quest.transaction() as txn:
            before = txn.last_seq
            event = decide(txn)
            stored = txn.append(event)
            undo.keep()
    except BaseException as exc:
        if event is not None and not undo.kept and _reached_log(quest, event, before):
            undo.keep()
            exc.add_note(
                f"the {event.type} event reached the log although the append failed, so what it records was kept; "
                "reopen the quest and check it with ds verify"
            )
        raise
    return stored


def _create_worktree(cmd: PrepareBranch) -> bool:
    """``create_worktree``, or DeepScientist's ``create_worktree_flag`` for it; the two
    may not contradict each other (a ``create_worktree`` left at its default does not)."""
    flag = cmd.create_worktree_flag
    if flag is None:
        return cmd.create_worktree
    if flag and not cmd.create_worktree:
        raise Invalid(
            "create_worktree=false and create_worktree_flag=true contradict each other: give one of them",
            code="conflicting_arguments", arguments=["create_worktree", "create_worktree_flag"],
        )  # fmt: skip
    return flag


def _branch_name(quest_id: str, kind: str, branch: str | None, run_id: str | None, idea_id: str | None) -> str:
    if branch is not None:
        return git_ops.validate_branch_name(branch, kind)
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
    return git_ops.validate_branch_name(name, kind)


def _checkpoint_once(quest: Quest, message: str, allow_empty: bool, branch: str | None, max_bytes: int) -> CheckpointResult:
    state = quest.state("artifacts")
    target = branch if branch is not None else state.active_branch
    repo, worktree = _open_target(quest, state, target)
    if worktree is None and not repo.head_is_detached:
        target = repo.head.shorthand  # whatever the quest root has checked out (normally main)
    _undo_unrecorded(quest, repo)
    staged = git_ops.stage_tree(repo, max_bytes)  # the long part, outside the lock
    parent = str(staged.parent.id)
    skipped: list[dict[str, Any]] = [dict(s) for s in staged.skipped]  # as the event and the answer carry them
    if staged.unchanged and not allow_empty:
        raise Conflict(
            f"nothing to commit on {target}: the tree equals {parent[:10]}; pass allow_empty=true to commit anyway",
            code="nothing_to_commit",
            branch=target,
            head=parent,
            skipped=skipped,
        )

    def commit(txn: StoreTransaction) -> Event:
        seq, chain_hash = _log_head(quest, txn)
        crashpoint("mcp.checkpoint.before_commit")
        sha = git_ops.commit_staged(staged, git_ops.with_trailer(message, seq, chain_hash), undo)
        crashpoint("mcp.checkpoint.after_commit")
        return GitCheckpointed(
            sha=sha,
            message=message,
            branch=target,
            parent=parent,
            worktree=worktree,
            files=staged.files,
            skipped=skipped,
            allow_empty=allow_empty,
        )

    with Rollback() as undo:
        stored = append_recording(quest, undo, commit)
    crashpoint("mcp.checkpoint.after_append")
    assert isinstance(stored, GitCheckpointed)
    git_ops.write_index(staged)
    return CheckpointResult(
        sha=stored.sha,
        head=stored.sha,
        branch=target,
        parent=parent,
        worktree=worktree,
        files=staged.files,
        skipped=skipped,
        skipped_total=staged.skipped_total,
        seq=stored.seq,
    )


def undo_unrecorded_checkpoints(quest: Quest) -> list[str]:
    """Undo the checkpoint commits a killed process left unrecorded, on the quest root and
    every branch worktree (a restarted host runs it); returns their shas."""
    state = quest.state("artifacts")
    repos = [quest.repo()]
    for info in state.branches.values():
        if info.worktree is not None and (quest.root / info.worktree / ".git").exists():
            repos.append(pygit2.Repository(str(quest.root / info.worktree)))
    return [sha for repo in repos if (sha := _undo_unrecorded(quest, repo)) is not None]


def _undo_unrecorded(quest: Quest, repo: pygit2.Repository) -> str | None:
    """Undo a checkpoint commit the log never recorded: a process killed (kill -9) between
    its commit and its ``git.checkpointed`` could not run its :class:`Rollback`, and left
    the branch on a commit no event names. The commit's trailer says the log's head when
    it was made (seq S, under the lock that also appended its event), so its event is
    seq S+1 or it does not exist. Checked under the lock: no checkpoint is between its
    commit and its event meanwhile. Without this the next checkpoint would build on the
    unrecorded commit (or find nothing to commit)."""
    if repo.head_is_unborn:
        return None
    head = repo.head.peel(pygit2.Commit)
    trailer = git_ops.log_head_trailer(head.message)
    if trailer is None or len(head.parent_ids) != 1:
        return None
    state = quest.state("artifacts")
    if str(head.id) in {c.sha for c in state.checkpoints} | {b.head_sha for b in state.branches.values()}:
        return None
    with quest.transaction():
        if str(repo.head.peel(pygit2.Commit).id) != str(head.id):
            return None
        for _seq, line in quest.log.iter_lines(after_seq=trailer[0]):
            try:
                event = decode_line(line)
            except EventDecodeError:
                break
            if isinstance(event, GitCheckpointed) and event.sha == str(head.id):
                return None  # recorded
            break
        git_ops.undo_commit(repo, str(head.id), str(head.parent_ids[0]))
    return str(head.id)


def _log_head(quest: Quest, txn: StoreTransaction) -> tuple[int, str]:
    """The log's last seq and the chain hash of that line (what the next line's ``prev``
    will be), read under the lock."""
    seq = txn.last_seq
    for _seq, line in quest.log.iter_lines(after_seq=seq - 1):
        return seq, line_hash(line)
    return 0, "-"  # an empty log (a quest always has its first event)


def _reached_log(quest: Quest, event: Event, after_seq: int) -> bool:
    """Whether a line after ``after_seq`` holds ``event`` (envelope aside)."""
    wanted = _payload(event)
    try:
        for _seq, line in quest.log.iter_lines(after_seq=after_seq):
            try:
                found = decode_line(line)
            except EventDecodeError:
                continue
            if type(found) is type(event) and _payload(found) == wanted:
                return True
    except (OSError, LogError):
        return False  # a handle that cannot even be read (closed) wrote nothing
    return False


_ENVELOPE = frozenset(Event.__struct_fields__)


def _payload(event: Event) -> dict[str, Any]:
    return {f: getattr(event, f) for f in event.__struct_fields__ if f not in _ENVELOPE}


def _open_target(quest: Quest, state: State, target: str) -> tuple[pygit2.Repository, str | None]:
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

