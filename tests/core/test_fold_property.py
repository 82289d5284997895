"""Folding event by event, with snapshots and hand-outs on the way, equals one full fold.

For every projection and random sequences of real event types (tests/helpers.py makes
them, with ids drawn from small pools so later events update what earlier ones made):
stop anywhere, snapshot the state as Views does (msgspec JSON, decoded as the state type),
hand it out (fold into a thawed copy from then on), go on event by event; the state and
the files it renders are exactly those of a single fold over the same events.
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import Phase, given, settings, strategies as st

from ds_events.events import TYPES_BY_TAG
from ds_events.log import EventLog
from ds_events.views import Views
from projections import Projection, fold, quest_projections
from projections.memory import GLOBAL_PROJECTION
from tests.helpers import EVENT_TAGS_MADE, event_payloads, random_events

PROJECTIONS: list[Projection] = [*quest_projections(), GLOBAL_PROJECTION]  # type: ignore[type-arg]
IDS = [p.name for p in PROJECTIONS]

# Every projection, each a case of its own (the hand-out property holds for all: apply
# replaces records instead of changing them, see projections.base).
PROJECTIONS_HANDED_OUT = [pytest.param(p, id=p.name) for p in PROJECTIONS]


def snapshot_restore(p: Projection, state: object) -> object:  # type: ignore[type-arg]
    """What Views.save_snapshots / _load_snapshot do to a state."""
    return msgspec.json.decode(msgspec.json.encode(state), type=p.state_type)


def same(p: Projection, a: object, b: object) -> None:  # type: ignore[type-arg]
    assert msgspec.json.encode(a) == msgspec.json.encode(b)
    if p.render is not None:
        assert p.render(a) == p.render(b)


def test_the_generator_makes_every_stored_event_type() -> None:
    # A new event type must get a maker, or the fold properties would never see it.
    assert EVENT_TAGS_MADE == set(TYPES_BY_TAG)


stops_strategy = st.lists(st.tuples(st.integers(0, 150), st.sampled_from(["snapshot", "thaw"])), max_size=6)


@pytest.mark.parametrize("projection", PROJECTIONS, ids=IDS)
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31), count=st.integers(1, 150), stops=stops_strategy)
def test_incremental_apply_with_snapshots_equals_a_full_fold(
    projection: Projection, seed: int, count: int, stops: list[tuple[int, str]]  # type: ignore[type-arg]
) -> None:
    events = random_events(seed, count)
    whole = fold(projection, events)
    at = dict(stops)
    state = projection.initial()
    for n, event in enumerate(events):
        match at.get(n):
            case "snapshot":
                state = snapshot_restore(projection, state)
            case "thaw":  # what Views does after handing a state out
                state = projection.thawed(state)
        state = projection.apply(state, event)
    same(projection, state, whole)


@pytest.mark.parametrize("projection", PROJECTIONS_HANDED_OUT)
# No shrinking: a failure shows the first falsifying example (shrinking one of these
# costs seconds and the example already names the events).
@settings(max_examples=40, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
@given(seed=st.integers(0, 2**31), count=st.integers(2, 150), cuts=st.lists(st.integers(0, 150), max_size=6))
def test_a_state_handed_out_mid_fold_stays_as_it_was(
    projection: Projection, seed: int, count: int, cuts: list[int]  # type: ignore[type-arg]
) -> None:
    events = random_events(seed, count)
    state = projection.initial()
    handed: list[tuple[object, bytes]] = []
    for n, event in enumerate(events):
        if n in cuts:
            handed.append((state, msgspec.json.encode(state)))
            state = projection.thawed(state)
        state = projection.apply(state, event)
    for old, encoded in handed:
        assert msgspec.json.encode(old) == encoded


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_views_from_a_snapshot_plus_the_tail_equal_a_fold_of_the_whole_log(tmp_path, seed: int) -> None:
    """The real Views snapshot code on a real log: save mid-way, reopen, catch up."""
    payloads = event_payloads(seed, 400)
    cut = 150 + 37 * seed
    projections = list(PROJECTIONS)
    with EventLog(tmp_path / "events.jsonl", quest_id="q1", policy="never") as log:
        log.append(payloads[:cut])
        Views(log, tmp_path / "a", projections).load(use_snapshots=False).save_snapshots()
        log.append(payloads[cut:])
        stored = log.read()
        resumed = Views(log, tmp_path / "a", projections).load()
        assert resumed.applied == len(payloads) - cut  # it did start from the snapshot
        for p in projections:
            same(p, resumed.state(p.name), fold(p, stored))
