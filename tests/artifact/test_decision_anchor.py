"""A decision with ``next_anchor`` moves the quest's stage (forward or back) with its
reason, in the same append; a bad stage is refused and changes nothing."""

from __future__ import annotations

import pytest

from ds_events.errors import Invalid
from ds_events.home import Quest
from ds_events.services import artifacts as service
from ds_events.services.artifacts.commands import Record


def decide(quest: Quest, **extra: str):
    payload = {"kind": "decision", "verdict": "v", "action": "continue", "reason": "the smoke run diverged", **extra}
    return service.record(quest, Record(payload=payload))


def test_a_decision_moves_the_anchor_back_with_its_reason(quest: Quest) -> None:
    decide(quest, next_anchor="write")
    result = decide(quest, next_anchor="experiment")
    status = quest.state("status")
    assert status.anchor == "experiment"
    moved = [e for e in quest.log.read() if e.type == "quest.anchor_changed"]
    assert [(e.previous, e.anchor) for e in moved] == [("scout", "write"), ("write", "experiment")]
    assert moved[-1].reason == f"{result.artifact_id}: the smoke run diverged"
    assert moved[-1].seq == result.seq + 1  # one append with the decision
    decide(quest)  # no next_anchor: the stage stays
    decide(quest, next_anchor="experiment")  # the same stage: no move recorded
    assert len([e for e in quest.log.read() if e.type == "quest.anchor_changed"]) == 2


def test_a_bad_next_anchor_is_refused_and_changes_nothing(quest: Quest) -> None:
    before = quest.log.last_seq
    with pytest.raises(Invalid) as err:
        decide(quest, next_anchor="experiments")
    assert err.value.code == "invalid_anchor"
    assert quest.log.last_seq == before and quest.state("status").anchor == "scout"
