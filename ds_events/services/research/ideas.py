"""Research-line commands of the `artifact` namespace: ``submit_idea``,
``activate_branch``, ``complete_quest``.

- ``submit_idea`` (create, line): a new branch ``idea/<quest>-<idea_id>`` with its
  worktree, started from the branch the lineage names (``lineage_intent`` or
  ``foundation_ref``), numbered ("001", "002" ...) in the order idea branches are made;
  the idea's page and draft are materialised as ``ideas/<idea_id>/idea.md`` and
  ``draft.md``; the idea branch becomes the research head and the workspace, and the
  quest moves to ``next_target``. Candidates record the idea without a branch; revise
  rewrites the active idea's text. The branch and worktree are made before the log's
  lock and undone if the events do not reach the log (as in :mod:`.git`).
- ``activate_branch``: an existing branch becomes the workspace again (a worktree made
  for it if it has none), optionally the research head; the quest moves to the stage
  its state calls for.
- ``complete_quest``: only after the user approved it explicitly, answering a blocking
  decision request whose ``reply_schema`` names ``decision_type:
  quest_completion_approval``; emits ``quest.completed`` through
  :func:`ds_events.services.quest.lifecycle.complete`.

Error codes: ``invalid_mode``, ``invalid_submission_mode``, ``invalid_lineage_intent``,
``lineage_not_revisable``, ``invalid_foundation_ref``, ``unknown_foundation``,
``baseline_gate_closed``, ``idea_exists``, ``unknown_idea``, ``idea_has_no_branch``,
``unknown_run``, ``unknown_branch``, ``missing_fields``, ``invalid_anchor``,
``campaign_active``, ``worktree_missing``, ``worktree_exists``, ``approval_required``,
``waiting_for_user``, ``approval_not_explicit``, plus those of :mod:`.git` and
:mod:`ds_events.artifacts.validate`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pygit2

from ds_events.artifacts import git as git_ops
from ds_events.artifacts.validate import check_id, check_materialised, check_text, optional_id
from ds_events.errors import Conflict, Invalid, NotFound
from ds_events.events import Event, QuestAnchorChanged, new_event_id
from ds_events.events.artifact import ArtifactRecorded, BranchPrepared
from ds_events.events.research import BranchActivated, IdeaSubmitted
from ds_events.home import Quest
from ds_events.log import LogError
from ds_events.store import StoreTransaction
from ds_events.paths import confined
from projections.research import format_branch_no, idea_paths

from ds_events.services import quest as quests
from ds_events.services.quest.commands import ANCHORS
from ds_events.services.research.commands import (
    ActivateBranch,
    ActivateBranchResult,
    CompleteQuest,
    CompleteQuestResult,
    SubmitIdea,
    SubmitIdeaResult,
)

__all__ = [
    "submit_idea",
    "activate_branch",
    "complete_quest",
    "resolve_foundation",
    "branch_kind_of",
    "has_branch",
    "baseline_gate",
    "COMPLETION_DECISION_TYPE",
]

COMPLETION_DECISION_TYPE = "quest_completion_approval"
_LINEAGE_ALIASES = {
    "continue_line": "continue_line", "continue": "continue_line", "continue-line": "continue_line",
    "child": "continue_line", "branch_alternative": "branch_alternative", "branch": "branch_alternative",
    "branch-alternative": "branch_alternative", "alternative": "branch_alternative", "sibling": "branch_alternative",
}  # fmt: skip
_FOUNDATION_KINDS = ("current_head", "baseline", "idea", "run", "branch")
_ANCHOR_ALIASES = {"analysis": "analysis-campaign"}
_MAX_LIST = 50
_MAX_SHORT = 300


# -- submit_idea --------------------------------------------------------------------------


def submit_idea(quest: Quest, cmd: SubmitIdea) -> SubmitIdeaResult:
    """Create (on a new idea branch, or as a candidate) or revise an idea."""
    mode = cmd.mode.strip().lower()
    if mode not in ("create", "revise"):
        raise Invalid(f"mode must be create or revise, got {cmd.mode!r}", code="invalid_mode")
    submission_mode = cmd.submission_mode.strip().lower() or "line"
    if submission_mode not in ("line", "candidate"):
        raise Invalid(f"submission_mode must be line or candidate, got {cmd.submission_mode!r}", code="invalid_submission_mode")
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
    source_candidate = optional_id(cmd.source_candidate_id, "source_candidate_id")

    if submission_mode == "candidate":
        event = IdeaSubmitted(
            idea_id=idea_id, title=cmd.title.strip(), submission_mode="candidate", parent_branch=parent,
            lineage_intent=intent, foundation_ref=foundation, next_target=next_anchor,  # type: ignore[arg-type]
            details=_details(cmd, source_candidate), **text,
        )  # fmt: skip
        with quest.transaction() as txn:
            _check_new_idea(quest.state("research"), idea_id)
            stored = txn.append(event)[0]
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
            IdeaSubmitted(idea_id=idea_id, title=cmd.title.strip(), branch=name, branch_no=format_branch_no(number),
                          worktree=worktree, parent_branch=parent, lineage_intent=intent,  # type: ignore[arg-type]
                          foundation_ref=foundation, next_target=next_anchor, details=_details(cmd, source_candidate),
                          **text),
        ]  # fmt: skip
        if not artifacts_now.id_taken(idea_id):
            payload = {"title": cmd.title.strip(), "summary": text["hypothesis"] or text["problem"], "idea_id": idea_id,
                       "lineage_intent": intent, "parent_branch": parent, "foundation_ref": foundation,
                       "flow_type": "idea_submission"}  # fmt: skip
            batch.append(ArtifactRecorded(artifact_id=idea_id, kind="idea", payload=payload, branch=name))
        if status.anchor != next_anchor:
            batch.append(QuestAnchorChanged(anchor=next_anchor, previous=status.anchor, reason=f"idea {idea_id} submitted"))
        return batch

    with git_ops.Rollback() as undo:
        git_ops.create_branches(quest.root, repo, [spec], start_sha, undo)
        stored = append_batch(quest, undo, decide)
    submitted = next(e for e in stored if isinstance(e, IdeaSubmitted))
    return _idea_result(quest, submitted, mode, next_anchor, promotable=False)


def _revise(quest: Quest, cmd: SubmitIdea, text: dict[str, Any], intent: str | None, submission_mode: str) -> SubmitIdeaResult:
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
        old = research.ideas.get(idea_id)
        if old is None:
            raise NotFound(f"no idea {idea_id!r} in this quest", code="unknown_idea", idea_id=idea_id)
        check_materialised(quest.root, list(idea_paths(idea_id)))
        next_anchor = cmd.next_target if cmd.next_target in ANCHORS else old.next_target
        event = IdeaSubmitted(
            idea_id=idea_id, title=title or old.title, mode="revise", submission_mode=old.submission_mode,  # type: ignore[arg-type]
            branch=old.branch, branch_no=old.branch_no, worktree=old.worktree, parent_branch=old.parent_branch,
            lineage_intent=old.lineage_intent, foundation_ref=old.foundation_ref,  # type: ignore[arg-type]
            next_target=next_anchor, details={**old.details, **_details(cmd, None)}, **text,
        )  # fmt: skip
        stored = txn.append(event)[0]
    return _idea_result(quest, stored, "revise", next_anchor, promotable=old.branch is None)


def _idea_result(quest: Quest, event: Any, mode: str, next_anchor: str, *, promotable: bool) -> SubmitIdeaResult:
    page, draft = idea_paths(event.idea_id)
    return SubmitIdeaResult(
        ok=True, mode=mode, submission_mode=event.submission_mode, idea_id=event.idea_id, title=event.title,
        branch=event.branch, branch_no=event.branch_no, worktree=event.worktree,
        worktree_root=str(quest.root / event.worktree) if event.worktree else None,
        lineage_intent=event.lineage_intent, parent_branch=event.parent_branch, foundation_ref=event.foundation_ref,
        foundation_reason=event.foundation_reason or None, idea_md_path=str(quest.root / page),
        idea_draft_path=str(quest.root / draft), next_anchor=next_anchor, promotable=promotable,
        source_candidate_id=event.details.get("source_candidate_id"), seq=event.seq,
    )  # fmt: skip


# -- activate_branch ----------------------------------------------------------------------


def activate_branch(quest: Quest, cmd: ActivateBranch, *, activated_by: str | None = None, anchor_change: bool = True) -> ActivateBranchResult:
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
    idea = next((i for i in reversed(research.ideas.values()) if i.branch == branch), None)
    runs = [r for r in artifacts.runs.values() if r.branch == branch]
    latest_run = max(runs, key=lambda r: r.seq) if runs else None
    idea_id = idea.idea_id if idea else (latest_run.idea_id if latest_run else None)
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
        source_parent_branch=idea.parent_branch if idea else None,
        idea_md_path=str(quest.root / page) if page else None, idea_draft_path=str(quest.root / draft) if draft else None,
        workspace_mode=kind, next_anchor=next_anchor or quest.state("status").anchor,
        promote_to_head=cmd.promote_to_head, seq=stored[0].seq,
    )  # fmt: skip


def _activation_target(repo: pygit2.Repository, research: Any, artifacts: Any, cmd: ActivateBranch) -> tuple[str, str]:
    if cmd.branch is not None:
        if not has_branch(repo, cmd.branch):
            raise NotFound(f"no branch {str(cmd.branch)[:250]!r} in the quest repository", code="unknown_branch",
                           branch=str(cmd.branch)[:250])  # fmt: skip
        return cmd.branch, "branch"
    if cmd.idea_id is not None:
        idea = research.ideas.get(cmd.idea_id)
        if idea is None:
            raise NotFound(f"no idea {cmd.idea_id!r} in this quest", code="unknown_idea", idea_id=cmd.idea_id)
        if idea.branch is None:
            raise Conflict(f"idea {cmd.idea_id!r} is a candidate without a branch: submit it with mode=create first",
                           code="idea_has_no_branch", idea_id=cmd.idea_id)  # fmt: skip
        return idea.branch, "idea_id"
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
    import shutil

    path = quest.root / rel
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    try:
        repo.lookup_worktree(git_ops.worktree_name(branch)).prune(True)
    except (KeyError, pygit2.GitError):
        pass


# -- complete_quest -----------------------------------------------------------------------

_YES = re.compile(r"\b(yes|yep|approve|approved|agree|agreed|confirm|confirmed|accept|accepted|ok|okay|complete it|go ahead|lgtm)\b")
_NO = re.compile(r"\b(no|not|don't|dont|do not|reject|rejected|deny|denied|wait|later|continue|keep going|hold)\b")
_YES_CJK = ("同意", "确认", "批准", "可以结束", "完成吧")
_NO_CJK = ("不同意", "不要", "不行", "别", "暂不", "继续")
_YES_OPTIONS = {"yes", "approve", "approved", "complete", "confirm", "accept", "agree", "done", "finish", "end"}


def complete_quest(quest: Quest, cmd: CompleteQuest) -> CompleteQuestResult:
    """Mark the quest completed, only after an explicit user approval."""
    summary = check_text(cmd.summary, "summary", required=False, max_chars=20_000).strip()
    status = quest.state("status")
    if status.status == "completed":
        return CompleteQuestResult(ok=True, status="already_completed", quest_id=quest.id, interaction_id=None,
                                   approval_message_id=None, message="the quest is already completed", seq=None)  # fmt: skip
    request, reply = completion_approval(quest.state("interactions"))
    summary = summary or "The research line is complete and the user approved ending the quest."
    stored = quests.complete(quest, quests.Complete(summary=f"{summary} (approved by the user in {request.interaction_id})"))
    return CompleteQuestResult(
        ok=True, status="completed", quest_id=quest.id, interaction_id=request.interaction_id,
        approval_message_id=reply.id, message=summary, seq=stored.seq,
    )  # fmt: skip


def completion_approval(interactions: Any) -> tuple[Any, Any]:
    """The completion request and the user's reply approving it, or the refusal that says
    what is missing (``approval_required``, ``waiting_for_user``, ``approval_not_explicit``)."""
    ask = (
        "ask first: interact(kind=\"decision_request\", reply_mode=\"blocking\", "
        f"reply_schema={{\"decision_type\": \"{COMPLETION_DECISION_TYPE}\"}}, message=\"May I end the quest?\")"
    )
    requests = [r for r in interactions.interactions.values() if _is_completion_request(r)]
    if not requests:
        raise Conflict(f"completing the quest needs the user's explicit approval: {ask}", code="approval_required",
                       status="approval_required", decision_type=COMPLETION_DECISION_TYPE)  # fmt: skip
    request = requests[-1]
    replies = [interactions.inbound[i] for i in request.replies if i in interactions.inbound]
    if not replies:
        raise Conflict(f"the completion request {request.interaction_id} waits for the user's answer",
                       code="waiting_for_user", status="waiting_for_user", interaction_id=request.interaction_id)  # fmt: skip
    reply = replies[-1]
    if not _approves(reply.text, reply.option_id):
        raise Conflict(
            f"the user's answer to {request.interaction_id} is not an explicit approval ({reply.text[:120]!r}): "
            f"continue the work, or {ask}",
            code="approval_not_explicit", status="approval_not_explicit", interaction_id=request.interaction_id,
            approval_message_id=reply.id,
        )  # fmt: skip
    return request, reply


def _is_completion_request(record: Any) -> bool:
    if record.kind != "decision_request" or record.reply_mode != "blocking":
        return False
    schema = record.reply_schema or {}
    if schema.get("decision_type") == COMPLETION_DECISION_TYPE:
        return True
    prop = (schema.get("properties") or {}).get("decision_type") if isinstance(schema.get("properties"), dict) else None
    return isinstance(prop, dict) and (prop.get("const") == COMPLETION_DECISION_TYPE or prop.get("enum") == [COMPLETION_DECISION_TYPE])


def _approves(text: str, option_id: str | None) -> bool:
    if option_id is not None:
        return option_id.strip().lower() in _YES_OPTIONS
    said = text.strip().lower()
    if any(w in said for w in _NO_CJK) or _NO.search(said):
        return False
    return any(w in said for w in _YES_CJK) or bool(_YES.search(said))


# -- shared helpers -----------------------------------------------------------------------


def baseline_gate(artifacts: Any) -> str:
    """confirmed | waived | pending: whether ideas may be submitted yet."""
    gate = getattr(artifacts, "baseline_gate", None)  # kept by the artifacts view once waiving exists
    if isinstance(gate, str) and gate in ("confirmed", "waived"):
        return gate
    if getattr(artifacts, "baseline_waived", False):
        return "waived"
    return "confirmed" if artifacts.confirmed_baseline is not None else "pending"


def has_branch(repo: pygit2.Repository, name: Any) -> bool:
    """Whether ``name`` is a local branch; any string may be asked (a huge or malformed
    name is simply not one)."""
    if not isinstance(name, str) or not name or len(name) > 250 or "\x00" in name:
        return False
    try:
        return repo.branches.local.get(name) is not None
    except (ValueError, KeyError, pygit2.GitError, pygit2.InvalidSpecError):
        return False


def branch_kind_of(branch: str | None) -> str:
    """idea | run | analysis | paper | main | other, from the branch name's scheme."""
    if not branch or branch == "main":
        return "main"
    head = branch.split("/", 1)[0]
    return head if head in git_ops.BRANCH_KINDS else "other"


def workspace_branch(research: Any, artifacts: Any) -> str:
    """The branch the agent works on: the research view's workspace, else the active one."""
    return research.current_workspace_branch or artifacts.active_branch or "main"


def resolve_foundation(repo: pygit2.Repository, research: Any, artifacts: Any, ref: dict[str, Any] | str) -> dict[str, Any]:
    """``foundation_ref`` (a branch name, or {kind, ref}) as {kind, ref, branch, label, ...}."""
    if isinstance(ref, str):
        kind, value = ("branch", ref.strip()) if ref.strip() else ("current_head", None)
    else:
        kind = str(ref.get("kind") or "current_head").strip().lower()
        raw = next((ref.get(k) for k in ("ref", "branch", "idea_id", "run_id", "baseline_id") if ref.get(k)), None)
        value = raw.strip() if isinstance(raw, str) and raw.strip() else None
    if kind in ("current_branch", "head"):
        kind = "current_head"
    if kind not in _FOUNDATION_KINDS:
        raise Invalid(f"foundation_ref kind must be one of {', '.join(_FOUNDATION_KINDS)}, got {kind!r}",
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
        if idea is None or idea.branch is None:
            raise NotFound(f"no idea branch for {value!r}", code="unknown_foundation", kind=kind, ref=value)
        return {"kind": "idea", "ref": value, "branch": idea.branch, "idea_id": value, "label": f"idea {value} on {idea.branch}"}
    if kind == "run":
        run = artifacts.runs.get(value)
        if run is None:
            raise NotFound(f"no main experiment {value!r}", code="unknown_foundation", kind=kind, ref=value)
        return {"kind": "run", "ref": value, "branch": run.branch, "run_id": value, "label": f"run {value} on {run.branch}"}
    if not has_branch(repo, value):
        raise NotFound(f"no branch {value[:250]!r} in the quest repository", code="unknown_foundation", kind=kind, ref=value[:250])
    return {"kind": "branch", "ref": value, "branch": value, "label": f"branch {value}"}


def _default_foundation(repo: pygit2.Repository, research: Any, artifacts: Any, branch: str) -> dict[str, Any]:
    """What a new idea on ``branch`` stands on: its latest main result, else its idea, else the branch."""
    runs = [r for r in artifacts.runs.values() if r.branch == branch]
    if runs:
        return resolve_foundation(repo, research, artifacts, {"kind": "run", "ref": max(runs, key=lambda r: r.seq).run})
    idea = _idea_on(research, branch)
    if idea is not None:
        return resolve_foundation(repo, research, artifacts, {"kind": "idea", "ref": idea.idea_id})
    if not has_branch(repo, branch):
        raise NotFound(f"the workspace branch {branch!r} is not in the quest repository", code="unknown_foundation")
    return {"kind": "branch", "ref": branch, "branch": branch, "label": f"branch {branch}"}


def _idea_on(research: Any, branch: str) -> Any:
    return next((i for i in reversed(research.ideas.values()) if i.branch == branch), None)


def _idea_parent(research: Any, branch: str) -> str | None:
    idea = _idea_on(research, branch)
    return idea.parent_branch if idea is not None else None


def _inferred_lineage(parent: str, active: str, active_parent: str | None) -> str | None:
    if parent == active:
        return "continue_line"
    if active_parent is not None and parent == active_parent:
        return "branch_alternative"
    return None


def _lineage(value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    found = _LINEAGE_ALIASES.get(value.strip().lower())
    if found is None:
        raise Invalid(f"lineage_intent must be continue_line or branch_alternative, got {value!r}",
                      code="invalid_lineage_intent")  # fmt: skip
    return found


def _idea_text(cmd: SubmitIdea) -> dict[str, Any]:
    text = {f: check_text(getattr(cmd, f), f, required=False) for f in
            ("problem", "hypothesis", "mechanism", "method_brief", "expected_gain", "decision_reason", "foundation_reason")}  # fmt: skip
    text["draft_markdown"] = check_text(cmd.draft_markdown, "draft_markdown", required=False, max_chars=100_000)
    for name in ("risks", "evidence_paths"):
        items = getattr(cmd, name) or []
        if len(items) > _MAX_LIST:
            raise Invalid(f"{name} takes at most {_MAX_LIST} items", code="invalid_field", field=name)
        text[name] = [check_text(i, name, max_chars=1000).strip() for i in items]
    return text


def _details(cmd: SubmitIdea, source_candidate: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    for name in ("mechanism_family", "change_layer", "source_lens"):
        value = check_text(getattr(cmd, name), name, required=False, max_chars=_MAX_SHORT).strip()
        if value:
            details[name] = value
    if cmd.selection_scores:
        if len(cmd.selection_scores) > _MAX_LIST:
            raise Invalid(f"selection_scores takes at most {_MAX_LIST} entries", code="invalid_field", field="selection_scores")
        details["selection_scores"] = dict(cmd.selection_scores)
    if source_candidate:
        details["source_candidate_id"] = source_candidate
    return details


def _fresh_idea_id(research: Any, artifacts: Any) -> str:
    n = len(research.ideas) + 1
    while f"idea-{n:04d}" in research.ideas or artifacts.id_taken(f"idea-{n:04d}"):
        n += 1
    return f"idea-{n:04d}"


def _check_new_idea(research: Any, idea_id: str) -> None:
    check_id(idea_id, "idea_id")
    old = research.ideas.get(idea_id)
    if old is not None and old.branch is not None:
        raise Conflict(f"idea {idea_id!r} already has its branch {old.branch}: use mode=revise, or another idea_id",
                       code="idea_exists", idea_id=idea_id, branch=old.branch)  # fmt: skip


def append_batch(quest: Quest, undo: git_ops.Rollback, decide: Callable[[StoreTransaction], list[Event]]) -> list[Event]:
    """Append the events ``decide`` returns (under the log's lock) that record the side
    effects registered on ``undo``: they stand if the events are in the log, else they
    are undone. As in :func:`ds_events.services.artifacts.checkpoints.append_recording`, "in the log" is
    judged by the file: a failed sync may still have left the lines there."""
    before = 0
    batch: list[Event] = []
    try:
        with quest.transaction() as txn:
            before = txn.last_seq
            batch = [e if e.id else _with_id(e) for e in decide(txn)]
            stored = txn.append(batch)
            undo.keep()
    except BaseException as exc:
        if batch and not undo.kept and _reached_log(quest, batch[0].id, before):
            undo.keep()
            exc.add_note(f"the {batch[0].type} event reached the log although the append failed, so what it records was kept")
        raise
    return stored


def _with_id(event: Event) -> Event:
    import msgspec

    return msgspec.structs.replace(event, id=new_event_id())


def _reached_log(quest: Quest, event_id: str, after_seq: int) -> bool:
    try:
        for _seq, line in quest.log.iter_lines(after_seq=after_seq):
            if f'"id":"{event_id}"'.encode() in line:
                return True
    except (OSError, LogError):
        return False
    return False
