"""Replay: the generic fold, determinism, snapshots, and materialised files rebuilt byte for byte."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given, settings, strategies as st

from ds_events.events import ConversationMessage, QuestAnchorChanged, QuestCompleted, QuestControl, QuestCreated
from ds_events.log import EventLog
from ds_events.replay import replay_quest
from ds_events.services import quest as svc
from ds_events.services.runtime import steering
from ds_events.verify import repair_log
from ds_events.views import Views
from projections import fold, quest_projections
from projections.status import PROJECTION as STATUS

MATERIALISED = ["quest.yaml", "brief.md", "plan.md", "status.md", "SUMMARY.md"]


def digest_tree(root: Path) -> dict[str, str]:
    """Hash of every file under root except the log itself and its lock/index."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith(".git/") and not rel.startswith(".ds/events.jsonl"):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def drive(quest) -> None:
    svc.post_message(quest, svc.PostMessage(text="first"))
    svc.change_anchor(quest, svc.ChangeAnchor(anchor="baseline"))
    steering.control(quest, svc.Control(action="pause", reason="lunch"))
    steering.control(quest, svc.Control(action="resume"))
    svc.post_message(quest, svc.PostMessage(text="done", role="assistant"))


def test_replay_writes_back_deleted_files_byte_for_byte(quest):
    drive(quest)
    before = {name: (quest.root / name).read_bytes() for name in MATERIALISED}
    for name in MATERIALISED:
        (quest.root / name).unlink()
    result = replay_quest(quest.root, quest_id=quest.id)
    assert set(MATERIALISED) <= set(result.files_written)
    assert {name: (quest.root / name).read_bytes() for name in MATERIALISED} == before


def test_replaying_twice_gives_identical_bytes_including_snapshots(quest):
    drive(quest)
    replay_quest(quest.root, quest_id=quest.id)
    first = digest_tree(quest.root)
    second_result = replay_quest(quest.root, quest_id=quest.id)
    assert second_result.files_written == []
    assert digest_tree(quest.root) == first
    assert any(k.startswith(".ds/snapshots/") for k in first)


def test_status_projection_follows_the_lifecycle(quest):
    drive(quest)
    s = quest.state("status")
    assert (s.title, s.status, s.anchor, s.user_messages, s.assistant_messages) == ("Test quest", "active", "baseline", 1, 1)
    assert s.counts == {"quest.created": 1, "conversation.message": 2, "quest.anchor_changed": 1, "quest.control": 2}
    svc.complete(quest, svc.Complete(summary="all done"))
    assert quest.state("status").status == "completed"
    assert b"status: completed" in (quest.root / "quest.yaml").read_bytes()


def test_a_snapshot_lets_views_start_from_its_seq(quest):
    drive(quest)
    replay_quest(quest.root, quest_id=quest.id)
    svc.post_message(quest, svc.PostMessage(text="after the snapshot"))
    views = Views(quest.log, quest.root).load()
    assert views.applied == 1  # only the event after the snapshot was folded
    assert views.state("status").user_messages == 2


def test_a_snapshot_that_no_longer_matches_the_log_is_ignored(quest):
    drive(quest)
    replay_quest(quest.root, quest_id=quest.id)
    path = Path(quest.log.path)
    lines = path.read_bytes().split(b"\n")[:-1]
    del lines[1]  # drop "first": repair renumbers, the snapshot's seq now names another event
    path.write_bytes(b"\n".join(lines) + b"\n")
    repair_log(str(path), quest_id=quest.id)
    with EventLog(path) as log:
        views = Views(log, quest.root).load()
        assert views.applied == log.last_seq  # rebuilt from scratch
        assert views.state("status").user_messages == 0


EVENTS = st.one_of(
    st.builds(ConversationMessage, role=st.sampled_from(["user", "assistant"]), content=st.text(max_size=20)),
    st.builds(QuestControl, action=st.sampled_from(["pause", "stop", "resume"])),
    st.builds(QuestAnchorChanged, anchor=st.sampled_from(["scout", "idea", "write"])),
    st.builds(QuestCompleted, summary=st.text(max_size=10)),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(EVENTS, max_size=40))
def test_folding_a_log_equals_applying_event_by_event_and_replay_is_deterministic(tmp_path_factory, events):
    root = tmp_path_factory.mktemp("q")
    with EventLog(root / ".ds" / "events.jsonl", quest_id="p", policy="never") as log:
        log.append([QuestCreated(title="prop"), *events])
        stored = log.read()
        whole = fold(STATUS, stored)
        stepwise = STATUS.initial()
        for event in stored:
            stepwise = STATUS.apply(stepwise, event)
        assert whole == stepwise
        renders = []
        for _ in range(2):
            views = Views(log, root, quest_projections())
            views.catch_up()
            renders.append({p.name: p.render(views.state(p.name)) if p.render else {} for p in views.projections})
        assert renders[0] == renders[1]


def test_replay_keeps_a_copy_of_a_hand_edited_file_before_restoring_it(quest):
    drive(quest)
    status = quest.root / "status.md"
    original = status.read_bytes()
    status.write_text("my own notes, typed by hand\n")
    result = replay_quest(quest.root, quest_id=quest.id)
    assert result.replaced == ["status.md"]
    assert status.read_bytes() == original
    assert (Path(result.replaced_dir) / "status.md").read_text() == "my own notes, typed by hand\n"
    # An untouched tree replays without replacing anything.
    again = replay_quest(quest.root, quest_id=quest.id)
    assert again.replaced == [] and again.replaced_dir is None


def test_live_updates_rewrite_only_the_files_an_event_changes(quest):
    identity = quest.root / "quest.yaml"
    status = quest.root / "status.md"
    before_identity, before_status = identity.read_bytes(), status.read_bytes()
    svc.post_message(quest, svc.PostMessage(text="a message changes counters, not the quest's identity"))
    assert identity.read_bytes() == before_identity
    assert status.read_bytes() != before_status
    svc.change_anchor(quest, svc.ChangeAnchor(anchor="idea"))
    assert b"active_anchor: idea" in identity.read_bytes()
    # What the live path wrote is exactly what a full replay renders.
    assert replay_quest(quest.root, quest_id=quest.id).files_written == []


def test_a_file_another_process_rewrote_is_written_again_when_our_state_differs(home, quest):
    # Two handles on one quest stand for two processes (each has its own views).
    other = home.open_quest(quest.id)
    try:
        svc.change_anchor(quest, svc.ChangeAnchor(anchor="idea"))
        svc.change_anchor(other, svc.ChangeAnchor(anchor="write"))  # other writes quest.yaml with anchor write
        assert b"active_anchor: write" in (quest.root / "quest.yaml").read_bytes()
        svc.change_anchor(quest, svc.ChangeAnchor(anchor="idea"))  # back to the bytes `quest` wrote before
        assert b"active_anchor: idea" in (quest.root / "quest.yaml").read_bytes()
    finally:
        other.close()
