"""``GET /api/quests/{id}/artifacts`` lists the newest records (of a kind) at the cost of
what it returns, through the artifacts projection's ``by_seq`` / ``newest`` index; the
index is a pure fold (replay, incremental and snapshot give the same state)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
from hypothesis import given, settings, strategies as st

from ds_events.events import Event
from ds_events.events.artifact import ArtifactRecorded
from ds_events.events.core import ConversationMessage
from ds_events.home import Home, Quest
from handlers.http.app import HUB
from projections import artifacts
from projections.base import fold

KINDS = ("idea", "decision", "progress", "milestone")


def _stored(events: list[Event]) -> list[Event]:
    """Events with the seqs a log would give them."""
    return [msgspec.structs.replace(e, seq=i + 1) for i, e in enumerate(events)]


def _record(i: int, kind: str, artifact_id: str | None = None) -> ArtifactRecorded:
    return ArtifactRecorded(artifact_id=artifact_id or f"{kind}-{i:04d}", kind=kind, payload={"title": f"t{i}"}, branch="main")


def _scan(state: artifacts.State, limit: int, kind: str | None) -> list[str]:
    """What the route used to compute: every record filtered, the last ``limit``, newest first."""
    return [r.artifact_id for r in state.records.values() if kind is None or r.kind == kind][-limit:][::-1]


kinds_and_noise = st.lists(st.sampled_from((*KINDS, None)), max_size=60)


@settings(max_examples=60, deadline=None)
@given(kinds_and_noise, st.integers(1, 70), st.integers(0, 60))
def test_newest_records_equal_a_full_scan_and_the_index_folds_the_same_in_any_split(
    kinds: list[str | None], limit: int, split: int
) -> None:
    events = _stored([ConversationMessage(role="user", content="x") if k is None else _record(i, k) for i, k in enumerate(kinds)])
    whole = fold(artifacts.PROJECTION, events)
    for kind in (None, *KINDS):
        assert [r.artifact_id for r in artifacts.newest_records(whole, limit, kind=kind)] == _scan(whole, limit, kind)
    # Live, the daemon folds part, hands the state out, and folds the rest into a copy.
    first = fold(artifacts.PROJECTION, events[:split])
    held = msgspec.json.encode(first)
    rest = fold(artifacts.PROJECTION, events[split:], artifacts.PROJECTION.thawed(first))
    assert msgspec.json.encode(rest) == msgspec.json.encode(whole)
    assert msgspec.json.encode(first) == held  # the handed-out state did not change
    # A snapshot round trip keeps the index (int keys, tuples) exactly.
    again = msgspec.json.decode(msgspec.json.encode(whole), type=artifacts.State)
    assert again == whole


def test_an_id_recorded_again_is_listed_once_at_its_latest_recording_under_its_new_kind() -> None:
    events = _stored([_record(1, "idea", "x"), _record(2, "idea"), _record(3, "decision", "x"), _record(4, "idea")])
    state = fold(artifacts.PROJECTION, events)
    assert [r.artifact_id for r in artifacts.newest_records(state, 10)] == ["idea-0004", "x", "idea-0002"]
    assert [r.artifact_id for r in artifacts.newest_records(state, 10, kind="idea")] == ["idea-0004", "idea-0002"]
    assert [r.artifact_id for r in artifacts.newest_records(state, 10, kind="decision")] == ["x"]
    assert artifacts.newest_records(state, 10, kind="milestone") == []


class _CountingDict(dict):  # type: ignore[type-arg]
    """A records map that counts lookups and notes any full iteration."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.lookups = 0
        self.scanned = False

    def get(self, key: Any, default: Any = None) -> Any:
        self.lookups += 1
        return super().get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self.lookups += 1
        return super().__getitem__(key)

    def values(self) -> Any:
        self.scanned = True
        return super().values()

    def items(self) -> Any:
        self.scanned = True
        return super().items()

    def __iter__(self) -> Any:
        self.scanned = True
        return super().__iter__()


async def test_the_route_reads_only_the_records_it_returns(client: Any, home: Home, quest: Quest) -> None:
    events = [_record(i, "milestone" if i % 50 == 0 else KINDS[i % 3]) for i in range(1, 2001)]  # milestones are rare
    for start in range(0, len(events), 500):
        quest.log.append(events[start : start + 500])
    assert (await client.get("/api/quests/q1/artifacts?limit=1")).status == 200  # the daemon has the quest open
    q = client.server.app[HUB].quest("q1")
    q.views.catch_up()
    with q.views.lend("artifacts") as state:  # the state the next request reads (no event comes in between)
        expected = {kind: _scan(state, 3, kind)[::-1] for kind in (None, "milestone", "idea")}
        counting = state.records = _CountingDict(state.records)
    for kind, path in ((None, "?limit=3"), ("milestone", "?kind=milestone&limit=3"), ("idea", "?kind=idea&limit=3")):
        counting.lookups = 0
        resp = await client.get(f"/api/quests/q1/artifacts{path}")
        body = await resp.json()
        assert resp.status == 200, body
        assert [r["artifact_id"] for r in body["records"]] == expected[kind]  # oldest first, as before
        assert body["counts"] == dict(Counter(e.kind for e in events))
        assert not counting.scanned, "the route iterated over every record"
        assert counting.lookups <= 3, f"{counting.lookups} record lookups for 3 records"
