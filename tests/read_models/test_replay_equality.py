"""`ds replay` (the CLI, a real process) rebuilds workflow, node traces and the three
Canvas views byte for byte equal to the ones the live quest computed incrementally."""

from __future__ import annotations

import shutil
import subprocess

import msgspec

from ds_events.home import Home, Quest
from ds_events.services import artifacts
from ds_events.services.artifacts import checkpoints as git
from ds_events.services.artifacts.commands import Checkpoint, Record
from ds_events.services.quest import read_models as read_models
from tests.helpers import DS, ds_env
from tests.read_models.support import build_quest


def _outputs(quest: Quest) -> dict[str, bytes]:
    out = {
        "workflow": msgspec.json.encode(read_models.workflow(quest, limit=500)),
        "node_traces": msgspec.json.encode(read_models.node_traces(quest)),
    }
    for view in ("branch", "event", "stage"):
        out[f"canvas_{view}"] = msgspec.json.encode(read_models.canvas(quest, view))
        out[f"svg_{view}"] = read_models.canvas_svg(quest, view).encode()
    for node in read_models.node_traces(quest)["nodes"]:
        out[f"node {node['ref']}"] = msgspec.json.encode(read_models.node_trace(quest, node["ref"]))
    return out


def test_replay_rebuilds_every_read_model_byte_for_byte(home: Home, quest: Quest) -> None:
    build_quest(quest)
    live_views = quest.views
    _outputs(quest)  # hand states out mid-way: later events then fold into copies
    (quest.root / ".ds" / "worktrees" / "run__warm-1" / "train.py").write_text("x = 1\n")
    git.checkpoint(quest, Checkpoint(message="train", branch="run/warm-1"))
    artifacts.record(quest, Record(payload={"kind": "milestone", "title": "Smoke passes"}))
    live = _outputs(quest)
    assert live_views.applied >= 0 and quest.views is live_views  # computed from the live, incremental views
    quest.close()

    shutil.rmtree(quest.root / ".ds" / "snapshots", ignore_errors=True)  # nothing left from the live process
    done = subprocess.run([*DS, "replay", "q1"], env=ds_env(home), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    snapshots = {p.name for p in (quest.root / ".ds" / "snapshots").iterdir()}
    assert any("workflow" in n for n in snapshots) and any("node_traces" in n for n in snapshots), snapshots

    replayed = home.open_quest("q1")  # starts from the snapshots the replay process wrote
    try:
        assert replayed.views.applied == 0  # nothing folded here: every state came from the replay
        rebuilt = _outputs(replayed)
    finally:
        replayed.close()
    assert rebuilt.keys() == live.keys()
    for name in live:
        assert rebuilt[name] == live[name], name
