"""The `artifacts` view: records, baselines and metric contracts, main experiments,
analysis campaigns, branches, checkpoints and the branch graph.

:mod:`.fold` is the state and ``apply`` (the state keeps the events that recorded each
fact); :mod:`.documents` the JSON shape of each thing it holds; :mod:`.files` the files
it materialises, with the pages of :mod:`.pages` and the drawing of :mod:`.svg`.
``SUMMARY.md`` replaces the simpler one ``projections.status`` writes: this projection
comes later in the registry.
"""

from __future__ import annotations

from projections.base import Projection

from .documents import Record, document, record_document
from .files import GRAPH_FILES, render, render_changed
from .fold import (
    KIND_DIRS,
    Baseline,
    BranchInfo,
    Campaign,
    Checkpoint,
    MainRun,
    Slice,
    State,
    Waiver,
    apply,
    campaign_path,
    newest_records,
    record_path,
    run_page_path,
    thaw,
)
from .svg import render_graph_svg

__all__ = [
    "PROJECTION",
    "State",
    "Record",
    "MainRun",
    "Waiver",
    "Baseline",
    "Campaign",
    "Slice",
    "BranchInfo",
    "Checkpoint",
    "KIND_DIRS",
    "GRAPH_FILES",
    "apply",
    "record_path",
    "run_page_path",
    "campaign_path",
    "newest_records",
    "document",
    "record_document",
    "render_graph_svg",
]

PROJECTION = Projection(
    name="artifacts",
    state_type=State,
    initial=State,
    apply=apply,
    render=render,
    render_changed=render_changed,
    # 2: the by_seq / newest index; 3: the baseline gate, narratives; 4: activations,
    # candidates; 5: the state keeps the events (records, runs, confirmations, campaigns,
    # slice outcomes, candidate ideas) instead of copies; 6: the turns and interactions
    # views SUMMARY.md's health line comes from. Older snapshots are refolded.
    version=6,
    thaw=thaw,
)
