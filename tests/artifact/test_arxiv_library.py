"""The quest's arXiv paper library, in process: a paper enters it once, the first time the
quest reads it; ``arxiv(mode="list")`` without a paper lists it; refusals change nothing."""

from __future__ import annotations

import asyncio

from ds_events.home import Home, Quest
from tests.helpers import domain_events

from .support import client_for, fails, ok


def fetcher(paper_id: str) -> dict:
    return {"title": f"Paper {paper_id}", "authors": ["A"], "abstract": f"About {paper_id}.",
            "sections": [{"title": "Intro", "text": "Hello."}]}  # fmt: skip


async def test_concurrent_first_reads_add_a_paper_to_the_library_once(home: Home, quest: Quest) -> None:
    async with client_for(home, arxiv_fetcher=fetcher) as c:
        await asyncio.gather(*(ok(c, "arxiv", paper_id="2401.00001") for _ in range(4)))
        overview = await ok(c, "arxiv", paper_id="2401.00002", full_text=False)
        library = await ok(c, "arxiv", mode="list")
    assert "text" not in overview and overview["sections"] == ["Intro"] and overview["mode"] == "read"
    assert [i["arxiv_id"] for i in library["items"]] == ["2401.00002", "2401.00001"] and library["count"] == 2
    events = [e for e in quest.log.read() if e.type == "artifact.paper_added"]
    assert [e.paper_id for e in events] == ["2401.00001", "2401.00002"]
    held = quest.state("papers").papers["2401.00001"]
    assert held == events[0]  # the view keeps the event itself
    assert library["items"][1] == {
        "arxiv_id": "2401.00001", "title": "Paper 2401.00001", "authors": ["A"], "published": "",
        "abstract": "About 2401.00001.", "added_at": held.ts, "added_seq": held.seq,
    }  # fmt: skip


async def test_a_cache_file_that_is_not_a_paper_is_fetched_again(home: Home, quest: Quest) -> None:
    async with client_for(home, arxiv_fetcher=fetcher) as c:
        first = await ok(c, "arxiv", paper_id="2401.00003")
        cache = home.root / "cache" / "arxiv" / "2401.00003.json"
        assert first["cache_path"] == str(cache) and first["cached"] is False
        again = await ok(c, "arxiv", paper_id="2401.00003")
        assert again["cached"] is True and again["text"] == first["text"]
        cache.write_text('{"paper_id": "2401.00003", "title": 7}')  # valid JSON, not a paper
        refetched = await ok(c, "arxiv", paper_id="2401.00003")
    assert refetched["cached"] is False and refetched["title"] == "Paper 2401.00003"
    assert refetched["section_texts"] == [{"title": "Intro", "text": "Hello."}]


async def test_library_refusals_have_codes_and_change_nothing(home: Home, quest: Quest) -> None:
    before = domain_events(quest)
    async with client_for(home, arxiv_fetcher=fetcher) as c:
        await fails(c, "arxiv", "missing_paper_id", mode="read")
        await fails(c, "arxiv", "unexpected_argument", mode="list", full_text=True)
        await fails(c, "arxiv", "unexpected_argument", mode="list", paper_id="2401.00001", full_text=True)
        await fails(c, "arxiv", "invalid_mode", mode="browse")
    assert domain_events(quest) == before
