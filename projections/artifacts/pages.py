"""The pages of the `artifacts` view a person reads: a main experiment's
``artifacts/runs/<run>.md`` and the quest's ``SUMMARY.md``."""

from __future__ import annotations

from typing import Any

from ds_events.events.artifact import MainExperimentRecorded
from projections.health import replay_health

from .fold import State

__all__ = ["run_page", "summary_markdown"]


def run_page(main: MainExperimentRecorded) -> str:
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
        verdict = f"breakthrough ({p.get('breakthrough_level', 'none')})" if p.get("breakthrough") else "no breakthrough"
        lines.append(f"- progress: {verdict} — {p.get('reason', '')}")
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


def summary_markdown(state: State) -> str | None:
    """``SUMMARY.md``: the quest, its baseline, main experiments, campaigns and latest
    decisions, ideas and milestones; None before the quest exists."""
    q = state.quest
    if not q.quest_id:
        return None
    lines = [f"# {q.title}", "", q.brief or "_No brief yet._", ""]
    lines.append(f"- quest: `{q.quest_id}`; status: **{q.status}**; anchor: `{q.anchor}`")
    # The health as replay knows it: no clock in a projection, so a running turn that has
    # gone silent shows as running here (`ds quest show` and the HTTP routes say stalled).
    lines.append(f"- health: {replay_health(q, state.turns, state.requests).summary}")
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
    return "\n".join(lines) + "\n"


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
