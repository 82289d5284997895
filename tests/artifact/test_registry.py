"""The home's baseline registry: one log under DS_HOME/baselines that every quest's
publish_baseline appends to (serialised by its lock across processes), whose files
replay rebuilds byte for byte, and whose newest publication of an id wins."""

from __future__ import annotations

import asyncio
import json

from ds_events.events.artifact import RegistryBaselinePublished
from ds_events.home import Home, Quest
from ds_events.services.artifacts.registry import open_registry, registry_entry
from projections import baseline_registry
from tests.artifact.support import client_for, fails, ok
from tests.helpers import domain_events


async def test_quests_publishing_at_once_each_land_in_the_registry_and_replay_rebuilds_it(home: Home, quest: Quest) -> None:
    others = [home.create_quest(f"Quest {i}", quest_id=f"q{i}") for i in (2, 3, 4)]
    try:
        async def publish(quest_id: str, n: int) -> None:
            async with client_for(home, quest_id) as c:
                for i in range(n):
                    await ok(c, "publish_baseline",
                        payload={"baseline_id": f"{quest_id}-b{i}", "name": f"B{i}", "metrics_summary": {"acc": i / 10}})

        await asyncio.gather(*(publish(q, 4) for q in ("q1", "q2", "q3", "q4")))
        log, views = open_registry(home)
        try:
            entries = views.state(baseline_registry.PROJECTION.name).entries
            assert sorted(entries) == sorted(f"{q}-b{i}" for q in ("q1", "q2", "q3", "q4") for i in range(4))
            assert [e.seq for e in log.read()] == list(range(1, 17))  # one chain, no gaps
        finally:
            log.close()
        files = {p: p.read_bytes() for p in (home.root / "baselines").glob("*.json")}
        assert len(files) == 16 and json.loads(files[home.root / "baselines" / "q3-b2.json"])["source_quest"] == "q3"
        for p in files:
            p.unlink()
        log, views = open_registry(home)
        try:
            views.materialise(full=True)
        finally:
            log.close()
        assert {p: p.read_bytes() for p in files} == files
    finally:
        for q in others:
            q.close()


async def test_a_later_publication_of_an_id_replaces_the_registry_entry(home: Home, quest: Quest) -> None:
    other = home.create_quest("Other", quest_id="q2")
    try:
        async with client_for(home, "q1") as c:
            await ok(c, "publish_baseline", payload={"baseline_id": "shared", "name": "first", "summary": "from q1"})
        async with client_for(home, "q2") as c:
            result = await ok(c, "publish_baseline", payload={"baseline_id": "shared", "title": "second"})
        assert result["baseline_registry_entry"]["publications"] == 2
        entry = registry_entry(home, "shared")
        assert entry is not None and entry.source_quest == "q2" and entry.payload["title"] == "second"
        assert isinstance(entry.publication, RegistryBaselinePublished)  # the entry keeps the event itself
        path = home.root / "baselines" / "shared.json"
        assert result["baseline_registry_entry"] == {**baseline_registry.entry_document(entry), "path": str(path)}
        on_disk = json.loads(path.read_bytes())
        assert on_disk["seq"] == entry.seq and on_disk["publications"] == 2 and on_disk["title"] == "second"
        assert registry_entry(home, "nowhere") is None
    finally:
        other.close()


async def test_confirming_a_registry_baseline_checks_its_variants(home: Home, quest: Quest) -> None:
    other = home.create_quest("Other", quest_id="q2")
    try:
        async with client_for(home, "q1") as c:
            await ok(c, "publish_baseline", payload={"baseline_id": "shared", "name": "S", "baseline_variants": [{"variant_id": "main"}],
                                                     "metrics_summary": {"acc": 0.5}, "primary_metric": "acc",
                                                     "metric_contract": {"metrics": {"acc": {"description": "a", "derivation": "d",
                                                                                             "source_ref": "r"}}}})  # fmt: skip
        async with client_for(home, "q2") as c:
            before = domain_events(other)
            await fails(c, "confirm_baseline", "unknown_variant", baseline_path="baselines/shared", baseline_id="shared",
                variant_id="other")
            await fails(c, "attach_baseline", "unknown_variant", baseline_id="shared", variant_id="other")
            assert domain_events(other) == before and not (other.root / "baselines").exists()
            done = await ok(c, "confirm_baseline", baseline_path="baselines/shared", baseline_id="shared", variant_id="main")
            assert done["variant_id"] == "main" and done["metric_ids"] == ["acc"]
    finally:
        other.close()
