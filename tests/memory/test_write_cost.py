"""A memory write costs the same at any store size, and the memory view hands out no
state that changes later. Work is counted (cards touched, SQLite steps), never timed."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterator
from typing import Any

import msgspec

from ds_events.events.memory import CardImported, CardPromoted, CardSuperseded, CardWritten
from ds_events.home import Home
from ds_events.memory.index import SIMILAR_POSTINGS
from ds_events.memory.store import MemoryContext
from ds_events.services.memory import cards as svc
from ds_events.services.memory.commands import WriteCard
from projections.base import fold
from projections.memory import PROJECTION, MemoryState, render_digest, thaw


class _CountingCards(dict):  # type: ignore[type-arg]
    """``state.cards`` that counts every card read from it."""

    reads = 0

    def __getitem__(self, key: str) -> Any:
        self.reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.reads += 1
        return super().get(key, default)

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        for value in super().values():
            self.reads += 1
            yield value

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        for item in super().items():
            self.reads += 1
            yield item

    def __iter__(self) -> Iterator[str]:
        for key in super().__iter__():
            self.reads += 1
            yield key


def _events(n: int, *, records_every: int = 5) -> list[Any]:
    """``n`` card writes (every ``records_every``-th a record), with seqs as a log gives them."""
    out: list[Any] = []
    for i in range(n):
        record = i % records_every == 0
        out.append(CardWritten(
            card_id=f"knowledge-{i:08x}", kind=("knowledge", "episodes", "ideas")[i % 3], title=f"Lesson {i}",
            body=f"word{i} shared text", record_id=f"mem-{i // records_every + 1:03d}" if record else "",
            record_type="mistake_fix" if record else "",
        ))  # fmt: skip
    return [msgspec.structs.replace(e, seq=i + 1, ts=f"2026-01-01T00:00:{i % 60:02d}Z") for i, e in enumerate(out)]


def _digest_reads(n: int) -> int:
    state = fold(PROJECTION, _events(n, records_every=1))  # every card a record: more than the digest lists
    state.cards = _CountingCards(state.cards)
    render_digest(state)
    reads = state.cards.reads
    # what a write renders: the new card's file and the digest
    new = msgspec.structs.replace(_events(1)[0], card_id="knowledge-ffffffff", seq=n + 1)
    state = PROJECTION.apply(state, new)
    state.cards.reads = 0
    files = PROJECTION.render_changed(state, [new])  # type: ignore[misc]
    assert set(files) == {"memory/knowledge/knowledge-ffffffff.md", "MEMORY.md"}
    return reads + state.cards.reads


def test_rendering_memory_md_reads_the_same_number_of_cards_at_100_and_2000_cards():
    small, large = _digest_reads(100), _digest_reads(2000)
    # twice (a full render, then a write's): 20 recent cards + at most 50 records per type,
    # plus the written card; never the whole store
    assert large == small <= 2 * (20 + 50) + 2


def test_memory_md_lists_the_newest_records_per_type_and_counts_the_older_ones():
    state = fold(PROJECTION, _events(300, records_every=1))  # 300 mistake_fix records
    digest = render_digest(state).decode()
    assert "(250 older mistake_fix records: `read_memory` lists every one)" in digest
    assert "- mem-300 [mistake_fix]" in digest and "- mem-251 [mistake_fix]" in digest
    assert "- mem-250 " not in digest
    assert "Active cards: ideas 100, episodes 100, knowledge 100" in digest


def _store_with(home: Home, quest_id: str, n: int) -> MemoryContext:
    """``n`` cards that all share six common words, each also one of 20 mid-frequency
    words (in 5 % of the cards) and two words of its own."""
    quest = home.create_quest(quest_id, quest_id=quest_id)
    events = [
        CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge", title=f"Training loss note {i}",
                    body=f"the training loss of the model went down; mid{i % 20} detail rare{i}a rare{i}b")
        for i in range(n)
    ]  # fmt: skip
    for i in range(0, n, 500):
        quest.log.append(events[i : i + 500])
    quest.views.catch_up(keep=False)
    mem = MemoryContext(quest, actor="test")
    mem.store("quest").index.sync()
    return mem


_MATCH = re.compile(r"MATCH '((?:[^']|'')*)'")
_NEWEST = re.compile(r"ORDER BY fts\.rowid DESC LIMIT (\d+)")


def _cards_examined(index_file: str, statements: list[str]) -> int:
    """How many full-text rows the statements made SQLite visit: every card matching a
    MATCH (capped by a newest-first LIMIT), every row of a whole-table count."""
    total = 0
    with contextlib.closing(sqlite3.connect(index_file)) as conn:
        for sql in statements:
            if sql.startswith("--") or " fts" not in sql:
                continue
            match = _MATCH.search(sql)
            if match is None:
                if "count(*) FROM fts" in sql:
                    total += conn.execute("SELECT count(*) FROM fts").fetchone()[0]
                continue
            rows = conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (match.group(1).replace("''", "'"),)).fetchone()[0]
            newest = _NEWEST.search(sql)
            total += min(rows, int(newest.group(1))) if newest else rows
    return total


def _duplicate_check_work(home: Home, n: int) -> tuple[int, list[Any]]:
    mem = _store_with(home, f"s{n}", n)
    try:
        store = mem.store("quest")
        title, body = "Training loss of the model", "went down mid1 mid2 mid3 mid4 mid5 detail rare5a rare5b"
        # The first check counts how common each word is (cached: counted again only
        # once the store grew by a tenth); the next ones are what every later write costs,
        # after another card was appended.
        svc.near_duplicates(store, store.state(), "knowledge", title, body)
        mem.quest.emit(CardWritten(card_id="knowledge-ffffffff", kind="knowledge", title="Unrelated", body="other words"))
        store.index.sync()
        with store.index.tracing() as statements:
            found = svc.near_duplicates(store, store.state(), "knowledge", title, body)
        return _cards_examined(str(store.index.file), statements), found
    finally:
        mem.close()
        mem.quest.close()


def test_the_near_duplicate_check_examines_a_bounded_number_of_cards_at_100_and_2000_cards(home: Home):
    small, found_small = _duplicate_check_work(home, 100)
    large, found_large = _duplicate_check_work(home, 2000)
    # Ranking every card that shares a common (or mid-frequency) word grows 20-fold with the store.
    assert large <= SIMILAR_POSTINGS and small <= SIMILAR_POSTINGS, (small, large)
    # ... and the check still finds the card that shares the rare words.
    assert [c.id for c in found_small] == [c.id for c in found_large] == ["knowledge-00000005"]


def test_a_write_still_finds_a_near_duplicate_among_many_cards_sharing_common_words(home: Home):
    mem = _store_with(home, "dup", 3000)
    try:
        result = svc.write(mem, WriteCard(kind="knowledge", title="Training loss note 1234",
                                          body="the training loss of the model went down; rare1234a rare1234b"))  # fmt: skip
        assert result.status == "duplicate_candidates"
        assert result.candidates[0].id == f"knowledge-{1234:08x}" and result.candidates[0].snippet.startswith("the training")
    finally:
        mem.close()
        mem.quest.close()


def _handed_out_copy(state: MemoryState) -> MemoryState:
    """What the views layer does before applying more events to a state it handed out:
    copy the top-level containers, then the projection's ``thaw``."""
    top = {f: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
           for f, v in msgspec.structs.asdict(state).items()}  # fmt: skip
    return thaw(msgspec.structs.replace(state, **top))


def test_a_handed_out_memory_state_never_changes_when_more_events_are_applied():
    events = _events(30)
    state = fold(PROJECTION, events)
    before = msgspec.json.encode(state)
    later = [
        CardSuperseded(card_id="knowledge-00000000", by_card_id="knowledge-00000003", seq=31),  # a record card
        CardPromoted(card_id="knowledge-00000001", global_card_id="knowledge-99999999", source_quest="q1", seq=32),
        CardImported(card_id="knowledge-00000002", kind="ideas", title="Edited", body="by hand", tags=["x"], seq=33),
        CardWritten(card_id="knowledge-00000004", kind="episodes", title="Rewritten", record_id="mem-099",
                    record_type="pipeline_constraint", seq=34),
        CardSuperseded(card_id="knowledge-00000005", by_card_id="knowledge-00000006", seq=35),
    ]  # fmt: skip
    work = fold(PROJECTION, later, state=_handed_out_copy(state))
    assert msgspec.json.encode(state) == before  # not one card, list or dict of it changed
    assert work.cards["knowledge-00000000"].status == "superseded" and state.cards["knowledge-00000000"].active
    # and the copy folded on is exactly a fold of the whole log
    assert msgspec.json.encode(work) == msgspec.json.encode(fold(PROJECTION, [*events, *later]))
    assert render_digest(work) == render_digest(fold(PROJECTION, [*events, *later]))


def test_the_recent_cards_survive_compaction_in_order_of_their_last_change() -> None:
    """``recent`` is an append-only list compacted now and then; what the digest shows is
    the order of last changes of active cards, whatever the compactions did."""
    import random

    from projections.memory import _RECENT_SLACK, recent_cards

    rng = random.Random(5)
    events: list[Any] = []
    changes: list[tuple[str, int]] = []
    superseded: set[str] = set()
    for seq in range(1, 3 * _RECENT_SLACK):
        cid = f"knowledge-{rng.randrange(40):04x}"
        if rng.random() < 0.005 and any(c == cid for c, _ in changes) and cid not in superseded:
            by = next(c for c, _ in changes if c != cid)
            event: Any = CardSuperseded(card_id=cid, by_card_id=by)
            superseded.add(cid)  # for good: a superseded card stays out of retrieval
        else:
            event = CardWritten(card_id=cid, kind="knowledge", title=f"t{seq}", body=f"b{seq}")
            changes.append((cid, seq))
        events.append(msgspec.structs.replace(event, seq=seq, ts="2026-01-01T00:00:00.000000Z"))
    # Fold until just after the first compaction: what the digest shows then comes from
    # the compacted list, not from the changes appended since.
    state, compacted = PROJECTION.initial(), False
    for event in events:
        before = len(state.recent)
        state = PROJECTION.apply(state, event)
        if len(state.recent) < before:
            compacted = True
            break
    assert compacted
    last_change = {cid: s for cid, s in changes if s <= state.last_seq}  # the last one wins
    got = [c.id for c in recent_cards(state, 100)]
    active = {c.id for c in state.cards.values() if c.active}
    expected = [cid for cid in sorted(last_change, key=lambda c: -last_change[c]) if cid in active]
    assert got == expected and len(got) >= 20 and superseded


def test_a_write_copies_no_state_unless_someone_holds_it(home: Home):
    """The write reads the memory state lent under the log's lock: the fold copies the
    card map (a thaw, O(cards)) only for a state a caller still holds."""
    mem = _store_with(home, "lend", 50)
    store = mem.store("quest")
    thaws: list[int] = []
    projection = next(p for p in store.views.projections if p.name == store.projection_name)
    original = projection.thaw
    object.__setattr__(projection, "thaw", lambda s: (thaws.append(len(s.cards)), original(s))[1])  # type: ignore[misc]
    try:
        for i in range(3):
            result = svc.write(mem, WriteCard(kind="episodes", title=f"Distinct lesson {i}", body=f"unique{i}x words{i}y"))
            assert result.status == "written"
        assert thaws == []  # three writes, no copy
        held = store.state()  # a caller keeps the state: the next write must not change it
        before = msgspec.json.encode(held)
        svc.write(mem, WriteCard(kind="episodes", title="Another lesson", body="fresh text here"))
        assert len(thaws) == 1 and msgspec.json.encode(held) == before
    finally:
        object.__setattr__(projection, "thaw", original)
        mem.close()
        mem.quest.close()


def test_term_counts_follow_writes_supersedes_and_imports(home: Home):
    """The index's per-word card counts (what the near-duplicate check ranks words by)
    equal a recount of the active cards' words after writes, supersedes and imports."""
    from collections import Counter

    from ds_events.memory.text import words

    mem = _store_with(home, "dfs", 40)
    store = mem.store("quest")
    mem.quest.emit(CardSuperseded(card_id="knowledge-00000003", by_card_id="knowledge-00000004"))
    mem.quest.emit(CardImported(card_id="knowledge-00000005", kind="knowledge", title="Edited title", body="hand words"))
    store.index.sync()
    expected: Counter[str] = Counter()
    for card in store.state().cards.values():
        if card.active:
            expected.update({w for text in (card.title, card.body, " ".join(card.tags)) for w in words(text)})
    with contextlib.closing(sqlite3.connect(str(store.index.file))) as conn:
        stored = dict(conn.execute("SELECT term, df FROM term_df"))
    assert stored == dict(expected)
    assert "hand" in stored and "rare3a" not in stored  # the import's words in, the superseded card's out
    mem.close()
    mem.quest.close()


def test_a_near_duplicate_of_a_card_the_index_has_not_folded_yet_is_still_found(home: Home):
    from ds_events.memory.store import INDEX_LAG

    mem = _store_with(home, "lag", 30)
    store = mem.store("quest")
    try:
        first = svc.write(mem, WriteCard(kind="knowledge", title="Gradient clipping stops fp16 loss spikes",
                                         body="clip at 1.0 unique7q fp16 spikes vanished"))  # fmt: skip
        assert first.status == "written"
        assert store.index.applied_seq < first.seq <= store.index.applied_seq + INDEX_LAG  # not folded in yet
        again = svc.write(mem, WriteCard(kind="knowledge", title="Gradient clipping stops fp16 loss spikes",
                                         body="clip at 1.0 unique7q fp16 spikes vanished again"))  # fmt: skip
        assert again.status == "duplicate_candidates" and again.candidates[0].id == first.id
    finally:
        mem.close()
        mem.quest.close()


def test_a_card_with_the_same_title_words_is_found_by_one_lookup_whatever_the_body(home: Home):
    """Same content words in the title (any order) is a near-duplicate by definition; the
    index finds it by its title key, even when every title word is common and the bodies
    share nothing."""
    quest = home.create_quest("titles", quest_id="titles")
    common = ["training", "loss", "model", "warmup", "schedule", "batch"]
    events = [
        CardWritten(card_id=f"knowledge-{i:08x}", kind="knowledge",
                    title=" ".join(common[j] for j in range(6) if (i >> j) & 1) or "empty",
                    body=f"body{i} words{i}")
        for i in range(64)
    ]  # fmt: skip
    quest.log.append(events)
    mem = MemoryContext(quest, actor="test")
    try:
        mem.store("quest").index.sync()
        # card 0b101101 = training, model, warmup, batch
        result = svc.write(mem, WriteCard(kind="knowledge", title="Batch warmup for the model training",
                                          body="entirely different text"))  # fmt: skip
        assert result.status == "duplicate_candidates"
        assert [c.id for c in result.candidates] == [f"knowledge-{0b101101:08x}"]
    finally:
        mem.close()
        quest.close()


def _segments(conn: sqlite3.Connection) -> int:
    """How many b-tree segments the full-text index has (a query looks each word up in each)."""
    return int(conn.execute("SELECT count(DISTINCT segid) FROM fts_idx").fetchone()[0])


def test_the_full_text_index_keeps_few_segments_however_many_small_folds_made_it(home: Home):
    """Every fold is one SQLite transaction, and FTS5 writes each as a new segment; left to
    its defaults it lets 16 pile up on a level, and the near-duplicate query, which looks
    each word up in every segment, cost three times as much."""
    mem = _store_with(home, "segments", 20)
    store = mem.store("quest")
    try:
        with contextlib.closing(sqlite3.connect(str(store.index.file))) as conn:
            counts = []
            for i in range(120):
                mem.quest.emit(CardWritten(card_id=f"knowledge-f{i:07x}", kind="knowledge", title=f"Fold {i}",
                                           body=f"words{i} of card {i}"))  # fmt: skip
                store.index.sync()  # one fold, one transaction, one new segment
                counts.append(_segments(conn))
        assert max(counts) <= 8, counts
        assert len(svc.search(mem, svc.SearchCards(query="words7 words119", limit=5)).results) == 2
    finally:
        mem.close()
        mem.quest.close()


def test_the_cards_changed_after_a_seq_are_exactly_the_active_ones_changed_since_whatever_the_history() -> None:
    """What the near-duplicate check adds to the index's candidates (the cards the index
    has not folded yet) comes from the state's order of changes, not from the log: it
    must equal a scan of every card, after writes, rewrites, supersedes, imports,
    promotions and compactions of that order."""
    import random

    from projections.memory import _RECENT_SLACK, changed_after

    rng = random.Random(8)
    events: list[Any] = []
    superseded: set[str] = set()
    for seq in range(1, 2 * _RECENT_SLACK + 400):
        cid = f"knowledge-{rng.randrange(60):04x}"
        roll = rng.random()
        if roll < 0.03 and cid not in superseded:
            event: Any = CardSuperseded(card_id=cid, by_card_id="knowledge-ffff")
            superseded.add(cid)
        elif roll < 0.08:
            event = CardImported(card_id=cid, kind="knowledge", title=f"edit {seq}", body="by hand")
        elif roll < 0.1:
            event = CardPromoted(card_id=cid, global_card_id=f"knowledge-g{seq}", source_quest="q1")
        else:
            event = CardWritten(card_id=cid, kind="knowledge", title=f"t{seq}", body=f"b{seq}")
        events.append(msgspec.structs.replace(event, seq=seq, ts="2026-01-01T00:00:00.000000Z"))
    state = PROJECTION.initial()
    checked = 0
    for event in events:
        state = PROJECTION.apply(state, event)
        if event.seq % 37 == 0:
            for back in (0, 1, 5, 16, 200):
                after = max(0, event.seq - back)
                expected = {c.id for c in state.cards.values() if c.active and c.seq > after}
                got = changed_after(state, after)
                assert set(got) == expected and len(got) == len(expected), (event.seq, back)
                assert [state.cards[c].seq for c in got] == sorted((state.cards[c].seq for c in got), reverse=True)
                checked += 1
    assert checked > 100 and superseded
