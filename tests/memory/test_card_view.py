"""The memory view keeps each card's events (projection version 4): what a card says is
read through its ``memory.card_written`` and ``memory.card_imported``, and a snapshot
of another shape, older or mislabelled, is refused and the log folded again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ds_events.events.memory import CardImported, CardPromoted, CardSuperseded, CardWritten
from ds_events.home import Home, Quest
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import ListRecent, WriteCard
from projections.base import fold
from projections.memory import PROJECTION, render_card


def _stamped(events: list[Any]) -> list[Any]:
    return [msgspec.structs.replace(e, seq=i, ts=f"2026-01-01T00:00:{i:02d}.000000Z", quest_id="q1") for i, e in enumerate(events, 1)]


def test_a_card_reads_its_fields_through_the_write_and_the_import_that_made_it() -> None:
    written, imported, revision, superseded, promoted = _stamped([
        CardWritten(card_id="knowledge-1", kind="knowledge", title="First", body="one", tags=["a"], metadata={"stage": "idea"},
                    supersedes="knowledge-0", record_id="mem-001", record_type="working_solution"),
        CardImported(card_id="knowledge-1", kind="knowledge", title="Edited", body="by hand", tags=["b"], content="---\nx\n---\n"),
        CardWritten(card_id="knowledge-1", kind="ideas", title="Revised", body="three", scope="global", source_quest="other"),
        CardSuperseded(card_id="knowledge-1", by_card_id="knowledge-2"),
        CardPromoted(card_id="knowledge-1", global_card_id="knowledge-g", source_quest="q1"),
    ])  # fmt: skip
    after_import = fold(PROJECTION, [written, imported]).cards["knowledge-1"]
    assert after_import.written is written and after_import.imported is imported  # the events themselves, not copies
    assert (after_import.title, after_import.body, after_import.tags, after_import.content) == ("Edited", "by hand", ["b"], "---\nx\n---\n")
    assert render_card(after_import) == b"---\nx\n---\n"  # the imported file text, verbatim
    assert (after_import.created_seq, after_import.seq, after_import.revision) == (1, 2, 2)

    card = fold(PROJECTION, [written, imported, revision, superseded, promoted]).cards["knowledge-1"]
    # A revision takes the new text, tags and metadata and drops the hand edit; the card
    # keeps the write that made it: id, kind, scope, quest, creation, its link and record.
    assert (card.title, card.body, card.tags, card.metadata, card.content) == ("Revised", "three", [], {}, None)
    assert (card.kind, card.scope, card.quest_id, card.created_at, card.created_seq) == ("knowledge", "quest", "q1", written.ts, 1)
    assert (card.supersedes, card.record_id, card.record_type) == ("knowledge-0", "mem-001", "working_solution")
    assert (card.status, card.superseded_by, card.promoted_to, card.updated_at, card.seq, card.revision) == (
        "superseded", "knowledge-2", "knowledge-g", superseded.ts, 5, 3,
    )  # fmt: skip


def _snapshot(quest: Quest) -> tuple[Path, dict[str, Any]]:
    quest.views.save_snapshots()
    path = quest.views.snapshot_dir / f"{PROJECTION.name}.json"
    return path, json.loads(path.read_bytes())


def _written(mem: MemoryContext) -> str:
    return svc.write(mem, WriteCard(kind="knowledge", title="Warmup stops early divergence", body="500 steps", tags=["vit"])).id


def test_a_snapshot_of_the_current_shape_is_what_a_reopened_quest_starts_from(home: Home, quest: Quest, mem: MemoryContext) -> None:
    card_id = _written(mem)
    path, snap = _snapshot(quest)
    assert snap["version"] == PROJECTION.version == 4
    kept = snap["state"]["cards"][card_id]["written"]
    assert kept["type"] == "memory.card_written" and kept["title"] == "Warmup stops early divergence"
    kept["title"] = "Read from the snapshot"  # so a state built from the snapshot can be told apart
    path.write_text(json.dumps(snap))
    reopened = home.open_quest(quest.id)
    try:
        assert reopened.state("memory").cards[card_id].title == "Read from the snapshot"
    finally:
        reopened.close()


# 3: what the code before version 4 wrote; 4: the same old shape under today's version.
@pytest.mark.parametrize("version", [3, 4])
def test_a_snapshot_of_the_old_card_shape_is_refused_and_the_log_folded_again(
    home: Home, quest: Quest, mem: MemoryContext, version: int
) -> None:
    card_id = _written(mem)
    path, snap = _snapshot(quest)
    card = snap["state"]["cards"][card_id]
    w = card["written"]
    snap["state"]["cards"][card_id] = {
        "id": card_id, "kind": w["kind"], "title": "Read from the old snapshot", "body": w["body"], "scope": w["scope"],
        "tags": w["tags"], "metadata": w["metadata"], "quest_id": w["quest_id"], "created_at": w["ts"],
        "updated_at": card["updated_at"], "created_seq": w["seq"], "seq": card["seq"], "revision": 1, "status": "active",
    }  # fmt: skip
    snap["version"] = version
    path.write_text(json.dumps(snap))
    reopened = home.open_quest(quest.id)
    try:
        state = reopened.state("memory")
        assert state.cards[card_id].title == "Warmup stops early divergence"
        assert msgspec.json.encode(state) == msgspec.json.encode(fold(PROJECTION, reopened.log.read(0)))
    finally:
        reopened.close()


def test_an_answer_about_a_card_is_the_same_from_a_snapshot_as_from_the_log(home: Home, quest: Quest, mem: MemoryContext) -> None:
    card_id = _written(mem)
    before = msgspec.json.encode(svc.list_recent(mem, ListRecent()))
    quest.views.save_snapshots()
    reopened = home.open_quest(quest.id)  # its memory view decoded from the snapshot
    other = MemoryContext(reopened)
    try:
        after = svc.list_recent(other, ListRecent())
        assert [c.id for c in after.results] == [card_id]
        # An active card's status is left out (at its default), whatever state it came from.
        assert msgspec.json.encode(after) == before and b'"status"' not in before
    finally:
        other.close()
        reopened.close()
