"""``submit_idea`` of the `artifact` namespace, and where an idea's branch starts from.

- create, line: a new branch ``idea/<quest>-<idea_id>`` with its worktree, started from
  the branch the lineage names (``lineage_intent`` or ``foundation_ref``), numbered
  ("001", "002" ...) in the order idea branches are made; the idea's page and draft are
  materialised as ``ideas/<idea_id>/idea.md`` and ``draft.md``; the idea branch becomes
  the research head and the workspace, and the quest moves to ``next_target``. The
  branch and worktree are made before the log's lock and undone if the events do not
  reach the log (:func:`.batch.append_batch`).
- create, candidate: the idea is recorded without a branch (promote it later with
  mode=create and the same idea_id).
- revise: the active idea's text is rewritten; its lineage stays.

The event carries the command's text as it was validated (:class:`IdeaText`), and the
view keeps that event (:class:`projections.research.Idea`).

Error codes: ``invalid_mode``, ``invalid_submission_mode``, ``invalid_lineage_intent``,
``lineage_not_revisable``, ``invalid_foundation_ref``, ``unknown_foundation``,
``baseline_gate_closed``, ``idea_exists``, ``unknown_idea``, ``invalid_field``, plus
those of :mod:`ds_events.artifacts.git` and :mod:`ds_events.artifacts.validate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.validate import check_id, check_materialised, check_text, optional_id
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged
from ds_events.events.artifact import ArtifactRecorded, BranchPrepared
from ds_events.events.research import Foundation, FoundationKind, IdeaDetails, IdeaSubmitted, IdeaText, LineageIntent, SubmissionMode
from ds_events.home import Quest
from ds_events.services.quest.commands import ANCHORS
from ds_events.services.research.batch import append_batch
from ds_events.services.research.commands import SubmitIdea, SubmitIdeaResult
from ds_events.services.research.lineage import baseline_gate, has_branch, idea_on, workspace_branch
from ds_events.store import StoreTransaction
from projections.artifacts import State as ArtifactsState
from projections.research import State as ResearchState, format_branch_no, idea_paths

__all__ = ["submit_idea", "resolve_foundation"]

_LINEAGE_ALIASES: dict[str, LineageIntent] = {
    "continue_line": "continue_line", "continue": "continue_line", "continue-line": "continue_line",
    "child": "continue_line", "branch_alternative": "branch_alternative", "branch": "branch_alternative",
    "branch-alternative": "branch_alternative", "alternative": "branch_alternative", "sibling": "branch_alternative",
}  # fmt: skip
_FOUNDATION_KINDS: tuple[FoundationKind, ...] = ("current_head", "baseline", "idea", "run", "branch")
_MAX_LIST = 50
_MAX_SHORT = 300


def submit_idea(quest: Quest, cmd: SubmitIdea) -> SubmitIdeaResult:
    """Create (on a new idea branch, or as a candidate) or revise an idea."""
    mode = cmd.mode.strip().lower()
    if mode not in ("create", "revise"):
        raise Invalid(f"mode must be create or revise, got {cmd.mode!r}", code="invalid_mode")
    submission_mode = _submission_mode(cmd.submission_mode)
    intent = _lineage(cmd.lineage_intent)
    text = _idea_text(cmd)
    if baseline_gate(quest.state("artifacts")) == "pending":
        raise Conflict(
            "submit_idea needs a confirmed or waived baseline first: confirm_baseline(...) (or waive_baseline(...))",
            code="baseline_gate_closed",
        )
    if mode == "revise":
        return _revise(quest, cmd, text, intent, submission_mode)
    check_text(cmd.title, "title", max_chars=_MAX_SHORT)
    research, artifacts = quest.state("research"), quest.state("artifacts")
    idea_id = optional_id(cmd.idea_id, "idea_id") or _fresh_idea_id(research, artifacts)
    _check_new_idea(research, idea_id)
    check_materialised(quest.root, list(idea_paths(idea_id)))
    repo = quest.repo()
    active = workspace_branch(research, artifacts)
    if cmd.foundation_ref is None:
        intent = intent or "continue_line"
        parent = _idea_parent(research, active) or active if intent == "branch_alternative" else active
        foundation = _default_foundation(repo, research, artifacts, parent)
    else:
        foundation = resolve_foundation(repo, research, artifacts, cmd.foundation_ref)
        parent = foundation["branch"]
        intent = intent or _inferred_lineage(parent, active, _idea_parent(research, active))
    next_anchor = cmd.next_target if cmd.next_target in ANCHORS else "experiment"
    details = _details(cmd, optional_id(cmd.source_candidate_id, "source_candidate_id"))
    title = cmd.title.strip()

    if submission_mode == "candidate":
        candidate = IdeaSubmitted(
            idea_id=idea_id, title=title, submission_mode="candidate", parent_branch=parent, lineage_intent=intent,
            foundation_ref=dict(foundation), next_target=next_anchor, details=dict(details), **text,
        )  # fmt: skip
        with quest.transaction() as txn:
            _check_new_idea(quest.state("research"), idea_id)
            stored = txn.append(candidate)
        return _idea_result(quest, stored, mode, next_anchor, promotable=True)

    name = git_ops.validate_branch_name(f"idea/{quest.id}-{idea_id}", "idea")
    worktree = git_ops.worktree_path(name)
    spec = git_ops.BranchSpec(branch=name, kind="idea", worktree=worktree)
    start_sha, start_label = git_ops.resolve_start(repo, parent, "main")
    git_ops.check_free(quest.root, repo, [spec])

    def decide(txn: StoreTransaction) -> list[Event]:
        research_now, artifacts_now, status = quest.state("research"), quest.state("artifacts"), quest.state("status")
        _check_new_idea(research_now, idea_id)
        number = max(research_now.branch_numbers.values(), default=0) + 1
        batch: list[Event] = [
            BranchPrepared(branch=name, branch_kind="idea", start_sha=start_sha, start_point=start_label,
                           worktree=worktree, idea_id=idea_id, activate=True),
            IdeaSubmitted(idea_id=idea_id, title=title, branch=name, branch_no=format_branch_no(number),
                          worktree=worktree, parent_branch=parent, lineage_intent=intent, foundation_ref=dict(foundation),
                          next_target=next_anchor, details=dict(details), **text),
        ]  # fmt: skip
        if not artifacts_now.id_taken(idea_id):
            payload = {"title": title, "summary": text["hypothesis"] or text["problem"], "idea_id": idea_id,
                       "lineage_intent": intent, "parent_branch": parent, "foundation_ref": dict(foundation),
                       "flow_type": "idea_submission"}  # fmt: skip
            batch.append(ArtifactRecorded(artifact_id=idea_id, kind="idea", payload=payload, branch=name))
        if status.anchor != next_anchor:
            batch.append(QuestAnchorChanged(anchor=next_anchor, previous=status.anchor, reason=f"idea {idea_id} submitted"))
        return batch

    with git_ops.Rollback() as undo:
        git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
        stored_batch = append_batch(quest, undo, decide)
    return _idea_result(quest, _submitted(stored_batch), mode, next_anchor, promotable=False)


def resolve_foundation(
    repo: pygit2.Repository, research: ResearchState, artifacts: ArtifactsState, ref: dict[str, Any] | str
) -> Foundation:
    """``foundation_ref`` (a branch name, or {kind, ref}) as the :class:`Foundation` it names."""
    if isinstance(ref, str):
        asked, value = ("branch", ref.strip()) if ref.strip() else ("current_head", None)
    else:
        asked = str(ref.get("kind") or "current_head").strip().lower()
        raw = next((ref.get(k) for k in ("ref", "branch", "idea_id", "run_id", "baseline_id") if ref.get(k)), None)
        value = raw.strip() if isinstance(raw, str) and raw.strip() else None
    if asked in ("current_branch", "head"):
        asked = "current_head"
    kind = next((k for k in _FOUNDATION_KINDS if k == asked), None)
    if kind is None:
        raise Invalid(f"foundation_ref kind must be one of {', '.join(_FOUNDATION_KINDS)}, got {asked!r}",
                      code="invalid_foundation_ref")  # fmt: skip
    if kind == "current_head":
        branch = research.research_head_branch or workspace_branch(research, artifacts)
        return {"kind": "current_head", "ref": value or branch, "branch": branch, "label": f"current head {branch}"}
    if kind == "baseline":
        baseline_id = value or artifacts.confirmed_baseline or "baseline"
        return {"kind": "baseline", "ref": baseline_id, "branch": "main", "baseline_id": baseline_id,
                "label": f"baseline {baseline_id} on main"}  # fmt: skip
    if value is None:
        raise Invalid(f"foundation_ref of kind {kind} needs a ref", code="invalid_foundation_ref")
    if kind == "idea":
        idea = research.ideas.get(value)
        if idea is None or idea.submitted.branch is None:
            raise NotFound(f"no idea branch for {value!r}", code="unknown_foundation", kind=kind, ref=value)
        on = idea.submitted.branch
        return {"kind": "idea", "ref": value, "branch": on, "idea_id": value, "label": f"idea {value} on {on}"}
    if kind == "run":
        run = artifacts.runs.get(value)
        if run is None:
            raise NotFound(f"no main experiment {value!r}", code="unknown_foundation", kind=kind, ref=value)
        return {"kind": "run", "ref": value, "branch": run.branch, "run_id": value, "label": f"run {value} on {run.branch}"}
    if not has_branch(repo, value):
        raise NotFound(f"no branch {value[:250]!r} in the quest repository", code="unknown_foundation", kind=kind, ref=value[:250])
    return {"kind": "branch", "ref": value, "branch": value, "label": f"branch {value}"}


# -- private helpers ----------------------------------------------------------------------


def _revise(
    quest: Quest, cmd: SubmitIdea, text: IdeaText, intent: LineageIntent | None, submission_mode: SubmissionMode
) -> SubmitIdeaResult:
    if intent is not None:
        raise Invalid("mode=revise keeps the idea's lineage: omit lineage_intent (use mode=create for a new line)",
                      code="lineage_not_revisable")  # fmt: skip
    if submission_mode != "line":
        raise Invalid("mode=revise takes submission_mode=line", code="invalid_submission_mode")
    title = check_text(cmd.title, "title", required=False, max_chars=_MAX_SHORT).strip()
    with quest.transaction() as txn:
        research = quest.state("research")
        idea_id = optional_id(cmd.idea_id, "idea_id") or research.active_idea_id
        if idea_id is None:
            raise NotFound("there is no active idea to revise: pass idea_id or create one", code="unknown_idea")
        record = research.ideas.get(idea_id)
        if record is None:
            raise NotFound(f"no idea {idea_id!r} in this quest", code="unknown_idea", idea_id=idea_id)
        old = record.submitted
        check_materialised(quest.root, list(idea_paths(idea_id)))
        next_anchor = cmd.next_target if cmd.next_target in ANCHORS else old.next_target
        revision = IdeaSubmitted(
            idea_id=idea_id, title=title or old.title, mode="revise", submission_mode=old.submission_mode,
            branch=old.branch, branch_no=old.branch_no, worktree=old.worktree, parent_branch=old.parent_branch,
            lineage_intent=old.lineage_intent, foundation_ref=old.foundation_ref,
            next_target=next_anchor, details={**old.details, **_details(cmd, None)}, **text,
        )  # fmt: skip
        stored = txn.append(revision)
    return _idea_result(quest, stored, "revise", next_anchor, promotable=old.branch is None)


def _idea_result(quest: Quest, event: IdeaSubmitted, mode: str, next_anchor: str, *, promotable: bool) -> SubmitIdeaResult:
    page, draft = idea_paths(event.idea_id)
    result = SubmitIdeaResult(
        ok=True, mode=mode, submission_mode=event.submission_mode, idea_id=event.idea_id, title=event.title,
        lineage_intent=event.lineage_intent, parent_branch=event.parent_branch, foundation_ref=event.foundation_ref,
        foundation_reason=event.foundation_reason or None, idea_md_path=str(quest.root / page),
        idea_draft_path=str(quest.root / draft), next_anchor=next_anchor, promotable=promotable,
        source_candidate_id=event.details.get("source_candidate_id"), seq=event.seq,
        method_brief=event.method_brief, selection_scores=event.details.get("selection_scores"),
        mechanism_family=event.details.get("mechanism_family", ""), change_layer=event.details.get("change_layer", ""),
        source_lens=event.details.get("source_lens", ""),
    )  # fmt: skip
    if event.branch is None:  # a candidate: no branch keys (see SubmitIdeaResult)
        result.candidate_root = str((quest.root / page).parent)
    else:
        result.branch, result.branch_no, result.worktree = event.branch, event.branch_no, event.worktree
        result.worktree_root = str(quest.root / event.worktree) if event.worktree else None
    return result


def _submitted(stored: Sequence[Event]) -> IdeaSubmitted:
    """The idea event of an appended batch, as stored (with its seq)."""
    return next(e for e in stored if isinstance(e, IdeaSubmitted))


def _default_foundation(repo: pygit2.Repository, research: ResearchState, artifacts: ArtifactsState, branch: str) -> Foundation:
    """What a new idea on ``branch`` stands on: its latest main result, else its idea, else the branch."""
    runs = [r for r in artifacts.runs.values() if r.branch == branch]
    if runs:
        return resolve_foundation(repo, research, artifacts, {"kind": "run", "ref": max(runs, key=lambda r: r.seq).run})
    idea = idea_on(research, branch)
    if idea is not None:
        return resolve_foundation(repo, research, artifacts, {"kind": "idea", "ref": idea.submitted.idea_id})
    if not has_branch(repo, branch):
        raise NotFound(f"the workspace branch {branch!r} is not in the quest repository", code="unknown_foundation")
    return {"kind": "branch", "ref": branch, "branch": branch, "label": f"branch {branch}"}


def _idea_parent(research: ResearchState, branch: str) -> str | None:
    idea = idea_on(research, branch)
    return idea.submitted.parent_branch if idea is not None else None


def _inferred_lineage(parent: str, active: str, active_parent: str | None) -> LineageIntent | None:
    if parent == active:
        return "continue_line"
    if active_parent is not None and parent == active_parent:
        return "branch_alternative"
    return None


def _submission_mode(value: str) -> SubmissionMode:
    wanted = value.strip().lower() or "line"
    if wanted == "line":
        return "line"
    if wanted == "candidate":
        return "candidate"
    raise Invalid(f"submission_mode must be line or candidate, got {value!r}", code="invalid_submission_mode")


def _lineage(value: str | None) -> LineageIntent | None:
    if value is None or not value.strip():
        return None
    found = _LINEAGE_ALIASES.get(value.strip().lower())
    if found is None:
        raise Invalid(f"lineage_intent must be continue_line or branch_alternative, got {value!r}",
                      code="invalid_lineage_intent")  # fmt: skip
    return found


def _idea_text(cmd: SubmitIdea) -> IdeaText:
    """The command's text, checked, as the event stores it."""
    return IdeaText(
        problem=check_text(cmd.problem, "problem", required=False),
        hypothesis=check_text(cmd.hypothesis, "hypothesis", required=False),
        mechanism=check_text(cmd.mechanism, "mechanism", required=False),
        method_brief=check_text(cmd.method_brief, "method_brief", required=False),
        expected_gain=check_text(cmd.expected_gain, "expected_gain", required=False),
        decision_reason=check_text(cmd.decision_reason, "decision_reason", required=False),
        foundation_reason=check_text(cmd.foundation_reason, "foundation_reason", required=False),
        draft_markdown=check_text(cmd.draft_markdown, "draft_markdown", required=False, max_chars=100_000),
        risks=_text_list(cmd.risks, "risks"),
        evidence_paths=_text_list(cmd.evidence_paths, "evidence_paths"),
    )


def _text_list(items: list[str] | None, name: str) -> list[str]:
    if items and len(items) > _MAX_LIST:
        raise Invalid(f"{name} takes at most {_MAX_LIST} items", code="invalid_field", field=name)
    return [check_text(i, name, max_chars=1000).strip() for i in items or []]


def _details(cmd: SubmitIdea, source_candidate: str | None) -> IdeaDetails:
    details: IdeaDetails = {}
    if family := _short(cmd.mechanism_family, "mechanism_family"):
        details["mechanism_family"] = family
    if layer := _short(cmd.change_layer, "change_layer"):
        details["change_layer"] = layer
    if lens := _short(cmd.source_lens, "source_lens"):
        details["source_lens"] = lens
    if cmd.selection_scores:
        if len(cmd.selection_scores) > _MAX_LIST:
            raise Invalid(f"selection_scores takes at most {_MAX_LIST} entries", code="invalid_field", field="selection_scores")
        details["selection_scores"] = dict(cmd.selection_scores)
    if source_candidate:
        details["source_candidate_id"] = source_candidate
    return details


def _short(value: str, name: str) -> str:
    return check_text(value, name, required=False, max_chars=_MAX_SHORT).strip()


def _fresh_idea_id(research: ResearchState, artifacts: ArtifactsState) -> str:
    n = len(research.ideas) + 1
    while f"idea-{n:04d}" in research.ideas or artifacts.id_taken(f"idea-{n:04d}"):
        n += 1
    return f"idea-{n:04d}"


def _check_new_idea(research: ResearchState, idea_id: str) -> None:
    check_id(idea_id, "idea_id")
    old = research.ideas.get(idea_id)
    if old is not None and old.submitted.branch is not None:
        raise Conflict(f"idea {idea_id!r} already has its branch {old.submitted.branch}: use mode=revise, or another idea_id",
                       code="idea_exists", idea_id=idea_id, branch=old.submitted.branch)  # fmt: skip
