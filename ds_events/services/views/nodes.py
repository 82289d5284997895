"""What the page shows for a Canvas node: the node with its related actions, the artifact
behind it (its payload), its metrics against the baseline, the files it changed, and its
branch's git state (ahead/behind its parent, head commit).

One read for one click, built from the in-memory views and the quest's git refs. Field
names are those of the tools that serve the same facts to the agent: ``comparisons``
(``baseline``, ``value``, ``delta``, ``direction``, ``better``) and ``progress`` as
``record_main_experiment`` keeps them; ``changed_files`` as ``git(action="diff")``
lists them; ``git`` as ``get_research_map_status`` names them (``head_commit``,
``current_ref``) plus the branch view's ``ahead``/``behind``/``compare_base``.

Refs: a branch node is ``branch:<name>``; event and stage nodes use their Canvas id
(``run:<id>``, ``decision:<id>``, ``stage:<branch>:<stage>``, ...). An unknown ref is
``NotFound`` (``unknown_node``).
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec
import pygit2

from ds_events.artifacts.branches import branch_view
from ds_events.errors import NotFound
from ds_events.home import Quest
from ds_events.services.quest import read_models
from ds_events.services.research.git_tool import ChangedFiles, FileChange, changed_files
from projections.artifacts import MainRun, Slice, State as ArtifactsState, document

__all__ = ["node_details", "NodeDetails", "ArtifactDoc", "Metrics", "BranchGit", "NodeChanges"]


class ArtifactDoc(TypedDict):
    kind: str  # run | baseline | campaign | slice | checkpoint | a record's kind
    id: str
    payload: dict[str, Any]  # the artifacts view's record, as JSON


class Metrics(TypedDict):
    baseline_id: str | None
    primary_metric: str | None
    metrics_summary: dict[str, float]
    comparisons: dict[str, Any]  # metric -> {baseline, value, delta, direction, better}
    progress: dict[str, Any]


class BranchGit(TypedDict):
    branch: str
    branch_kind: str
    head_commit: str | None
    subject: str
    parent_ref: str | None
    compare_base: str | None
    ahead: int
    behind: int
    commit_count: int
    current_ref: str
    is_current: bool
    worktree_root: str | None


class NodeChanges(TypedDict):
    """:class:`ChangedFiles` with what they were measured against (``scope``)."""

    base: str | None
    head: str
    files: list[FileChange]
    file_count: int
    truncated: bool
    scope: str  # since_parent | head_commit


class NodeDetails(TypedDict):
    quest_id: str
    seq: int
    ref: str
    node_kind: str
    node: dict[str, Any] | None  # the node trace (read_models.node_trace), when the traces know it
    artifact: ArtifactDoc | None
    metrics: Metrics | None
    git: BranchGit | None
    changed_files: NodeChanges | None


def node_details(quest: Quest, ref: str) -> NodeDetails:
    """Everything the page shows for the node ``ref`` (see the module docstring)."""
    try:
        node: dict[str, Any] | None = read_models.node_trace(quest, ref)
    except NotFound:
        node = None  # a git branch the traces never saw (e.g. made by hand) still has a git state
    repo = quest.repo()
    quest.views.catch_up(keep=False)
    with quest.views.lend("artifacts") as lent:
        state: ArtifactsState = lent
        branches = {n["id"]: n for n in branch_view(repo, state, quest.id)["nodes"]}
        name = ref.removeprefix("branch:") if ref.startswith("branch:") else None
        if node is None and (name is None or name not in branches):
            raise NotFound(f"no node {ref!r} in quest {quest.id} (or it left the window)", code="unknown_node", ref=ref)
        branch = name if name is not None else (node or {}).get("branch")
        bnode = branches.get(branch) if branch else None
        artifact, metrics = _artifact(state, ref, bnode)
        seq, git = state.last_seq, _git(bnode, state.active_branch) if branch else None
    return {
        "quest_id": quest.id,
        "seq": seq,
        "ref": ref,
        "node_kind": node["node_kind"] if node else "branch_node",
        "node": node,
        "artifact": artifact,
        "metrics": metrics,
        "git": git,
        "changed_files": _changed(repo, ref, bnode),
    }


# -- private helpers ----------------------------------------------------------------------


def _artifact(state: ArtifactsState, ref: str, bnode: dict[str, Any] | None) -> tuple[ArtifactDoc | None, Metrics | None]:
    """(artifact, metrics) behind a node: the record, run, baseline, campaign, slice or
    checkpoint its ref names; for a branch node, the branch's run or slice."""
    kind, _, key = ref.partition(":")
    if kind == "branch" and bnode is not None:
        if bnode.get("run_id") and bnode.get("run_kind") == "main_experiment" and bnode["run_id"] in state.runs:
            kind, key = "run", bnode["run_id"]
        elif bnode.get("run_kind") == "analysis_slice":
            info = state.branches.get(bnode["id"])
            if info is not None and info.campaign_id and info.slice_id:
                kind, key = "slice", f"{info.campaign_id}/{info.slice_id}"
    if kind == "run" and key in state.runs:
        run = state.runs[key]
        return _doc("run", key, run), _run_metrics(run)
    if kind == "baseline" and key in state.baselines:
        base = state.baselines[key]
        conf = base.confirmed
        metrics: Metrics | None = None if conf is None else {
            "baseline_id": key, "primary_metric": conf.primary_metric, "metrics_summary": dict(conf.metrics_summary),
            "comparisons": {}, "progress": {},
        }  # fmt: skip
        return _doc("baseline", key, base), metrics
    if kind == "campaign" and key in state.campaigns:
        return _doc("campaign", key, state.campaigns[key]), None
    if kind == "slice":
        campaign_id, _, slice_id = key.partition("/")
        campaign = state.campaigns.get(campaign_id)
        found = [s for s in campaign.slices if s.slice_id == slice_id] if campaign is not None else []
        if found:
            return _doc("slice", key, found[0]), _slice_metrics(state, found[0])
    if kind == "checkpoint":
        done = [c for c in state.checkpoints if c.sha == key]  # the view keeps the last few; git has the rest
        return (_doc("checkpoint", key, done[-1]) if done else None), None
    if key in state.records:
        return _doc(state.records[key].kind, key, state.records[key]), None
    return None, None


def _doc(kind: str, key: str, value: msgspec.Struct) -> ArtifactDoc:
    return {"kind": kind, "id": key, "payload": document(value)}


def _run_metrics(run: MainRun) -> Metrics:
    return {
        "baseline_id": run.baseline_id, "primary_metric": run.primary_metric or None,
        "metrics_summary": dict(run.metrics_summary), "comparisons": msgspec.to_builtins(run.comparisons),
        "progress": msgspec.to_builtins(run.progress),
    }  # fmt: skip


def _slice_metrics(state: ArtifactsState, slice_: Slice) -> Metrics | None:
    """A slice's metrics against the confirmed baseline's contract values (the same
    comparison a main run gets when it is recorded)."""
    if not slice_.metrics_summary:
        return None
    base_id = state.confirmed_baseline
    conf = state.baselines[base_id].confirmed if base_id is not None and base_id in state.baselines else None
    contract = (conf.contract.get("metrics") or {}) if conf is not None else {}
    comparisons = {}
    for metric, value in sorted(slice_.metrics_summary.items()):
        entry = contract.get(metric)
        if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
            delta = value - entry["value"]
            direction = entry.get("direction", "higher")
            comparisons[metric] = {"baseline": entry["value"], "value": value, "delta": delta, "direction": direction,
                                   "better": delta > 0 if direction == "higher" else delta < 0}  # fmt: skip
    primary = conf.primary_metric if conf is not None else None
    return {"baseline_id": base_id, "primary_metric": primary, "metrics_summary": dict(slice_.metrics_summary),
            "comparisons": comparisons, "progress": {}}  # fmt: skip


def _git(bnode: dict[str, Any] | None, active: str) -> BranchGit | None:
    if bnode is None:
        return None
    return {
        "branch": bnode["id"], "branch_kind": bnode["branch_kind"], "head_commit": bnode["head"],
        "subject": bnode["subject"], "parent_ref": bnode["parent_ref"], "compare_base": bnode["compare_base"],
        "ahead": bnode["ahead"], "behind": bnode["behind"], "commit_count": bnode["commit_count"],
        "current_ref": active, "is_current": bnode["id"] == active, "worktree_root": bnode["worktree_root"],
    }  # fmt: skip


def _changed(repo: pygit2.Repository, ref: str, bnode: dict[str, Any] | None) -> NodeChanges | None:
    """A branch (or a run or slice on one): what its head changed since it left its parent
    (the merge base), ``scope`` ``since_parent``. A checkpoint, main, and a branch that
    adds no commit to its parent (a run recorded at its idea's head, as
    ``record_main_experiment`` makes it): its head commit against that commit's parent,
    ``scope`` ``head_commit``. Other nodes: None."""
    kind, _, key = ref.partition(":")
    if kind == "checkpoint":
        return _scoped(changed_files(repo, None, key), "head_commit")
    if bnode is None or kind not in ("branch", "run", "slice"):
        return None
    if bnode["compare_base"] is None or bnode["compare_base"] == bnode["head"]:
        return _scoped(changed_files(repo, None, bnode["head"]), "head_commit")
    return _scoped(changed_files(repo, bnode["compare_base"], bnode["head"]), "since_parent")


def _scoped(changes: ChangedFiles, scope: str) -> NodeChanges:
    return {**changes, "scope": scope}
