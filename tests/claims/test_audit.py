"""The claim audit against a quest built through the real `artifact` MCP server: every
number of a correct manuscript resolves to the event it comes from; a number rounded
within the contract's precision resolves and one rounded coarser does not; a number
that matches nothing is reported with its line; a number copied from a superseded
record (an overwritten baseline confirmation, a failed slice, a run recorded again) is
reported as superseded."""

from __future__ import annotations

from ds_events.events.artifact import MainExperimentRecorded
from ds_events.home import Home, Quest
from ds_events.services.claims import Claim, ClaimAudit, audit_manuscript, find_numbers, quest_sources
from tests.claims.support import build_quest, overwrite_baseline

CORRECT = """# Results

## 4.1 Main results
ResNet-20 reaches 90.0% top-1 accuracy (Table 1), as He et al. reported in 2016 [12].
Our run r1 reaches 91.2% and r2 reaches 91.87%, a gain of +1.87 points over the baseline.
Across 2 runs, with 3 seeds for r1, r2 improves over r1 by 0.64 points; relative to the baseline it improves by 2.08%.
Without augmentation (slice s1) accuracy drops by 1.36 points to 90.51%.
"""


def _events(quest: Quest, type_: str) -> dict[str, int]:
    """The seq of each event of ``type_``, by what it records (run id, baseline id or slice id)."""
    out: dict[str, int] = {}
    for e in quest.log.read(types=[type_]):
        key = str(getattr(e, "run", None) or getattr(e, "slice_id", None) or getattr(e, "baseline_id", ""))
        out[key] = e.seq
    return out


def _claim(audit: ClaimAudit, text: str) -> Claim:
    found = [c for c in audit.claims if c.mention.text == text]
    assert len(found) == 1, (text, [c.mention.text for c in audit.claims])
    return found[0]


async def test_every_number_of_a_correct_manuscript_resolves_to_the_event_it_comes_from(home: Home, quest: Quest) -> None:
    built = await build_quest(home)
    audit = audit_manuscript(CORRECT, quest_sources(quest), path="paper/manuscript.md")
    runs = _events(quest, "artifact.main_experiment_recorded")
    baselines = _events(quest, "artifact.baseline_confirmed")
    slices = _events(quest, "artifact.analysis_slice_recorded")

    assert [c.mention.text for c in audit.claims] == [
        "90.0%", "91.2%", "91.87%", "+1.87", "2", "3", "0.64", "2.08%", "1.36", "90.51%",
    ]  # fmt: skip
    assert [c.status for c in audit.claims] == ["resolved"] * 10, [(c.mention.text, c.reason) for c in audit.unresolved]
    assert audit.ok and audit.last_seq == quest.log.last_seq

    r1 = _claim(audit, "91.2%")
    assert (r1.mention.line, r1.mention.column) == (5, 20)
    (source,) = r1.sources
    assert source.kind == "main_run" and source.subject == "main run r1" and source.metric == "top1"
    assert [e.seq for e in source.events] == [runs["r1"]] and source.events[0].key == "run:r1"
    assert source.commit == built["r1"]["head_sha"] and source.value == 0.9123
    assert source.contract["decimals"] == 3 and source.contract["confirmed_seq"] == baselines["resnet20"]
    assert source.shown == "0.9123 x 100 rounded to 1 decimal = 91.2%"

    base = _claim(audit, "90.0%").sources[0]
    assert base.kind == "baseline" and [e.seq for e in base.events] == [baselines["resnet20"]]
    delta = _claim(audit, "+1.87").sources[0]
    assert delta.kind == "delta" and delta.subject == "main run r2 - baseline resnet20"
    assert [e.seq for e in delta.events] == [runs["r2"], baselines["resnet20"]]
    assert _claim(audit, "2.08%").sources[0].kind == "relative_delta"
    assert _claim(audit, "1.36").sources[0].subject == "slice campaign-001/s1 - main run r2"
    assert [e.seq for e in _claim(audit, "90.51%").sources[0].events] == [slices["s1"]]
    count = _claim(audit, "2").sources[0]
    assert count.kind == "count" and sorted(e.seq for e in count.events) == sorted(runs.values())
    assert _claim(audit, "3").sources[0].subject == "seeds of main run r1"

    skipped = {(s.text, s.reason) for s in audit.skipped}
    assert {("4.1", "a heading's section number"), ("1", "a figure, table, section or equation number"),
            ("2016", "a year"), ("12", "a citation marker"), ("20", "part of a name")} <= skipped  # fmt: skip
    # every event a resolved claim cites, once
    assert {e.seq for e in audit.cited()} == {*runs.values(), *baselines.values(), slices["s1"]}


async def test_a_number_rounded_within_the_contracts_precision_resolves_and_one_rounded_coarser_does_not(home: Home, quest: Quest) -> None:
    await build_quest(home)
    text = (
        "r1 reaches 0.912 top-1, that is 91.2%; rounded to 91% it says less than the contract allows.\n"
        "r2 answers in 71.2 ms (71.23 ms), not 71.3 ms.\n"
    )
    audit = audit_manuscript(text, quest_sources(quest))
    status = {c.mention.text: c.status for c in audit.claims}
    # top1 is reported to 3 decimals (the contract's `decimals`): 0.912 and 91.2% resolve
    assert status["0.912"] == status["91.2%"] == "resolved"
    coarse = _claim(audit, "91%")
    assert coarse.status == "unresolved" and coarse.mention.line == 1
    assert "coarser than baseline resnet20's metric contract" in coarse.reason and "3 decimals" in coarse.reason
    # latency_ms has no declared precision: the manuscript's own is the rule
    assert status["71.2"] == status["71.23"] == "resolved"
    assert _claim(audit, "71.2").sources[0].subject == "main run r2"
    assert status["71.3"] == "unresolved"


async def test_a_number_that_matches_nothing_is_reported_with_its_line_and_the_nearest_record(home: Home, quest: Quest) -> None:
    await build_quest(home)
    text = "# Results\n\nr2 reaches 91.87% top-1.\nWith the new schedule it reaches 93.7% top-1 over 4 runs.\n"
    audit = audit_manuscript(text, quest_sources(quest))
    assert not audit.ok
    bad = _claim(audit, "93.7%")
    assert bad.status == "unresolved" and (bad.mention.line, bad.mention.column) == (4, 34) and bad.sources == []
    assert bad.reason == "no recorded metric value rounds to 93.7%; nearest: main run r2 top1 = 0.9187 (91.87 as written here)"
    runs = _claim(audit, "4")
    assert runs.status == "unresolved" and runs.mention.kind == "count" and "main runs recorded: 2" in runs.reason
    assert _claim(audit, "91.87%").status == "resolved"
    assert [c.mention.text for c in audit.unresolved] == ["93.7%", "4"]


async def test_a_number_copied_from_a_superseded_record_is_reported_as_superseded(home: Home, quest: Quest) -> None:
    await build_quest(home)
    await overwrite_baseline(home, 0.9034)
    (first, second) = quest.log.read(types=["artifact.baseline_confirmed"])
    text = (
        "The baseline reaches 90.0% top-1, so r1 gains +1.23 points.\n"
        "Re-evaluated, the baseline reaches 90.3% and r1 gains +0.89 points.\n"
        "Halving the epochs (slice s2) gives 87.1%.\n"
    )
    audit = audit_manuscript(text, quest_sources(quest))
    old = _claim(audit, "90.0%")
    assert old.status == "superseded" and [e.seq for e in old.sources[0].events] == [first.seq]
    assert f"confirmation at seq {first.seq} was overwritten at seq {second.seq}" in old.reason
    old_delta = _claim(audit, "+1.23")
    assert old_delta.status == "superseded" and old_delta.sources[0].subject == "main run r1 - baseline resnet20"
    assert _claim(audit, "90.3%").status == "resolved" and _claim(audit, "90.3%").sources[0].events[0].seq == second.seq
    new_delta = _claim(audit, "+0.89")
    assert new_delta.status == "resolved" and [e.seq for e in new_delta.sources[0].events][1] == second.seq
    failed = _claim(audit, "87.1%")
    assert failed.status == "superseded" and "slice campaign-001/s2 was recorded as failed" in failed.reason
    assert not audit.ok


async def test_a_run_recorded_again_by_another_writer_supersedes_its_first_recording(home: Home, quest: Quest) -> None:
    # The artifact service refuses a run id twice (run_exists); a log another tool wrote
    # may still hold one: the last recording stands.
    await build_quest(home)
    (r1,) = [e for e in quest.log.read(types=["artifact.main_experiment_recorded"]) if e.run == "r1"]  # type: ignore[attr-defined]
    again = quest.emit(MainExperimentRecorded(run="r1", title="r1", baseline_id="resnet20", metrics_summary={"top1": 0.9201}))
    audit = audit_manuscript("r1 reaches 91.2%, now 92.0%.\n", quest_sources(quest))
    first = _claim(audit, "91.2%")
    assert first.status == "superseded" and f"recorded at seq {r1.seq} was recorded again at seq {again.seq}" in first.reason
    assert _claim(audit, "92.0%").status == "resolved"


def test_numbers_in_code_comments_links_and_latex_arguments_are_skipped_and_said_why() -> None:
    text = (
        "\\section{Results}\n"
        "We train with `lr=0.001` for 3\\,epochs; see \\cref{tab:2} and \\cite{he2016}. % 99.9 a comment\n"
        "Accuracy is 91.2\\% (Fig.~3) [see](https://x.org/v1.5).\n"
        "\\begin{tabular}{lr} r1 & 0.912 \\\\ \\end{tabular}\n"
    )
    mentions, skipped = find_numbers(text)
    assert [(m.text, m.line) for m in mentions] == [("3", 2), ("91.2%", 3), ("0.912", 4)]
    assert mentions[1].percent and mentions[1].decimals == 1
    reasons = {s.text: s.reason for s in skipped}
    assert reasons["0.001"] == "in a code span" and reasons["99.9"] == "in a LaTeX comment"
    assert reasons["2"] == "in a LaTeX command's argument" and reasons["2016"] == "in a LaTeX command's argument"
    assert reasons["3"] == "a figure, table, section or equation number" and reasons["1.5"] == "in a link target"


async def test_setup_numbers_that_match_nothing_are_skipped_with_why_and_ones_that_match_stay_claims(home: Home, quest: Quest) -> None:
    await build_quest(home)
    text = "We train r1 for 90 epochs on 4 GPUs with a learning rate of 0.1 and reach 91.2%.\nr2 logs 71.234 steps per second.\n"
    audit = audit_manuscript(text, quest_sources(quest))
    assert [(c.mention.text, c.status) for c in audit.claims] == [("91.2%", "resolved"), ("71.234", "resolved")]
    assert audit.ok
    reasons = {s.text: s.reason for s in audit.skipped}
    assert reasons["90"] == "a setup number (a count of epochs), not a result"
    assert reasons["4"] == "a setup number (a count of GPUs), not a result"
    assert reasons["0.1"] == "a setup number (learning rate), not a result"
    assert [(s.line, s.column) for s in audit.skipped] == sorted((s.line, s.column) for s in audit.skipped)
