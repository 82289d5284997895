"""Queries of the `artifacts` view about results: the progress verdict of a main
experiment, the method scoreboard and the optimization frontier.

Pure functions of :class:`projections.artifacts.State`; the services call them (the
verdict is computed when a run is recorded and kept in its event, so later runs never
change an earlier run's verdict).
"""

from __future__ import annotations

from typing import Any, TypedDict

from ds_events.events.artifact import MainExperimentRecorded
from ds_events.events.research import IdeaSubmitted

from .artifacts import State

__all__ = ["ProgressEval", "progress_eval", "method_scoreboard", "optimization_frontier", "better"]

# Implementation candidates (records of report_type "optimization_candidate") by status.
_ACTIVE = frozenset({"proposed", "smoke_running", "smoke_passed", "promoted", "full_eval_running"})
_FAILED = frozenset({"failed", "smoke_failed", "archived"})


class ProgressEval(TypedDict):
    """A main run's progress verdict, kept in its event's ``progress`` (a dict there: its
    pinned schema says ``object``)."""

    primary_metric_id: str
    direction: str
    run_value: float
    baseline_value: float | None
    delta_vs_baseline: float | None
    relative_delta_vs_baseline: float | None
    previous_best_value: float | None
    delta_vs_previous_best: float | None
    beats_baseline: bool | None
    improved_over_previous_best: bool | None
    breakthrough: bool
    breakthrough_level: str  # major | minor | none
    reason: str


def better(a: float, b: float, direction: str) -> bool:
    """Whether ``a`` beats ``b`` when ``direction`` ("higher" or "lower") is better."""
    return a > b if direction == "higher" else a < b


def progress_eval(
    state: State, *, primary_metric: str, direction: str, value: float, baseline_value: float | None
) -> ProgressEval:
    """The verdict of a main run against the baseline and the best earlier main run on
    the same primary metric: a breakthrough is a new best (``major``) or, for the first
    run, beating the baseline (``minor``)."""
    previous = [
        r.metrics_summary[primary_metric]
        for r in state.runs.values()
        if primary_metric in r.metrics_summary and r.primary_metric == primary_metric
    ]
    best = None
    for v in previous:
        if best is None or better(v, best, direction):
            best = v
    beats = None if baseline_value is None else better(value, baseline_value, direction)
    improved = None if best is None else better(value, best, direction)
    delta = None if baseline_value is None else value - baseline_value
    if improved:
        level, reason = "major", "the primary metric set a new best main-experiment result"
    elif improved is None and beats:
        level, reason = "minor", "the primary metric beat the baseline"
    elif baseline_value is None and best is None:
        level, reason = "none", "no baseline (the gate was waived) and no earlier run to compare with"
    else:
        level, reason = "none", "no improvement over the baseline or the previous best"
    return {
        "primary_metric_id": primary_metric,
        "direction": direction,
        "run_value": value,
        "baseline_value": baseline_value,
        "delta_vs_baseline": delta,
        "relative_delta_vs_baseline": None if delta is None or not baseline_value else delta / abs(baseline_value),
        "previous_best_value": best,
        "delta_vs_previous_best": None if best is None else value - best,
        "beats_baseline": beats,
        "improved_over_previous_best": improved,
        "breakthrough": level != "none",
        "breakthrough_level": level,
        "reason": reason,
    }


def method_scoreboard(state: State) -> dict[str, Any]:
    """One entry per research line (an idea, or the branch of runs without one): its
    runs, its best run on the primary metric, and which line is the incumbent (the best
    line by the metric's direction, not the newest)."""
    lines: dict[str, dict[str, Any]] = {}
    idea_branch = {b.idea_id: b.branch for b in state.branches.values() if b.idea_id and b.kind == "idea"}
    for record in state.records.values():
        if record.kind != "idea":
            continue
        title = str(record.payload.get("title") or record.artifact_id)
        lines[record.artifact_id] = _line(record.artifact_id, record.artifact_id, title, idea_branch.get(record.artifact_id))
    metric, direction = _headline(state)
    for run in state.runs.values():
        key = run.idea_id or run.branch
        line = lines.get(key) or _line(key, run.idea_id, run.title, run.branch)
        line["run_count"] += 1
        line["run_ids"].append(run.run)
        line["latest_run_id"] = run.run
        line["latest_run_summary"] = run.summary or run.conclusion or None
        line["branch"] = line["branch"] or run.branch
        line["status"] = "main_verified" if run.report.get("status", "completed") == "completed" else "candidate"
        line["breakthrough"] = line["breakthrough"] or bool(run.progress.get("breakthrough"))
        value = run.metrics_summary.get(metric) if metric else None
        if metric and value is not None and (line["best_value"] is None or better(value, line["best_value"], direction)):
            line.update(best_run_id=run.run, best_value=value, delta_vs_baseline=run.comparisons.get(metric, {}).get("delta"))
        lines[key] = line
    ranked = [entry for entry in lines.values() if entry["best_value"] is not None]
    incumbent = None
    for line in ranked:
        if incumbent is None or better(line["best_value"], incumbent["best_value"], direction):
            incumbent = line
    if incumbent is not None:
        incumbent["incumbent"] = True
    return {
        "quest_id": state.quest.quest_id,
        "primary_metric": metric,
        "direction": direction,
        "baseline_id": state.confirmed_baseline,
        "baseline_gate": state.baseline_gate,
        "entry_count": len(lines),
        "incumbent_line_key": incumbent["line_key"] if incumbent else None,
        "incumbent_title": incumbent["title"] if incumbent else None,
        "entries": list(lines.values()),
    }


def optimization_frontier(state: State) -> dict[str, Any]:
    """Where optimization stands: the best run and lines, the idea briefs not yet on a
    branch, the implementation candidates, lines that stopped improving, and a mode
    (explore, exploit, fusion or stop) with the next actions it suggests."""
    board = method_scoreboard(state)
    metric, direction = board["primary_metric"], board["direction"]
    with_results = [entry for entry in board["entries"] if entry["best_value"] is not None]
    with_results.sort(key=lambda entry: entry["best_value"], reverse=direction == "higher")
    branched = {b.idea_id for b in state.branches.values() if b.idea_id}
    briefs = [
        {**r.payload, "idea_id": r.artifact_id, "title": r.payload.get("title"), "recorded_seq": r.seq}
        for r in state.records.values()
        if r.kind == "idea" and r.artifact_id not in branched and not any(run.idea_id == r.artifact_id for run in state.runs.values())
    ]
    briefs += [_candidate_brief(c) for c in state.candidate_ideas.values()]  # submit_idea(submission_mode="candidate")
    briefs.sort(key=lambda b: b["recorded_seq"])
    candidates = [
        {**r.payload, "candidate_id": r.payload.get("candidate_id") or r.artifact_id, "artifact_id": r.artifact_id, "recorded_seq": r.seq}
        for r in state.records.values()
        if r.kind == "report" and r.payload.get("report_type") == "optimization_candidate"
    ]
    active = [c for c in candidates if str(c.get("status", "")).lower() in _ACTIVE]
    failures: dict[str, int] = {}
    for c in candidates:
        if str(c.get("status", "")).lower() in _FAILED:
            where = str(c.get("branch") or c.get("idea_id") or "")
            failures[where] = failures.get(where, 0) + 1
    stagnant = [
        entry for entry in with_results
        if _stagnant(state, entry, metric, direction)
        or failures.get(entry["branch"] or "", 0) + failures.get(entry["idea_id"] or "", 0) >= 2
    ]  # fmt: skip
    best_run = _run_view(state.runs[with_results[0]["best_run_id"]], metric) if with_results else None
    if active:
        mode, reason = "exploit", "implementation candidates are active: turn them into results first"
    elif briefs and len(with_results) <= 1:
        mode, reason = "explore", "idea briefs wait and few lines have results: rank the briefs and promote the best"
    elif len(with_results) >= 2 and stagnant:
        mode, reason = "fusion", "several lines have results and some stopped improving: look for complementary mechanisms"
    elif with_results or board["entries"]:
        mode, reason = "exploit", "a line exists and nothing broader dominates: keep improving the strongest line"
    else:
        mode, reason = "stop", "no line, brief or candidate is open"
    actions = {
        "explore": ["Rank the idea briefs and promote one to three onto branches (prepare_branch / submit_idea)."],
        "exploit": ["Advance the best line: smoke-test candidates, then run full evaluations and record them."],
        "fusion": ["Compare the strongest lines for complementary mechanisms before opening a fused idea."],
        "stop": ["Record a decision to stop or park the quest, or submit a new idea."],
    }[mode]
    return {
        "mode": mode,
        "frontier_reason": reason,
        "active_anchor": state.quest.anchor,
        "primary_metric": metric,
        "direction": direction,
        "best_run": best_run,
        "best_branch": with_results[0] if with_results else None,
        "top_branches": with_results[:3],
        "candidate_briefs": briefs,
        "implementation_candidates": candidates[-8:],
        "candidate_backlog": {
            "candidate_brief_count": len(briefs),
            "implementation_candidate_count": len(candidates),
            "active_implementation_candidate_count": len(active),
            "failed_implementation_candidate_count": sum(failures.values()),
        },
        "stagnant_branches": stagnant,
        "fusion_candidates": with_results[:3] if mode == "fusion" else [],
        "recommended_next_actions": actions,
    }


def _line(key: str, idea_id: str | None, title: str, branch: str | None) -> dict[str, Any]:
    return {
        "line_key": key, "idea_id": idea_id, "title": title, "branch": branch, "status": "candidate",
        "run_count": 0, "run_ids": [], "latest_run_id": None, "latest_run_summary": None,
        "best_run_id": None, "best_value": None, "delta_vs_baseline": None, "breakthrough": False, "incumbent": False,
    }  # fmt: skip


def _headline(state: State) -> tuple[str | None, str]:
    """The primary metric runs are ranked by, and its direction: the confirmed baseline's,
    else the latest run's."""
    if state.confirmed_baseline is not None:
        c = state.baselines[state.confirmed_baseline].confirmed
        if c is not None:
            return c.primary_metric, c.metric_directions.get(c.primary_metric, "higher")
    latest = state.runs.get(state.latest_run or "")
    if latest is None:
        return None, "higher"
    return latest.primary_metric, latest.progress.get("direction") or "higher"


def _stagnant(state: State, line: dict[str, Any], metric: str | None, direction: str) -> bool:
    """A line whose last two runs did not beat its best before them."""
    runs = [state.runs[r] for r in line["run_ids"]]
    if metric is None or len(runs) < 3:
        return False
    before = [r.metrics_summary.get(metric) for r in runs[:-2]]
    best = None
    for v in before:
        if v is not None and (best is None or better(v, best, direction)):
            best = v
    last = [r.metrics_summary.get(metric) for r in runs[-2:]]
    return best is not None and not any(v is not None and better(v, best, direction) for v in last)


def _candidate_brief(idea: IdeaSubmitted) -> dict[str, Any]:
    return {
        **idea.details, "idea_id": idea.idea_id, "title": idea.title, "problem": idea.problem,
        "hypothesis": idea.hypothesis, "mechanism": idea.mechanism, "method_brief": idea.method_brief,
        "next_target": idea.next_target, "recorded_seq": idea.seq,
    }  # fmt: skip


def _run_view(run: MainExperimentRecorded, metric: str | None) -> dict[str, Any]:
    return {
        "run_id": run.run,
        "title": run.title,
        "branch": run.branch,
        "idea_id": run.idea_id,
        "primary_metric": metric,
        "value": run.metrics_summary.get(metric) if metric else None,
        "delta_vs_baseline": run.progress.get("delta_vs_baseline"),
        "breakthrough": bool(run.progress.get("breakthrough")),
        "verdict": run.verdict,
    }
