"""The interactions projection: a fold of the whole log equals the live state; snapshots round-trip."""

from __future__ import annotations

import tempfile

import msgspec
from hypothesis import HealthCheck, given, settings, strategies as st

from ds_events.home import Home
from ds_events.services import interactions as service, quest as quest_service
from ds_events.services.interactions.commands import Interact, Reply
from projections import fold, interactions as view

OPTIONS = [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]
op = st.one_of(
    st.tuples(st.just("message"), st.sampled_from(["hi", "stop", "go on"])),
    st.tuples(st.just("progress"), st.sampled_from(["epoch 1", "epoch 1", "epoch 2"])),
    st.tuples(st.just("decision"), st.just("?")),
    st.tuples(st.just("reply"), st.sampled_from(["a", "b"])),
    st.tuples(st.just("consume"), st.just("")),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=25))
def test_folding_the_whole_log_equals_the_live_state_and_snapshots_round_trip(ops: list[tuple[str, str]]) -> None:
    home = Home(tempfile.mkdtemp(prefix="ds-prop-"))
    home.init()
    with home.create_quest("prop", quest_id="prop") as quest:
        for kind, arg in ops:
            if kind == "message":
                quest_service.post_message(quest, quest_service.PostMessage(text=arg))
            elif kind == "progress":
                service.interact(quest, Interact(message=arg))
            elif kind == "decision":
                service.interact(quest, Interact(kind="decision_request", message=arg, options=OPTIONS))
            elif kind == "reply":
                open_requests = quest.state("interactions").open_requests
                if open_requests:
                    service.reply(quest, Reply(interaction_id=open_requests[0], text=arg, option_id=arg))
            else:
                service.consume_mailbox(quest)
        live = quest.state("interactions")
        folded = fold(view.PROJECTION, quest.log.read())
        assert msgspec.json.encode(folded) == msgspec.json.encode(live)
        assert msgspec.json.decode(msgspec.json.encode(live), type=view.State) == live
        assert view.render(folded) == view.render(live)
        # Nothing was lost or delivered twice: every queued item is pending xor delivered once.
        assert live.duplicate_deliveries == 0
        assert {i.id for i in live.inbound.values() if i.delivered_batch is None} == set(live.pending)


def test_a_snapshot_from_before_inbound_items_kept_their_events_is_refused_and_the_view_refolded(tmp_path) -> None:
    home = Home(tmp_path / "home")
    home.init()
    with home.create_quest("snap", quest_id="snap") as quest:
        quest_service.post_message(quest, quest_service.PostMessage(text="use the small model"))
        quest.views.save_snapshots()
        path = quest.views.snapshot_dir / "interactions.json"
    # The same snapshot as version 1 wrote it, but holding a state that also decodes
    # today (an empty mailbox): only its version tells it apart.
    snap = msgspec.json.decode(path.read_bytes())
    assert snap["version"] == view.PROJECTION.version == 2
    stale = msgspec.json.decode(msgspec.json.encode(view.initial()))
    stale["last_seq"] = snap["seq"]
    path.write_bytes(msgspec.json.encode({**snap, "version": 1, "state": stale}))
    with home.open_quest("snap") as again:
        [item] = view.pending_items(again.state("interactions"))
        assert (item.kind, item.text, item.source) == ("message", "use the small model", "cli")
