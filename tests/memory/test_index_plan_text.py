"""The search index as a persisted projection, the stage memory plan, and the text measures."""

from __future__ import annotations

import os

import pytest

from ds_events.errors import Invalid
from ds_events.home import Home, Quest
from ds_events.memory.index import fts_query
from ds_events.memory.store import INDEX_FILE, MemoryContext
from ds_events.memory.text import config_pollution, similarity
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import SearchCards, WriteCard
from ds_events.services.memory.plan import STAGE_PLANS, pull_for_stage, stage_memory_plan
from ds_events.services.quest.commands import ANCHORS


def test_the_index_catches_up_with_another_handles_appends_before_checking_duplicates(home: Home, quest: Quest, mem: MemoryContext):
    assert svc.search(mem, SearchCards(query="anything at all")).results == []  # index built and synced at seq 1
    other_quest = home.open_quest("q1", actor="other")  # a second handle: its own log fd, views, index connection
    other = MemoryContext(other_quest)
    try:
        written = svc.write(
            other, WriteCard(kind="knowledge", title="Cache the tokenizer per vocabulary", body="rebuild it when the vocab changes")
        )
        assert [r.id for r in svc.search(mem, SearchCards(query="tokenizer vocabulary")).results] == [written.id]
        dup = svc.write(
            mem, WriteCard(kind="knowledge", title="Cache the tokenizer per vocabulary size", body="rebuild it when the vocab changes")
        )
        assert dup.status == "duplicate_candidates"
    finally:
        other.close()
        other_quest.close()


def test_the_index_records_its_seq_and_is_rebuilt_from_the_log_when_missing(quest: Quest, mem: MemoryContext):
    a = svc.write(mem, WriteCard(kind="ideas", title="Distil from a CNN teacher", body="DeiT token"))
    b = svc.write(mem, WriteCard(kind="ideas", title="Distil from a bigger CNN teacher", body="DeiT token too", supersedes=a.id))
    # A write leaves the index to catch up lazily; the next read does.
    assert mem.store("quest").synced_index().applied_seq == quest.log.last_seq
    mem.close()
    os.unlink(quest.root / ".ds" / INDEX_FILE)
    fresh = MemoryContext(quest)
    try:
        assert [r.id for r in svc.search(fresh, SearchCards(query="distil teacher")).results] == [b.id]
        assert fresh.store("quest").index.applied_seq == quest.log.last_seq
    finally:
        fresh.close()


def test_multi_word_queries_are_or_ed_without_stop_words():
    assert fts_query("why does the loss diverge") == '"loss" OR "diverge"'
    assert fts_query("the") == '"the"'
    assert fts_query("  ...  ") is None
    assert fts_query('say "hi"') == '"say" OR "hi"'


def test_the_near_duplicate_measure_and_threshold():
    assert similarity("AdamW needs warmup for ViT", "Without warmup the loss diverges in the first 1k steps.",
                      "ViT with AdamW needs learning-rate warmup", "Loss diverged early without warmup.") >= 0.5  # fmt: skip
    assert similarity("Label smoothing hurts calibration", "ECE doubled", "Seed variance is large", "5 seeds, 1.2 points") < 0.1
    assert similarity("Run 1 finished", "alpha", "Run 2 finished", "beta") < 0.5  # digits count
    assert similarity("Mixup for ViT", "a", "mixup for vit", "b") == 1.0  # same title words


def test_remembered_word_sets_are_those_of_the_text_and_the_memory_stays_bounded():
    from ds_events.memory import text

    first = text.word_sets("Warmup stops early divergence", "AdamW diverged without warmup")
    assert first == (frozenset({"warmup", "stop", "early", "divergence"}),
                     frozenset({"warmup", "stop", "early", "divergence", "adamw", "diverg", "without"}))  # fmt: skip
    assert text.word_sets("Warmup stops early divergence", "AdamW diverged without warmup") is first  # remembered
    assert text.word_sets("Warmup stops early divergence", "a different body")[1] == first[0] | {"different", "body"}
    for i in range(3 * text._SETS_MAX):
        text.word_sets(f"title {i}", f"body {i}")
    assert len(text._SETS) <= text._SETS_MAX


def test_config_pollution_matches_guarded_keys_only():
    assert config_pollution(["lr=3e-4 and LR: 0.1", "clr=1, lr mentioned"], ["lr"]) == ["lr=3e-4", "LR: 0.1"]
    assert config_pollution(["optimizer.lr = 0.1"], ["optimizer.lr"]) == ["optimizer.lr = 0.1"]
    assert config_pollution(["lr=1"], []) == []


def test_every_stage_has_a_memory_plan_with_quest_and_global_kinds():
    assert set(STAGE_PLANS) == set(ANCHORS)
    plan = stage_memory_plan("baseline")
    assert plan.quest[0] == "episodes" and plan.steps()[:2] == [("quest", "episodes"), ("global", "episodes")]
    with pytest.raises(Invalid) as exc:
        stage_memory_plan("lunch")
    assert exc.value.code == "invalid_stage"


def test_pull_for_stage_returns_cards_in_plan_order_from_quest_and_global(mem: MemoryContext):
    ep = svc.write(mem, WriteCard(kind="episodes", title="Baseline run OOM at batch 256", body="used checkpointing"))
    kn = svc.write(mem, WriteCard(kind="knowledge", title="Checkpointing trades compute for memory", body="60 percent less memory"))
    gl = svc.write(
        mem, WriteCard(kind="episodes", title="Global: OOM on 24 GB cards with long sequences", body="checkpointing", scope="global")
    )
    pulled = pull_for_stage(mem, "baseline")
    assert [(p.scope, p.kind) for p in pulled] == [("quest", "episodes"), ("global", "episodes"), ("quest", "knowledge")]
    assert [c.id for p in pulled for c in p.cards] == [ep.id, gl.id, kn.id]
    searched = pull_for_stage(mem, "baseline", query="memory checkpointing", per_kind=1)
    assert {c.id for p in searched for c in p.cards} == {ep.id, gl.id, kn.id}


def test_common_words_only_rescore_cards_that_match_rarer_words(quest: Quest, mem: MemoryContext):
    from ds_events.events.memory import CardWritten

    # 2,400 cards that all say "training loss"; a few also name a rare failure.
    events = [CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge", title=f"training loss note {i}", body=f"filler{i} words")
              for i in range(2400)]  # fmt: skip
    events[7] = CardWritten(card_id="knowledge-0000a007", kind="knowledge", title="training loss diverged", body="divergence")
    events[9] = CardWritten(card_id="knowledge-0000a009", kind="knowledge", title="diverged once", body="unrelated")
    quest.log.append(events)
    index = mem.store("quest").synced_index()
    hits = index.search("why did the training loss diverge", limit=2)
    assert {h.card_id for h in hits} == {"knowledge-0000a007", "knowledge-0000a009"}
    # The same order as scoring every card with all the words (the slow, exact path).
    exact = index.search("why did the training loss diverge", limit=2, exhaustive=True)
    assert [h.card_id for h in exact] == [h.card_id for h in hits]
    assert len(index.search("training loss", limit=5)) == 5  # only common words still answers


def test_a_query_of_only_common_words_ranks_the_newest_matching_cards_by_bm25(quest: Quest, mem: MemoryContext, monkeypatch):
    from ds_events.events.memory import CardWritten
    from ds_events.memory.index import ranking as index_module

    # 2,400 cards that all say "training loss"; an old and a new one say it more often.
    events = [CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge", title=f"training loss note {i}", body=f"filler{i} words")
              for i in range(2400)]  # fmt: skip
    for i in (3, 2390):
        events[i] = CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge", title="training loss, training loss",
                                body="training loss again")  # fmt: skip
    quest.log.append(events)
    index = mem.store("quest").synced_index()
    exact = index.search("training loss", limit=5, exhaustive=True)  # every card has both words
    assert exact[0].card_id in {"knowledge-00000003", "knowledge-00000956"}  # both top scorers, ranking all cards

    monkeypatch.setattr(index_module, "_COMMON_ONLY_CANDIDATES", 100)
    capped = index.search("training loss", limit=5)
    assert capped[0].card_id == "knowledge-00000956"  # the best of the newest 100, ties to the newer
    assert all(int(h.card_id.split("-")[1], 16) >= 2300 for h in capped)  # the old top scorer is out of reach
    snippets = {h.card_id: h.snippet for h in exact}
    assert capped[0].snippet == snippets["knowledge-00000956"] and "[training]" in capped[0].snippet

    monkeypatch.setattr(index_module, "_COMMON_ONLY_CANDIDATES", 10_000)  # more than match: the exact order
    whole = index.search("training loss", limit=5)
    assert [h.score for h in whole] == pytest.approx([h.score for h in exact])
    assert whole[0].card_id == "knowledge-00000956" and whole[1].card_id == "knowledge-00000003"


def test_an_open_memory_context_sees_config_edits(home: Home, quest: Quest, mem: MemoryContext):
    import yaml

    assert svc.write(mem, WriteCard(kind="knowledge", title="Use dropout=0.1 for ViT-S", body="it helped")).status == "written"
    cfg = yaml.safe_load(home.config_path.read_text())
    cfg["memory"]["config_guard_keys"] = ["dropout"]
    home.config_path.write_text(yaml.safe_dump(cfg))
    polluted = svc.write(mem, WriteCard(kind="knowledge", title="Use dropout=0.2 for ViT-B", body="it helped more"))
    assert polluted.status == "config_polluted" and polluted.settings == ["dropout=0.2"]
