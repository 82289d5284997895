"""The `artifacts` view: records, baselines and metric contracts, main experiments,
analysis campaigns, branches, checkpoints and the branch graph.

Materialises ``artifacts/<kind dir>/<id>.json`` for every record, baseline, main
experiment and campaign, each confirmed baseline's ``<baseline_path>/json/metric_contract.json``,
``artifacts/graphs/git_graph.{json,svg}`` and ``SUMMARY.md`` (which replaces the simpler
one ``projections.status`` writes: this module comes later in the registry).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec
from msgspec.structs import replace

from ds_events.events import Event
from ds_events.events.research import BranchActivated, IdeaSubmitted
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    BaselineWaived,
    BranchPrepared,
    GitCheckpointed,
    GitGraphRendered,
    MainExperimentRecorded,
    SummaryRefreshed,
)

from . import status as status_projection
from .base import Files, Projection

__all__ = [
    "PROJECTION",
    "State",
    "Record",
    "Baseline",
    "Confirmation",
    "MainRun",
    "Campaign",
    "Slice",
    "BranchInfo",
    "Checkpoint",
    "KIND_DIRS",
    "record_path",
    "newest_records",
    "render_graph_svg",
    "run_page_path",
]

# kind -> directory under artifacts/
KIND_DIRS: dict[str, str] = {
    "baseline": "baselines",
    "idea": "ideas",
    "decision": "decisions",
    "progress": "progress",
    "answer": "answers",
    "milestone": "milestones",
    "run": "runs",
    "report": "reports",
    "approval": "approvals",
    "graph": "graphs",
}
_RECENT = 20
T = TypeVar("T")


class Record(msgspec.Struct, kw_only=True):
    artifact_id: str
    kind: str
    seq: int
    ts: str
    branch: str
    payload: dict[str, Any] = {}


class Confirmation(msgspec.Struct, kw_only=True):
    variant_id: str | None
    baseline_path: str
    contract_path: str
    contract: dict[str, Any]
    metrics_summary: dict[str, float]
    primary_metric: str
    metric_directions: dict[str, str]
    summary: str
    seq: int
    ts: str
    comment: str = ""
    baseline_kind: str = ""
    overwrite: dict[str, Any] | None = None


class Baseline(msgspec.Struct, kw_only=True):
    baseline_id: str
    published_seq: int | None = None
    payload: dict[str, Any] = {}
    variant_ids: list[str] = []
    confirmed: Confirmation | None = None
    source_quest: str | None = None  # attached from the home's registry, published by that quest


class MainRun(msgspec.Struct, kw_only=True):
    run: str
    title: str
    baseline_id: str
    metrics_summary: dict[str, float]
    comparisons: dict[str, dict[str, Any]]
    primary_metric: str
    branch: str
    head_sha: str | None
    idea_id: str | None
    summary: str
    evaluation_protocol: dict[str, Any] | None
    details: dict[str, Any]
    seq: int
    ts: str
    hypothesis: str = ""
    setup: str = ""
    execution: str = ""
    results: str = ""
    conclusion: str = ""
    evaluation_summary: dict[str, Any] | None = None
    evidence_paths: list[str] = []
    metric_rows: list[dict[str, Any]] = []
    progress: dict[str, Any] = {}
    verdict: str = ""
    report: dict[str, Any] = {}


class Slice(msgspec.Struct, kw_only=True):
    slice_id: str
    title: str
    goal: str
    branch: str
    worktree: str | None
    status: str = "pending"
    metrics_summary: dict[str, float] = {}
    summary: str = ""
    head_sha: str | None = None
    details: dict[str, Any] = {}
    recorded_seq: int | None = None
    setup: str = ""
    execution: str = ""
    results: str = ""
    evaluation_summary: dict[str, Any] | None = None
    evidence_paths: list[str] = []
    metric_rows: list[dict[str, Any]] = []
    report: dict[str, Any] = {}


class Campaign(msgspec.Struct, kw_only=True):
    campaign_id: str
    title: str
    goal: str
    parent_run: str | None
    parent_branch: str
    parent_sha: str
    slices: list[Slice]
    seq: int
    ts: str

    @property
    def done(self) -> int:
        return sum(1 for s in self.slices if s.status != "pending")

    def slice(self, slice_id: str) -> Slice | None:
        return next((s for s in self.slices if s.slice_id == slice_id), None)


class BranchInfo(msgspec.Struct, kw_only=True):
    branch: str
    kind: str
    start_sha: str
    start_point: str
    worktree: str | None
    run: str | None
    idea_id: str | None
    campaign_id: str | None
    slice_id: str | None
    seq: int
    head_sha: str | None = None  # last checkpoint on it


class Checkpoint(msgspec.Struct, kw_only=True):
    sha: str
    message: str
    branch: str
    worktree: str | None
    skipped: int
    seq: int
    ts: str


class State(msgspec.Struct, kw_only=True):
    last_seq: int = 0
    quest: status_projection.StatusState = msgspec.field(default_factory=status_projection.StatusState)
    records: dict[str, Record] = {}
    counters: dict[str, int] = {}  # kind -> records of that kind (ids are numbered from it)
    recent: dict[str, list[str]] = {}  # kind -> the last record ids, newest last
    # An index for listing the newest records (of a kind) at the cost of what is listed
    # (see newest_records): the seq of every record event -> (its artifact id, the seq of
    # the record of the same kind before it, or 0), in seq order; and each kind's newest.
    by_seq: dict[int, tuple[str, int]] = {}
    newest: dict[str, int] = {}
    baselines: dict[str, Baseline] = {}
    attached: dict[str, str | None] | None = None  # {"baseline_id", "variant_id"}
    confirmed_baseline: str | None = None  # the most recently confirmed baseline id
    runs: dict[str, MainRun] = {}
    latest_run: str | None = None
    campaigns: dict[str, Campaign] = {}
    branches: dict[str, BranchInfo] = {}
    active_branch: str = "main"
    active_worktree: str | None = None
    checkpoints: list[Checkpoint] = []  # the last few
    checkpoint_count: int = 0
    refreshes: int = 0
    last_refresh_reason: str = ""
    graph: dict[str, Any] | None = None
    # The baseline gate: pending until a baseline is confirmed or the gate is waived.
    baseline_gate: str = "pending"
    waiver: dict[str, Any] | None = None  # {"reason", "comment", "seq"}
    # Ideas submitted as candidates (no branch yet): idea_id -> the brief, until promoted.
    candidate_ideas: dict[str, dict[str, Any]] = {}

    def id_taken(self, artifact_id: str) -> bool:
        """Ids share one namespace: records, baselines, main runs and campaigns."""
        return (
            artifact_id in self.records
            or artifact_id in self.baselines
            or artifact_id in self.runs
            or artifact_id in self.campaigns
        )


def record_path(kind: str, artifact_id: str) -> str:
    return f"artifacts/{KIND_DIRS[kind]}/{artifact_id}.json"


def run_page_path(run: str) -> str:
    """The readable page of a main experiment, beside its JSON record."""
    return f"artifacts/runs/{run}.md"


def newest_records(state: State, limit: int, *, kind: str | None = None) -> list[Record]:
    """The newest ``limit`` records (of ``kind`` if given), newest first.

    Costs what it returns, not the number of records: it walks the ``by_seq`` index back
    from the newest record event (of that kind). Ids are unique in a log the artifact
    service wrote; an id recorded again (a hand-made log) is listed once, at its latest
    recording, under the kind it has now.
    """
    out: list[Record] = []
    if limit <= 0:
        return out
    if kind is None:
        for seq in reversed(state.by_seq):
            record = state.records.get(state.by_seq[seq][0])
            if record is not None and record.seq == seq:  # not superseded by a later recording
                out.append(record)
                if len(out) >= limit:
                    break
        return out
    seq = state.newest.get(kind, 0)
    while seq and len(out) < limit:
        artifact_id, before = state.by_seq[seq]
        record = state.records.get(artifact_id)
        if record is not None and record.seq == seq:
            out.append(record)
        seq = before
    return out


# -- apply ------------------------------------------------------------------------------


def apply(state: State, event: Event) -> State:
    """Fold ``event`` into ``state``.

    A record already in the state (a baseline, a branch, a campaign and its slices, the
    quest's status, a list in ``recent``) is never changed in place: it is replaced by
    a new one, so whoever was handed a record earlier keeps seeing what it was. Only the
    state's own top-level fields and containers are updated.
    """
    state.last_seq = event.seq
    state.quest = status_projection.apply(_thaw_status(state.quest), event)
    match event:
        case ArtifactRecorded():
            state.records[event.artifact_id] = _copy(Record, event)
            state.counters[event.kind] = state.counters.get(event.kind, 0) + 1
            state.recent[event.kind] = [*state.recent.get(event.kind, ()), event.artifact_id][-_RECENT:]
            state.by_seq[event.seq] = (event.artifact_id, state.newest.get(event.kind, 0))
            state.newest[event.kind] = event.seq
        case BranchPrepared():
            state.branches[event.branch] = _copy(BranchInfo, event, kind=event.branch_kind, head_sha=event.start_sha)
            if event.activate:
                state.active_branch, state.active_worktree = event.branch, event.worktree
        case GitCheckpointed():
            state.checkpoint_count += 1
            state.checkpoints.append(_copy(Checkpoint, event, skipped=len(event.skipped)))
            del state.checkpoints[:-_RECENT]
            info = state.branches.get(event.branch)
            if info is not None:
                state.branches[event.branch] = replace(info, head_sha=event.sha)
        case BaselinePublished():
            baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
            state.baselines[event.baseline_id] = replace(
                baseline, published_seq=event.seq, payload=event.payload, variant_ids=list(event.variant_ids)
            )
        case BaselineAttached():
            state.attached = {"baseline_id": event.baseline_id, "variant_id": event.variant_id}
            if event.entry is not None:
                baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
                state.baselines[event.baseline_id] = replace(
                    baseline,
                    payload=dict(event.entry.get("payload") or {}),
                    variant_ids=list(event.entry.get("variant_ids") or []),
                    source_quest=event.source_quest,
                )
        case BaselineConfirmed():
            baseline = state.baselines.get(event.baseline_id) or Baseline(baseline_id=event.baseline_id)
            state.baselines[event.baseline_id] = replace(baseline, confirmed=_copy(Confirmation, event))
            state.confirmed_baseline = event.baseline_id
            state.baseline_gate, state.waiver = "confirmed", None
        case BaselineWaived():
            state.baseline_gate = "waived"
            state.waiver = {"reason": event.reason, "comment": event.comment, "seq": event.seq, "ts": event.ts}
        case MainExperimentRecorded():
            state.runs[event.run] = _copy(MainRun, event)
            state.latest_run = event.run
        case AnalysisCampaignCreated():
            campaign = _copy(Campaign, event, slices=[msgspec.convert(s, Slice) for s in event.slices])
            state.campaigns[event.campaign_id] = campaign
            for s in campaign.slices:
                state.branches[s.branch] = BranchInfo(
                    branch=s.branch,
                    kind="analysis",
                    start_sha=event.parent_sha,
                    start_point=event.parent_branch,
                    worktree=s.worktree,
                    run=event.parent_run,
                    idea_id=None,
                    campaign_id=event.campaign_id,
                    slice_id=s.slice_id,
                    seq=event.seq,
                    head_sha=event.parent_sha,
                )
        case AnalysisSliceRecorded():
            campaign = state.campaigns.get(event.campaign_id)
            if campaign is not None and campaign.slice(event.slice_id) is not None:
                slices = [
                    replace(
                        s,
                        status=event.status,
                        metrics_summary=event.metrics_summary,
                        summary=event.summary,
                        head_sha=event.head_sha,
                        details=event.details,
                        recorded_seq=event.seq,
                        setup=event.setup,
                        execution=event.execution,
                        results=event.results,
                        evaluation_summary=event.evaluation_summary,
                        evidence_paths=list(event.evidence_paths),
                        metric_rows=list(event.metric_rows),
                        report=event.report,
                    )
                    if s.slice_id == event.slice_id
                    else s
                    for s in campaign.slices
                ]
                state.campaigns[event.campaign_id] = replace(campaign, slices=slices)
        case BranchActivated():
            # An existing branch became the workspace: checkpoints and records follow it.
            state.active_branch, state.active_worktree = event.branch, event.worktree
        case IdeaSubmitted():
            if event.submission_mode == "candidate" and event.mode == "create":
                state.candidate_ideas[event.idea_id] = {
                    **event.details, "idea_id": event.idea_id, "title": event.title, "problem": event.problem,
                    "hypothesis": event.hypothesis, "mechanism": event.mechanism, "method_brief": event.method_brief,
                    "next_target": event.next_target, "recorded_seq": event.seq,
                }  # fmt: skip
            elif event.submission_mode == "line":
                promoted = event.details.get("source_candidate_id")
                state.candidate_ideas.pop(str(promoted), None)
                state.candidate_ideas.pop(event.idea_id, None)
        case SummaryRefreshed():
            state.refreshes += 1
            state.last_refresh_reason = event.reason
        case GitGraphRendered():
            state.graph = event.graph
    return state


def _thaw_status(quest: status_projection.StatusState) -> status_projection.StatusState:
    # The status fold updates its state in place (its fields and its `counts` dict);
    # here that state is a record inside ours, so it gets a fresh copy to update.
    return replace(quest, counts=dict(quest.counts))


def _copy(cls: type[T], event: Event, **override: Any) -> T:
    """A view struct from the event fields of the same names (``override`` for the rest)."""
    fields = {f: getattr(event, f) for f in cls.__struct_fields__ if f not in override and hasattr(event, f)}  # type: ignore[attr-defined]
    return cls(**fields, **override)


# -- render -----------------------------------------------------------------------------

def render(state: State) -> Files:
    files: Files = {}
    for record in state.records.values():
        files.update(_record_file(state, record.artifact_id))
    for baseline_id in state.baselines:
        files.update(_baseline_files(state, baseline_id))
    for run in state.runs:
        files.update(_run_file(state, run))
    for campaign_id in state.campaigns:
        files.update(_campaign_file(state, campaign_id))
    files.update(_graph_files(state))
    files.update(_summary_file(state))
    return files


# What SUMMARY.md shows changes only with these events: the quest's identity, status and
# stage, and the artifact domain's own. A memory card, a shell session, a turn or a tool
# call's record leaves it as it was, so they do not render it again.
_SUMMARY_TAGS = frozenset(
    {"quest.created", "quest.anchor_changed", "quest.control", "quest.completed"}
    | {"artifact.recorded", "git.branch_prepared", "git.checkpointed", "artifact.baseline_published",
       "artifact.baseline_attached", "artifact.baseline_confirmed", "artifact.main_experiment_recorded",
       "artifact.analysis_campaign_created", "artifact.analysis_slice_recorded", "artifact.summary_refreshed",
       "git.graph_rendered", "artifact.baseline_waived"}
)  # fmt: skip


def render_changed(state: State, events: Iterable[Event]) -> Files:
    files: Files = {}
    summary = False
    for event in events:
        summary = summary or event.TAG in _SUMMARY_TAGS
        match event:
            case ArtifactRecorded():
                files.update(_record_file(state, event.artifact_id))
            case BaselinePublished() | BaselineConfirmed() | BaselineAttached():
                files.update(_baseline_files(state, event.baseline_id))
            case MainExperimentRecorded():
                files.update(_run_file(state, event.run))
            case AnalysisCampaignCreated() | AnalysisSliceRecorded():
                files.update(_campaign_file(state, event.campaign_id))
            case GitGraphRendered():
                files.update(_graph_files(state))
    if summary:
        files.update(_summary_file(state))
    return files


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _record_file(state: State, artifact_id: str) -> Files:
    record = state.records.get(artifact_id)
    if record is None:
        return {}
    body = dict(record.payload)
    body.update(
        artifact_id=record.artifact_id, kind=record.kind, branch=record.branch, seq=record.seq, recorded_at=record.ts
    )
    return {record_path(record.kind, artifact_id): _json(body)}


def _baseline_files(state: State, baseline_id: str) -> Files:
    baseline = state.baselines.get(baseline_id)
    if baseline is None:
        return {}
    body: dict[str, Any] = dict(baseline.payload)
    body.update(
        artifact_id=baseline_id,
        baseline_id=baseline_id,
        kind="baseline",
        published=baseline.published_seq is not None,
        variant_ids=list(baseline.variant_ids),
        confirmed=msgspec.to_builtins(baseline.confirmed) if baseline.confirmed else None,
    )
    files = {record_path("baseline", baseline_id): _json(body)}
    if baseline.confirmed is not None:
        files[baseline.confirmed.contract_path] = _json(baseline.confirmed.contract)
    return files


def _run_file(state: State, run: str) -> Files:
    main = state.runs.get(run)
    if main is None:
        return {}
    body = msgspec.to_builtins(main)
    body.update(
        artifact_id=run, run_id=run, kind="run", run_kind="main_experiment", result_kind="main_experiment",
        progress_eval=main.progress, run_md_path=run_page_path(run),
    )  # fmt: skip
    return {record_path("run", run): _json(body), run_page_path(run): _run_page(main).encode()}


def _run_page(main: MainRun) -> str:
    """A main experiment as a person reads it: identity, narrative, metrics against the
    baseline, the progress verdict, evidence."""
    p = main.progress
    lines = [
        f"# {main.title}",
        "",
        f"- run: `{main.run}`; branch: `{main.branch}`; head: `{(main.head_sha or 'none')[:12]}`",
        f"- idea: `{main.idea_id or 'none'}`; baseline: `{main.baseline_id or 'none (gate waived)'}`",
        f"- verdict: **{main.verdict or 'recorded'}**; status: {main.report.get('status', 'completed')}; "
        f"dataset scope: {main.report.get('dataset_scope', 'full')}",
    ]
    if p:
        level = p.get("breakthrough_level", "none")
        lines.append(f"- progress: {'breakthrough (' + level + ')' if p.get('breakthrough') else 'no breakthrough'} — {p.get('reason', '')}")
    for heading, text in (
        ("Hypothesis", main.hypothesis), ("Setup", main.setup), ("Execution", main.execution),
        ("Results", main.results), ("Conclusion", main.conclusion or p.get("reason", "")), ("Summary", main.summary),
    ):  # fmt: skip
        if text:
            lines += ["", f"## {heading}", "", text.strip()]
    lines += ["", "## Metrics", ""]
    if main.comparisons:
        lines += ["| metric | run | baseline | delta | better |", "|---|---|---|---|---|"]
        for metric_id, c in main.comparisons.items():
            mark = " (primary)" if metric_id == main.primary_metric else ""
            lines.append(
                f"| `{metric_id}`{mark} | {_num(c.get('value'))} | {_num(c.get('baseline'))} | "
                f"{_num(c.get('delta'))} | {'yes' if c.get('better') else 'no'} ({c.get('direction', 'higher')} is better) |"
            )
    extra = [m for m in main.metrics_summary if m not in main.comparisons]
    for metric_id in extra:
        lines.append(f"- `{metric_id}` = {_num(main.metrics_summary[metric_id])}")
    if main.evaluation_summary:
        lines += ["", "## Evaluation summary", ""]
        lines += [f"- {k.replace('_', ' ')}: {v}" for k, v in main.evaluation_summary.items()]
    for heading, key in (("Evidence", None), ("Changed files", "changed_files"), ("Config files", "config_paths"), ("Notes", "notes")):
        items = main.evidence_paths if key is None else main.report.get(key) or []
        if items:
            lines += ["", f"## {heading}", ""] + [f"- `{i}`" if key != "notes" else f"- {i}" for i in items]
    return "\n".join(lines) + "\n"


def _campaign_file(state: State, campaign_id: str) -> Files:
    campaign = state.campaigns.get(campaign_id)
    if campaign is None:
        return {}
    body = msgspec.to_builtins(campaign)
    body.update(artifact_id=campaign_id, kind="analysis_campaign", slices_done=campaign.done)
    return {f"artifacts/campaigns/{campaign_id}.json": _json(body)}


def _graph_files(state: State) -> Files:
    if state.graph is None:
        return {}
    return {
        "artifacts/graphs/git_graph.json": _json(state.graph),
        "artifacts/graphs/git_graph.svg": render_graph_svg(state.graph).encode(),
    }


def _summary_file(state: State) -> Files:
    q = state.quest
    if not q.quest_id:
        return {}
    lines = [f"# {q.title}", "", q.brief or "_No brief yet._", ""]
    lines.append(f"- quest: `{q.quest_id}`; status: **{q.status}**; anchor: `{q.anchor}`")
    where = f" (worktree `{state.active_worktree}`)" if state.active_worktree else ""
    lines.append(f"- active branch: `{state.active_branch}`{where}")
    if state.checkpoints:
        last = state.checkpoints[-1]
        lines.append(f"- checkpoints: {state.checkpoint_count}, latest `{last.sha[:10]}` on `{last.branch}`: {last.message}")
    lines += ["", "## Baseline", ""]
    lines += _summary_baseline(state)
    lines += ["", "## Main experiments", ""]
    if state.runs:
        lines += ["| run | title | primary metric | vs baseline | branch |", "|---|---|---|---|---|"]
        for main in state.runs.values():
            cmp = main.comparisons.get(main.primary_metric, {})
            delta = cmp.get("delta")
            value = main.metrics_summary.get(main.primary_metric)
            lines.append(
                f"| `{main.run}` | {main.title} | {main.primary_metric} = {_num(value)} | "
                f"{'n/a' if delta is None else f'{delta:+.6g}'} | `{main.branch}` |"
            )
    else:
        lines.append("_None recorded yet._")
    if state.campaigns:
        lines += ["", "## Analysis campaigns", ""]
        for c in state.campaigns.values():
            lines.append(f"- `{c.campaign_id}` {c.title}: {c.done}/{len(c.slices)} slices recorded (from `{c.parent_branch}`)")
            for s in c.slices:
                lines.append(f"  - `{s.slice_id}` {s.title}: {s.status}{f' — {s.summary}' if s.summary else ''}")
    for kind, heading in (("decision", "Decisions"), ("idea", "Ideas"), ("milestone", "Milestones")):
        ids = state.recent.get(kind)
        if not ids:
            continue
        lines += ["", f"## {heading} (latest {min(len(ids), 5)} of {state.counters.get(kind, 0)})", ""]
        for artifact_id in ids[-5:]:
            p = state.records[artifact_id].payload
            text = p.get("title") or p.get("verdict") or p.get("summary") or ""
            extra = f" → {p['action']}: {p.get('reason', '')}" if kind == "decision" else ""
            lines.append(f"- `{artifact_id}` {text}{extra}")
    if state.refreshes:
        reason = f": {state.last_refresh_reason}" if state.last_refresh_reason else ""
        lines += ["", f"_Summary refreshed {state.refreshes} time(s){reason}._"]
    if q.completed_summary:
        lines += ["", "## Outcome", "", q.completed_summary]
    return {"SUMMARY.md": ("\n".join(lines) + "\n").encode()}


def _summary_baseline(state: State) -> list[str]:
    if state.baseline_gate == "waived" and state.waiver is not None:
        return [f"- baseline gate **waived**: {state.waiver['reason']}"]
    if state.confirmed_baseline is None:
        if state.attached:
            return [f"- attached `{state.attached['baseline_id']}`, not confirmed yet"]
        return ["_No baseline confirmed yet._"]
    baseline = state.baselines[state.confirmed_baseline]
    c = baseline.confirmed
    assert c is not None
    variant = f" (variant `{c.variant_id}`)" if c.variant_id else ""
    lines = [
        f"- `{baseline.baseline_id}`{variant} confirmed; primary metric `{c.primary_metric}` = "
        f"{_num(c.metrics_summary.get(c.primary_metric))} ({c.metric_directions.get(c.primary_metric, 'higher')} is better)",
        f"- metric contract: `{c.contract_path}`",
    ]
    if c.summary:
        lines.append(f"- {c.summary}")
    return lines


def _num(value: Any) -> str:
    return "n/a" if value is None else f"{value:.6g}"


def render_graph_svg(graph: dict[str, Any]) -> str:
    """A lane-per-branch drawing of ``graph`` (the shape ``services.git.git_graph`` returns)."""
    commits = graph.get("commits", [])
    branches = [b["name"] for b in graph.get("branches", [])]
    lanes = {name: i for i, name in enumerate(branches)}
    row = {c["sha"]: i for i, c in enumerate(commits)}
    dx, dy, left, top = 140, 28, 20, 40
    width = left * 2 + dx * max(len(branches), 1) + 360
    height = top + dy * (len(commits) + 1)

    def at(c: dict[str, Any]) -> tuple[int, int]:
        return left + 10 + dx * lanes.get(c.get("lane", ""), 0), top + dy * row[c["sha"]]

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">'
    ]
    for name, i in lanes.items():
        out.append(f'<text x="{left + dx * i}" y="{top - 20}">{_esc(name)}</text>')
    for c in commits:
        x, y = at(c)
        for parent in c.get("parents", []):
            if parent in row:
                px, py = at(commits[row[parent]])
                out.append(f'<line x1="{x}" y1="{y}" x2="{px}" y2="{py}" stroke="#888"/>')
    for c in commits:
        x, y = at(c)
        label = f"{c['sha'][:7]} {c.get('message', '')[:48]}"
        heads = [b["name"] for b in graph.get("branches", []) if b.get("head") == c["sha"]]
        if heads:
            label += f"  [{', '.join(heads)}]"
        out.append(f'<circle cx="{x}" cy="{y}" r="5" fill="#36c"/>')
        out.append(f'<text x="{left + dx * max(len(branches), 1)}" y="{y + 4}">{_esc(label)}</text>')
    out.append("</svg>\n")
    return "\n".join(out)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


PROJECTION = Projection(
    name="artifacts",
    state_type=State,
    initial=State,
    apply=apply,
    render=render,
    render_changed=render_changed,
    version=4,  # 2: the by_seq / newest index; 3: the baseline gate, narratives; 4: activations, candidates (older snapshots: refolded)
)
