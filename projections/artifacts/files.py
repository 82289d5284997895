"""The files the `artifacts` view materialises: ``artifacts/<kind dir>/<id>.json`` for
every record, baseline, main experiment and campaign, each confirmed baseline's
``<baseline_path>/json/metric_contract.json``, a run's page, the graph's JSON and SVG and
``SUMMARY.md``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ds_events.events import Event
from ds_events.events.artifact import (
    AnalysisCampaignCreated,
    AnalysisSliceRecorded,
    ArtifactRecorded,
    BaselineAttached,
    BaselineConfirmed,
    BaselinePublished,
    GitGraphRendered,
    MainExperimentRecorded,
)
from projections.base import Files

from .documents import campaign_document, confirmation_document, run_document
from .fold import State, campaign_path, record_path, run_page_path
from .pages import run_page, summary_markdown
from .svg import render_graph_svg

__all__ = ["render", "render_changed", "GRAPH_FILES"]

GRAPH_FILES = ("artifacts/graphs/git_graph.json", "artifacts/graphs/git_graph.svg")
# What SUMMARY.md shows changes only with these events: the quest's identity, status and
# stage, the artifact domain's own, and what moves the quest's health. A memory card, a
# shell session, an agent's message or a tool call's record leaves it as it was, so they
# do not render it again.
_SUMMARY_TAGS = frozenset(
    {"quest.created", "quest.anchor_changed", "quest.control", "quest.completed"}
    | {"artifact.recorded", "git.branch_prepared", "git.checkpointed", "artifact.baseline_published",
       "artifact.baseline_attached", "artifact.baseline_confirmed", "artifact.main_experiment_recorded",
       "artifact.analysis_campaign_created", "artifact.analysis_slice_recorded", "artifact.summary_refreshed",
       "git.graph_rendered", "artifact.baseline_waived"}
    # the active branch it names
    | {"research.branch_activated"}
    # the health line: what moves a quest's health (fold.HEALTH_*_EVENTS)
    | {"runner.turn_started", "runner.turn_finished", "runner.turn_retry_scheduled", "runner.turn_held",
       "conversation.message", "interaction.sent", "interaction.replied", "interaction.superseded", "mailbox.delivered"}
)  # fmt: skip


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
        confirmed=confirmation_document(baseline.confirmed) if baseline.confirmed else None,
    )
    files = {record_path("baseline", baseline_id): _json(body)}
    if baseline.confirmed is not None:
        files[baseline.confirmed.contract_path] = _json(baseline.confirmed.contract)
    return files


def _run_file(state: State, run: str) -> Files:
    main = state.runs.get(run)
    if main is None:
        return {}
    body = run_document(main)
    body.update(
        artifact_id=run, run_id=run, kind="run", run_kind="main_experiment", result_kind="main_experiment",
        progress_eval=main.progress, run_md_path=run_page_path(run),
    )  # fmt: skip
    return {record_path("run", run): _json(body), run_page_path(run): run_page(main).encode()}


def _campaign_file(state: State, campaign_id: str) -> Files:
    campaign = state.campaigns.get(campaign_id)
    if campaign is None:
        return {}
    body = campaign_document(campaign)
    body.update(artifact_id=campaign_id, kind="analysis_campaign", slices_done=campaign.done)
    return {campaign_path(campaign_id): _json(body)}


def _graph_files(state: State) -> Files:
    if state.graph is None:
        return {}
    return {GRAPH_FILES[0]: _json(state.graph), GRAPH_FILES[1]: render_graph_svg(state.graph).encode()}


def _summary_file(state: State) -> Files:
    text = summary_markdown(state)
    return {} if text is None else {"SUMMARY.md": text.encode()}
