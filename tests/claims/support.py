"""What the claim-audit tests share: a quest built through the real `artifact` MCP
server (a stdio subprocess, as a runner starts it) with a confirmed baseline whose
metric contract declares a precision, two main runs and an analysis campaign with a
completed and a failed slice; and the manuscript helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ds_events.home import Home, Quest
from tests.compat.research_support import artifact_client, ok

__all__ = ["CONTRACT", "build_quest", "write_manuscript", "overwrite_baseline"]

# top1 is a fraction reported to 3 decimals: 0.912, or 91.2 as per cent.
CONTRACT = {
    "metrics": {"top1": {"description": "top-1 accuracy on the test split", "derivation": "correct / 10000",
                         "source_ref": "He et al. 2016, Table 6", "decimals": 3}},
    "evaluation_protocol": {"split": "test"},
}  # fmt: skip


async def build_quest(home: Home, quest_id: str = "q1") -> dict[str, Any]:
    """Baseline resnet20 (top1 0.9000), main runs r1 (0.9123, 3 seeds) and r2 (0.9187,
    and latency_ms 71.234, a metric outside the contract: no declared precision), a
    campaign on r2 with slice s1 completed (0.9051) and s2 failed (0.8712)."""
    async with artifact_client(home, quest_id) as c:
        await ok(c, "publish_baseline", {"payload": {"baseline_id": "resnet20", "title": "ResNet-20"}})
        await ok(c, "confirm_baseline", {
            "baseline_path": "baselines/resnet20", "baseline_id": "resnet20", "metric_contract": CONTRACT,
            "metrics_summary": {"top1": 0.9}, "primary_metric": "top1",
        })  # fmt: skip
        r1 = await ok(c, "record_main_experiment", {"run_id": "r1", "metrics_summary": {"top1": 0.9123},
                                                    "details": {"seeds": [1, 2, 3]}})  # fmt: skip
        r2 = await ok(c, "record_main_experiment", {"run_id": "r2", "metrics_summary": {"top1": 0.9187, "latency_ms": 71.234}})
        campaign = await ok(c, "create_analysis_campaign", {
            "campaign_title": "Ablations of r2", "campaign_goal": "Which part of r2 matters",
            "slices": [{"slice_id": "s1", "title": "no augmentation"}, {"slice_id": "s2", "title": "half the epochs"}],
            "parent_run_id": "r2",
        })  # fmt: skip
        cid = campaign["campaign_id"]
        await ok(c, "record_analysis_slice", {"campaign_id": cid, "slice_id": "s1", "metrics_summary": {"top1": 0.9051}})
        await ok(c, "record_analysis_slice", {"campaign_id": cid, "slice_id": "s2", "status": "failed",
                                              "metrics_summary": {"top1": 0.8712}})  # fmt: skip
    return {"r1": r1, "r2": r2, "campaign_id": cid}


async def overwrite_baseline(home: Home, top1: float, quest_id: str = "q1") -> None:
    """Refresh the confirmed baseline's number (``overwrite_baseline``)."""
    async with artifact_client(home, quest_id) as c:
        await ok(c, "overwrite_baseline", {"change_summary": "re-evaluated the baseline on the fixed test split",
                                           "metrics_summary": {"top1": top1}})  # fmt: skip


def write_manuscript(quest: Quest, text: str, rel: str = "paper/manuscript.md") -> Path:
    path = quest.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
