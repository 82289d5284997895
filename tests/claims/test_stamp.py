"""The claim stamp: the hashes of the events a manuscript's numbers cite and of the
manuscript; :func:`check_stamp` finds a cited line edited in the log, a cited record
overwritten later (``overwrite_baseline``), a cited event gone or replaced, and a
manuscript changed or gone; ``ds verify`` reports what it finds and exits 1."""

from __future__ import annotations

import pytest

from ds_events.errors import Conflict
from ds_events.home import Home, Quest
from ds_events.services import claims
from ds_events.services.claims import (
    QuestLog,
    audit_quest,
    check_stamp,
    claim_stamp,
    event_hash,
    stamp as stamp_module,
)
from tests.claims.support import build_quest, overwrite_baseline, write_manuscript
from tests.claims.test_audit import CORRECT


def _fresh(home: Home) -> QuestLog:
    """The quest's log opened anew, read-only (as ``ds verify`` reads it)."""
    return QuestLog(log=home.open_log("q1", read_only=True, root=home.quest_root("q1")), root=home.quest_root("q1"))


async def _stamped(home: Home, quest: Quest) -> dict[str, object]:
    await build_quest(home)
    write_manuscript(quest, CORRECT)
    audit = audit_quest(quest)
    assert audit.ok, [(c.mention.text, c.reason) for c in audit.unresolved]
    return claim_stamp(audit, quest.log.read())


async def test_a_stamp_names_every_cited_event_by_seq_id_and_hash_and_holds_while_nothing_changes(home: Home, quest: Quest) -> None:
    stamp = await _stamped(home, quest)
    cited = stamp["events"]
    assert isinstance(cited, list)
    runs = quest.log.read(types=["artifact.main_experiment_recorded"])
    by_seq = {e.seq: e for e in quest.log.read()}
    assert {c["key"] for c in cited} == {"run:r1", "run:r2", "baseline:resnet20", "slice:campaign-001/s1"}
    for c in cited:
        assert c["id"] == by_seq[c["seq"]].id and c["sha256"] == event_hash(by_seq[c["seq"]])
    assert {r.seq for r in runs} <= {c["seq"] for c in cited}
    assert stamp["manuscript_path"] == "paper/manuscript.md" and stamp["log_seq"] == quest.log.last_seq
    assert check_stamp(stamp, quest) == []
    log = _fresh(home)
    try:
        assert check_stamp(stamp, log) == []
    finally:
        log.log.close()


async def test_editing_a_cited_record_in_the_log_breaks_the_stamp(home: Home, quest: Quest) -> None:
    stamp = await _stamped(home, quest)
    (r1,) = [e for e in quest.log.read(types=["artifact.main_experiment_recorded"]) if e.run == "r1"]  # type: ignore[attr-defined]
    path = quest.root / ".ds" / "events.jsonl"
    lines = path.read_bytes().split(b"\n")
    assert b'"top1":0.9123' in lines[r1.seq - 1]
    lines[r1.seq - 1] = lines[r1.seq - 1].replace(b'"top1":0.9123', b'"top1":0.9124')  # same length: offsets hold
    path.write_bytes(b"\n".join(lines))
    log = _fresh(home)
    try:
        problems = check_stamp(stamp, log)
    finally:
        log.log.close()
    assert [(p.what, p.seq) for p in problems] == [("event_edited", r1.seq)]
    assert "run:r1" in problems[0].reason


async def test_a_later_overwrite_of_a_cited_baseline_breaks_the_stamp(home: Home, quest: Quest) -> None:
    stamp = await _stamped(home, quest)
    (first,) = quest.log.read(types=["artifact.baseline_confirmed"])
    await overwrite_baseline(home, 0.9034)
    (_, second) = quest.log.read(types=["artifact.baseline_confirmed"])
    problems = check_stamp(stamp, quest)
    assert [(p.what, p.seq, p.later_seq) for p in problems] == [("record_overwritten", first.seq, second.seq)]
    assert problems[0].reason == (f"baseline:resnet20, cited at seq {first.seq}, was overwritten (overwrite_baseline) at seq {second.seq}")
    # and the audit now says the baseline's number is superseded
    assert not audit_quest(quest).ok


async def test_a_manuscript_changed_or_gone_after_the_stamp_breaks_it(home: Home, quest: Quest) -> None:
    stamp = await _stamped(home, quest)
    assert check_stamp(stamp, quest, manuscript=CORRECT) == []
    assert [p.what for p in check_stamp(stamp, quest, manuscript=CORRECT + "\n")] == ["manuscript_changed"]
    write_manuscript(quest, CORRECT.replace("91.2%", "91.3%"))
    assert [(p.what, p.seq) for p in check_stamp(stamp, quest)] == [("manuscript_changed", 0)]
    (quest.root / "paper" / "manuscript.md").unlink()
    assert [p.what for p in check_stamp(stamp, quest)] == ["manuscript_missing"]


async def test_a_cited_event_gone_or_replaced_and_a_malformed_stamp_are_reported(home: Home, quest: Quest) -> None:
    stamp = await _stamped(home, quest)
    events = [dict(e) for e in stamp["events"]]  # type: ignore[attr-defined]
    gone = {**stamp, "events": [{**events[0], "seq": quest.log.last_seq + 50}]}
    assert [p.what for p in check_stamp(gone, quest)] == ["event_missing"]
    other = {**stamp, "events": [{**events[0], "id": "0" * 32}]}
    assert [p.what for p in check_stamp(other, quest)] == ["event_replaced"]
    assert [p.what for p in check_stamp({"v": 1, "events": "no"}, quest)] == ["invalid_stamp"]


async def test_a_stamp_is_refused_while_a_number_does_not_resolve(home: Home, quest: Quest) -> None:
    await build_quest(home)
    write_manuscript(quest, CORRECT + "A made-up 93.7% too.\n")
    before = (quest.root / ".ds" / "events.jsonl").read_bytes()
    with pytest.raises(Conflict) as refused:
        claim_stamp(audit_quest(quest), quest.log.read())
    assert refused.value.code == "claims_unresolved" and refused.value.details["unresolved"] == ["8:11 93.7%"]
    assert (quest.root / ".ds" / "events.jsonl").read_bytes() == before


class _Stamped:
    """A stamped event as the paper bundle will carry it (its type is the paper helper's)."""

    def __init__(self, seq: int, stamp: dict[str, object]) -> None:
        self.seq = seq
        self.claim_stamp = stamp


async def test_ds_verify_reports_a_broken_claim_stamp_and_exits_1(
    home: Home, quest: Quest, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ds_events.cli import main

    stamp = await _stamped(home, quest)
    bundle_seq = quest.log.last_seq
    # No event type carries `claim_stamp` before the paper bundle lands: stand one in.
    monkeypatch.setattr(stamp_module, "stamp_types", lambda: ["paper.bundle_submitted"])
    monkeypatch.setattr(claims, "stamp_types", stamp_module.stamp_types)
    monkeypatch.setattr(stamp_module, "stamped_events", lambda q: [_Stamped(bundle_seq, stamp)])
    with pytest.raises(SystemExit) as done:
        main(["verify", "q1"])
    assert done.value.code in (0, None), capsys.readouterr()
    assert capsys.readouterr().out.startswith("ok: ")
    await overwrite_baseline(home, 0.9034)
    with pytest.raises(SystemExit) as done:
        main(["verify", "q1"])
    out = capsys.readouterr().out
    assert done.value.code == 1
    assert f"claim stamp of seq {bundle_seq}: baseline:resnet20, cited at seq" in out and "(record_overwritten)" in out
    with pytest.raises(SystemExit):
        main(["verify", "q1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and [p["what"] for p in report["claim_stamps"]] == ["record_overwritten"]
