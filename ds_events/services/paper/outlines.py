"""``submit_paper_outline`` and ``list_paper_outlines``: the paper's outlines, and the
``paper/…`` branch the selected one opens.

- candidate: the outline is recorded (or, while still a candidate, rewritten: what the
  caller gives replaces what it had) and materialised as
  ``paper/outlines/candidates/<outline_id>.json``.
- select: an outline becomes the paper's plan. The first selection opens the paper
  branch — ``paper/<run>`` (the latest main experiment on the research workspace's
  branch), else ``paper/<idea>``, else ``paper/<outline_id>`` — with its worktree, from
  the research workspace's branch; it becomes the workspace, and the quest moves to
  ``write``. The branch and worktree are made before the log's lock and undone if the
  events do not reach the log. A workspace that is a paper branch already is kept.
- revise: the selected outline (or the one ``outline_id`` names, which becomes the
  selected one) is rewritten and stays selected.

Error codes: ``invalid_id``, ``invalid_field``, ``missing_fields``, ``unknown_outline``,
``outline_selected``, plus the branch and worktree codes of :mod:`ds_events.artifacts.git`.
"""

from __future__ import annotations

import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.validate import check_materialised, optional_id
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.artifact import BranchPrepared
from ds_events.events.paper import OutlineMode, OutlineSubmitted, PaperOutline
from ds_events.home import Quest
from ds_events.services.research.batch import append_batch
from ds_events.services.research.lineage import branch_kind_of, has_branch, workspace_branch
from ds_events.store import StoreTransaction
from projections.manuscript import OUTLINE_STATUS, PAPER_FILES, State, outline_paths, outline_record

from .commands import ListPaperOutlines, PaperOutlineResult, PaperOutlinesResult, SubmitPaperOutline
from .normalise import merge_outline, parse_outline

__all__ = ["submit_paper_outline", "list_paper_outlines"]

WRITE_ANCHOR = "write"


def submit_paper_outline(quest: Quest, cmd: SubmitPaperOutline) -> PaperOutlineResult:
    """Record a candidate outline, select one (opening the paper branch) or revise it."""
    paper = quest.state("manuscript")
    if cmd.mode == "candidate":
        return _candidate(quest, cmd, paper)
    outline_id = optional_id(cmd.outline_id, "outline_id") or paper.selected_outline_id
    if outline_id is None:
        raise Invalid(f"mode={cmd.mode} needs outline_id (no outline is selected yet)", code="missing_fields",
                      missing=["outline_id"])  # fmt: skip
    old = paper.outlines.get(outline_id)
    if old is None:
        raise NotFound(f"no paper outline {outline_id!r}: list_paper_outlines() names them", code="unknown_outline",
                       outline_id=outline_id, known=list(paper.outlines)[:20])  # fmt: skip
    outline = merge_outline(old.outline, title=cmd.title, note=cmd.note, story=cmd.story, ten_questions=cmd.ten_questions,
                            detailed=cmd.detailed_outline, review_result=cmd.review_result)  # fmt: skip
    reason = (cmd.selected_reason or cmd.note or "").strip()
    check_materialised(quest.root, [*outline_paths(outline_id), *PAPER_FILES.values()])
    if paper.paper_branch is not None and paper.selection is not None:
        sel = paper.selection
        event = OutlineSubmitted(mode=cmd.mode, outline=outline, reason=reason, paper_branch=paper.paper_branch,
                                 worktree=paper.worktree, source_branch=sel.source_branch, source_run_id=sel.source_run_id,
                                 source_idea_id=sel.source_idea_id)  # fmt: skip
        with quest.transaction() as txn:
            _check_known(quest.state("manuscript"), outline_id)
            stored = txn.append([event, *_to_write(quest, outline_id)])
        return _result(quest, _submitted(stored), cmd.mode)
    return _select_opening_branch(quest, cmd.mode, outline, reason)


def list_paper_outlines(quest: Quest, cmd: ListPaperOutlines) -> PaperOutlinesResult:
    """Every outline with its status, and the selected one in full."""
    paper = quest.state("manuscript")
    items = []
    for record in paper.outlines.values():
        candidate, revision = outline_paths(record.outline.outline_id)
        items.append({
            "outline_id": record.outline.outline_id, "title": record.outline.title, "status": record.status,
            "review_result": record.outline.review_result or None, "path": revision if record.revisions else candidate,
            "is_selected": record.outline.outline_id == paper.selected_outline_id, "revisions": record.revisions,
            "updated_seq": record.submitted.seq,
        })  # fmt: skip
    selected = paper.selected
    return PaperOutlinesResult(
        ok=True, selected_outline_ref=paper.selected_outline_id, selected_outline=outline_record(selected) if selected else None,
        paper_branch=paper.paper_branch, count=len(items), outlines=items,
    )  # fmt: skip


# -- private helpers ----------------------------------------------------------------------


def _candidate(quest: Quest, cmd: SubmitPaperOutline, paper: State) -> PaperOutlineResult:
    outline_id = optional_id(cmd.outline_id, "outline_id") or _next_id(paper)
    old = paper.outlines.get(outline_id)
    _check_candidate(paper, outline_id)
    if old is not None:
        outline = merge_outline(old.outline, title=cmd.title, note=cmd.note, story=cmd.story, ten_questions=cmd.ten_questions,
                                detailed=cmd.detailed_outline, review_result=cmd.review_result)  # fmt: skip
    else:
        outline = parse_outline(outline_id, title=cmd.title, note=cmd.note, story=cmd.story, ten_questions=cmd.ten_questions,
                                detailed=cmd.detailed_outline, review_result=cmd.review_result)  # fmt: skip
    check_materialised(quest.root, outline_paths(outline_id))
    with quest.transaction() as txn:
        _check_candidate(quest.state("manuscript"), outline_id)
        stored = txn.append(OutlineSubmitted(mode="candidate", outline=outline))
    return _result(quest, stored, "candidate")


def _select_opening_branch(quest: Quest, mode: OutlineMode, outline: PaperOutline, reason: str) -> PaperOutlineResult:
    research, artifacts = quest.state("research"), quest.state("artifacts")
    repo = quest.repo()
    source = workspace_branch(research, artifacts)
    run = next((r for r in reversed(artifacts.runs.values()) if r.branch == source), None)
    run_id = run.run if run is not None else None
    idea_id = (run.idea_id if run is not None else None) or research.active_idea_id
    if branch_kind_of(source) == "paper":  # the agent works on a paper branch already: keep it
        worktree = research.worktrees.get(source) or artifacts.active_worktree
        event = OutlineSubmitted(mode=mode, outline=outline, reason=reason, paper_branch=source, worktree=worktree,
                                 source_branch=source, source_run_id=run_id, source_idea_id=idea_id)  # fmt: skip
        with quest.transaction() as txn:
            _check_known(quest.state("manuscript"), outline.outline_id)
            stored = txn.append([event, *_to_write(quest, outline.outline_id)])
        return _result(quest, _submitted(stored), mode)
    name = _paper_branch_name(repo, run_id or idea_id or outline.outline_id, outline.outline_id)
    worktree = git_ops.worktree_path(name)
    spec = git_ops.BranchSpec(branch=name, kind="paper", worktree=worktree)
    start_sha, start_label = git_ops.resolve_start(repo, source, "main")
    git_ops.check_free(quest.root, repo, [spec])

    def decide(txn: StoreTransaction) -> list[Event]:
        _check_known(quest.state("manuscript"), outline.outline_id)
        return [
            BranchPrepared(branch=name, branch_kind="paper", start_sha=start_sha, start_point=start_label,
                           worktree=worktree, run=run_id, idea_id=idea_id, activate=True),
            OutlineSubmitted(mode=mode, outline=outline, reason=reason, paper_branch=name, worktree=worktree,
                             source_branch=source, source_run_id=run_id, source_idea_id=idea_id),
            *_to_write(quest, outline.outline_id),
        ]  # fmt: skip

    with git_ops.Rollback() as undo:
        git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
        stored = append_batch(quest, undo, decide)
    return _result(quest, _submitted(stored), mode)


def _paper_branch_name(repo: pygit2.Repository, base: str, outline_id: str) -> str:
    name = git_ops.validate_branch_name(f"paper/{base}", "paper")
    if has_branch(repo, name):  # made by hand (prepare_branch, git): this paper gets its own
        name = git_ops.validate_branch_name(f"paper/{base}-{outline_id}", "paper")
    return name


def _to_write(quest: Quest, outline_id: str) -> list[Event]:
    status = quest.state("status")
    if status.anchor == WRITE_ANCHOR:
        return []
    return [QuestAnchorChanged(anchor=WRITE_ANCHOR, previous=status.anchor, reason=f"paper outline {outline_id} selected")]


def _check_candidate(paper: State, outline_id: str) -> None:
    old = paper.outlines.get(outline_id)
    if old is not None and old.status != "candidate":
        raise Conflict(f"outline {outline_id!r} is {old.status}: change it with mode='revise'", code="outline_selected",
                       outline_id=outline_id)  # fmt: skip


def _check_known(paper: State, outline_id: str) -> None:
    if outline_id not in paper.outlines:
        raise NotFound(f"no paper outline {outline_id!r}", code="unknown_outline", outline_id=outline_id)


def _next_id(paper: State) -> str:
    numbers = [int(i[8:]) for i in paper.outlines if i.startswith("outline-") and i[8:].isdigit()]
    return f"outline-{max(numbers, default=0) + 1:03d}"


def _submitted(stored: list[Event]) -> OutlineSubmitted:
    return next(e for e in stored if isinstance(e, OutlineSubmitted))


def _result(quest: Quest, event: OutlineSubmitted, mode: str) -> PaperOutlineResult:
    paper = quest.state("manuscript")
    outline_id = event.outline.outline_id
    candidate, revision = outline_paths(outline_id)
    chosen = mode != "candidate"
    paths: dict[str, str | None] = {"outline_path": candidate}
    if chosen:
        paths.update(selected_outline_path=PAPER_FILES["selected_outline"], outline_selection_path=PAPER_FILES["outline_selection"],
                     revised_outline_path=revision if mode == "revise" else None,
                     paper_line_state_path=PAPER_FILES["line_state"], paper_contract_path=PAPER_FILES["contract"])  # fmt: skip
    return PaperOutlineResult(
        ok=True, tool_name="submit_paper_outline", mode=mode, outline_id=outline_id, status=OUTLINE_STATUS[mode],
        title=event.outline.title, selected_outline_ref=paper.selected_outline_id, paper_branch=paper.paper_branch,
        worktree_root=str(quest.root / paper.worktree) if chosen and paper.worktree else None, paths=paths,
        next_anchor=WRITE_ANCHOR if chosen else None, seq=event.seq,
    )  # fmt: skip
