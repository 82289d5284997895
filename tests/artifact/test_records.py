"""record() through an MCP client: every kind, its validation codes, files materialised
from the log, replay byte for byte, and id allocation across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from ds_events.events.artifact import ArtifactRecorded
from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from projections import fold
from projections.artifacts import KIND_DIRS, PROJECTION, State
from tests.helpers import domain_events

from .support import client_for, confirm_args, fails, ok

VALID = {
    "baseline": {"title": "ResNet-20 from the paper"},
    "idea": {"title": "Label smoothing 0.1", "hypothesis": "better calibration"},
    "decision": {"verdict": "promising", "action": "launch_experiment", "reason": "smoke run beat the baseline"},
    "progress": {"message": "epoch 10/200"},
    "answer": {"message": "Yes, seeds 0-2.", "question": "Which seeds?"},
    "milestone": {"title": "Baseline reproduced"},
    "run": {"run_kind": "smoke", "paths": ["train.py"]},
    "report": {"title": "Week 1"},
    "approval": {"verdict": "approved"},
    "graph": {"title": "Branch overview", "nodes": [1, 2]},
}


async def test_every_kind_is_recorded_as_a_json_file_under_its_kind_directory(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        results = {kind: await ok(c, "record", payload={"kind": kind, **fields}) for kind, fields in VALID.items()}
    for kind, r in results.items():
        assert r["artifact_id"] == f"{kind}-0001" and r["path"] == f"artifacts/{KIND_DIRS[kind]}/{kind}-0001.json"
        saved = json.loads((quest.root / r["path"]).read_text())
        assert saved["kind"] == kind and saved["artifact_id"] == r["artifact_id"] and saved["seq"] == r["seq"]
        for key, value in VALID[kind].items():
            assert saved[key] == value
    assert len(quest.log.read(types=["artifact.recorded"])) == len(VALID)


async def test_ids_are_numbered_per_kind_and_an_explicit_id_is_used_once(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        a = await ok(c, "record", payload={"kind": "idea", "title": "a"})
        b = await ok(c, "record", payload={"kind": "idea", "title": "b", "artifact_id": "idea-0003"})
        c3 = await ok(c, "record", payload={"kind": "idea", "title": "c"})
        c4 = await ok(c, "record", payload={"kind": "idea", "title": "d"})
        err = await fails(c, "record", "artifact_exists", payload={"kind": "milestone", "title": "x", "artifact_id": "idea-0003"})
    assert [a["artifact_id"], b["artifact_id"], c3["artifact_id"], c4["artifact_id"]] == ["idea-0001", "idea-0003", "idea-0004",
        "idea-0005"]
    assert err["artifact_id"] == "idea-0003"


async def test_records_name_the_active_branch(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        await ok(c, "prepare_branch", run_id="r1")
        r = await ok(c, "record", payload={"kind": "progress", "message": "on r1"})
    assert r["branch"] == "run/r1"
    assert json.loads((quest.root / r["path"]).read_text())["branch"] == "run/r1"


@pytest.mark.parametrize(
    "payload, code",
    [
        ("an idea", "invalid_argument"),  # not an object: refused at the edge
        ({"title": "no kind"}, "unknown_kind"),
        ({"kind": "thought", "title": "x"}, "unknown_kind"),
        ({"kind": "idea"}, "missing_fields"),
        ({"kind": "idea", "title": "   "}, "missing_fields"),
        ({"kind": "decision", "verdict": "good", "action": "continue"}, "missing_fields"),
        ({"kind": "decision", "verdict": "good", "action": "yolo", "reason": "r"}, "invalid_action"),
        ({"kind": "run"}, "missing_fields"),
        ({"kind": "approval", "verdict": "maybe"}, "invalid_field"),
        ({"kind": "idea", "title": 7}, "invalid_field"),
        ({"kind": "idea", "title": "x", "artifact_id": "../../x"}, "invalid_id"),
        ({"kind": "idea", "title": "x", "idea_id": "a b"}, "invalid_id"),
        ({"kind": "run", "run_kind": "x", "paths": ["../secret"]}, "path_outside_quest"),
        ({"kind": "run", "run_kind": "x", "paths": ["/etc/passwd"]}, "path_outside_quest"),
        ({"kind": "run", "run_kind": "x", "paths": [".ds/events.jsonl"]}, "path_not_allowed"),
        ({"kind": "run", "run_kind": "x", "paths": "train.py"}, "invalid_field"),
        ({"kind": "idea", "title": "x", "blob": "a" * 300_000}, "payload_too_large"),
    ],
)
async def test_bad_records_get_a_stable_code_and_write_nothing(home: Home, quest: Quest, payload: object, code: str) -> None:
    seq = domain_events(quest)
    async with client_for(home) as c:
        await fails(c, "record", code, payload=payload)
    assert domain_events(quest) == seq and not (quest.root / "artifacts").exists()


async def test_replay_rewrites_every_artifact_file_byte_for_byte(home: Home, quest: Quest) -> None:
    async with client_for(home) as c:
        for kind, fields in VALID.items():
            await ok(c, "record", payload={"kind": kind, **fields})
        await ok(c, "confirm_baseline", **confirm_args())
        await ok(c, "prepare_branch", run_id="r1")
        await ok(c, "record_main_experiment", run_id="r1", title="t", metrics_summary={"top1": 0.93, "nll": 0.2})
        await ok(c, "create_analysis_campaign", campaign_title="A", campaign_goal="G", slices=["x"])
        await ok(c, "record_analysis_slice", campaign_id="campaign-001", slice_id="s1", summary="ok")
        await ok(c, "render_git_graph")
        await ok(c, "refresh_summary", reason="before replay")
    paths = [p for p in quest.root.rglob("*") if p.is_file() and _materialised(quest.root, p)]
    before = {p: p.read_bytes() for p in paths}
    assert len(before) >= 16
    for p in paths:
        p.unlink()
    replay_quest(quest.root, quest_id="q1")
    assert {p: p.read_bytes() for p in paths} == before
    replay_quest(quest.root, quest_id="q1")
    assert {p: p.read_bytes() for p in paths} == before
    # folding the whole log at once equals the live, event-by-event state
    folded = fold(PROJECTION, quest.log.read())
    assert PROJECTION.render(folded) == PROJECTION.render(quest.state("artifacts"))
    # and the state survives a snapshot round trip unchanged
    assert msgspec.json.decode(msgspec.json.encode(folded), type=State) == folded


def _materialised(root: Path, p: Path) -> bool:
    rel = p.relative_to(root).as_posix()
    return rel.startswith(("artifacts/", "baselines/")) or rel == "SUMMARY.md"


_WRITER = """
import sys
from ds_events.home import Home
from ds_events.services import artifacts
from ds_events.services.artifacts.commands import Record
quest = Home(sys.argv[1]).open_quest("q1", actor=sys.argv[2])
for i in range(int(sys.argv[3])):
    artifacts.record(quest, Record(payload={"kind": "idea", "title": f"{sys.argv[2]} {i}"}))
quest.close()
"""


@pytest.mark.slow
def test_two_processes_recording_at_once_never_get_the_same_id(home: Home, quest: Quest) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(home.root), name, "15"], stderr=subprocess.PIPE)
        for name in ("w1", "w2")
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()
    events = [e for e in quest.log.read(types=["artifact.recorded"]) if isinstance(e, ArtifactRecorded)]
    ids = [e.artifact_id for e in events]
    assert len(ids) == 30 and len(set(ids)) == 30
    assert sorted(ids) == [f"idea-{n:04d}" for n in range(1, 31)]
    quest.views.materialise()
    assert len(list((quest.root / "artifacts/ideas").iterdir())) == 30


@pytest.mark.parametrize("tool", ["record", "publish_baseline"])
async def test_a_payload_that_is_not_an_object_is_refused_as_an_invalid_argument(home: Home, quest: Quest, tool: str) -> None:
    seq = domain_events(quest)
    async with client_for(home) as c:
        err = await fails(c, tool, "invalid_argument", payload="an idea")
    assert err["argument"] == "payload" and err["expected"] == "object"
    assert domain_events(quest) == seq
