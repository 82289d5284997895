"""refresh_summary (SUMMARY.md from the log) and arxiv (local cache, pluggable fetcher,
the default Atom client against a local aiohttp server, offline errors)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from aiohttp import web

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from ds_events.services import quest as quest_service
from tests.helpers import domain_events

from .support import client_for, confirm_args, fails, ok, set_config

ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <entry>
    <id>http://arxiv.org/abs/1512.03385v1</id>
    <published>2015-12-10T19:51:55Z</published>
    <title>Deep Residual Learning for
      Image Recognition</title>
    <summary>Deeper neural networks are more difficult to train.</summary>
    <author><name>Kaiming He</name></author>
    <author><name>Xiangyu Zhang</name></author>
  </entry>
</feed>"""
EMPTY_FEED = '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"></feed>'


async def test_refresh_summary_renders_title_status_anchor_and_results_from_the_log(home: Home, quest: Quest) -> None:
    quest_service.change_anchor(quest, quest_service.ChangeAnchor(anchor="experiment", reason="baseline done"))
    async with client_for(home) as c:
        await ok(c, "confirm_baseline", **confirm_args())
        await ok(c, "record", payload={"kind": "decision", "verdict": "go", "action": "launch_experiment", "reason": "baseline ok"})
        r = await ok(c, "refresh_summary", reason="after the baseline")
    md = r["markdown"]
    assert md.startswith("# Test quest\n") and "A quest for tests." in md
    assert "status: **active**; anchor: `experiment`" in md
    assert "`resnet20` confirmed" in md and "→ launch_experiment: baseline ok" in md
    assert "refreshed 1 time(s): after the baseline" in md
    assert (quest.root / "SUMMARY.md").read_text() == md
    # a later non-artifact event does not bring back the status projection's simpler summary
    quest_service.post_message(quest, quest_service.PostMessage(text="thanks"))
    assert (quest.root / "SUMMARY.md").read_text().startswith("# Test quest\n\nA quest for tests.\n\n- quest: `q1`")
    (quest.root / "SUMMARY.md").unlink()
    replay_quest(quest.root, quest_id="q1")
    assert "`resnet20` confirmed" in (quest.root / "SUMMARY.md").read_text()


async def test_refresh_summary_rejects_a_non_text_reason(home: Home, quest: Quest) -> None:
    seq = domain_events(quest)
    async with client_for(home) as c:
        await fails(c, "refresh_summary", "invalid_field", reason="x" * 3000)
    assert domain_events(quest) == seq


@pytest.fixture
async def arxiv_server(aiohttp_server):  # type: ignore[no-untyped-def]
    """A local arXiv-like Atom API; ``state['body']`` / ``state['status']`` set its answer."""
    state = {"hits": 0, "body": ATOM, "status": 200, "ids": []}

    async def query(request: web.Request) -> web.Response:
        state["hits"] += 1
        state["ids"].append(request.query.get("id_list"))
        return web.Response(text=state["body"], status=state["status"], content_type="application/atom+xml")

    app = web.Application()
    app.router.add_get("/api/query", query)
    server = await aiohttp_server(app, host="127.0.0.1")
    state["url"] = str(server.make_url("/api/query"))
    return state


def _cache(home: Home) -> Path:
    return home.root / "cache" / "arxiv"


async def test_arxiv_fetches_once_through_the_default_client_then_serves_from_cache(home: Home, quest: Quest,
    arxiv_server) -> None:  # type: ignore[no-untyped-def]
    set_config(home, "arxiv", api_url=arxiv_server["url"])
    async with client_for(home) as c:
        listed = await ok(c, "arxiv", paper_id="arXiv:1512.03385", mode="list")
        read = await ok(c, "arxiv", paper_id="1512.03385")
    assert arxiv_server["hits"] == 1 and arxiv_server["ids"] == ["1512.03385"]
    assert listed["title"] == "Deep Residual Learning for Image Recognition"
    assert listed["authors"] == ["Kaiming He", "Xiangyu Zhang"] and not listed["cached"] and "text" not in listed
    assert read["cached"] and read["abstract"] == "Deeper neural networks are more difficult to train."
    assert read["published"] == "2015-12-10T19:51:55Z"
    assert (_cache(home) / "1512.03385.json").is_file()


@pytest.mark.parametrize(
    "status, body, code",
    [
        (500, "oops", "arxiv_fetch_failed"),
        (200, "<feed><not-closed>", "arxiv_bad_response"),
        (200, EMPTY_FEED, "arxiv_not_found"),
        (404, "", "arxiv_not_found"),
    ],
)
async def test_arxiv_failures_from_the_server_are_reported_and_nothing_is_cached(
    home: Home, quest: Quest, arxiv_server, status: int, body: str, code: str  # type: ignore[no-untyped-def]
) -> None:
    set_config(home, "arxiv", api_url=arxiv_server["url"])
    arxiv_server.update(status=status, body=body)
    async with client_for(home) as c:
        await fails(c, "arxiv", code, paper_id="1512.03385")
        arxiv_server.update(status=200, body=ATOM)  # the next attempt fetches again and succeeds
        assert not (await ok(c, "arxiv", paper_id="1512.03385"))["cached"]
    assert arxiv_server["hits"] == 2


async def test_arxiv_without_a_network_fails_offline_and_caches_nothing(home: Home, quest: Quest) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    set_config(home, "arxiv", api_url=f"http://127.0.0.1:{port}/api/query")
    async with client_for(home) as c:
        err = await fails(c, "arxiv", "arxiv_offline", paper_id="2401.01234v2")
    assert "offline" in err["message"] and err["paper_id"] == "2401.01234v2"
    assert not _cache(home).exists() or not any(_cache(home).iterdir())


async def test_a_pluggable_fetcher_serves_sections_and_bad_answers_are_not_cached(home: Home, quest: Quest) -> None:
    calls: list[str] = []

    def fetcher(paper_id: str) -> dict:
        calls.append(paper_id)
        if paper_id.startswith("hep-th"):
            return {"title": "", "abstract": "no title"}
        if paper_id == "2402.00001":
            raise ConnectionError("no route to host")
        return {"title": "Sections", "authors": ["A"],
            "sections": [{"title": "Intro", "text": "Hello."}, {"title": "Method", "text": "LS."}]}

    async with client_for(home, arxiv_fetcher=fetcher) as c:
        listed = await ok(c, "arxiv", paper_id="2401.00001", mode="list")
        read = await ok(c, "arxiv", paper_id="2401.00001", mode="read")
        await fails(c, "arxiv", "arxiv_bad_response", paper_id="hep-th/9901001")
        await fails(c, "arxiv", "arxiv_offline", paper_id="2402.00001")
        await fails(c, "arxiv", "invalid_paper_id", paper_id="../../etc/passwd")
        await fails(c, "arxiv", "invalid_paper_id", paper_id="not-an-id")
        await fails(c, "arxiv", "invalid_mode", paper_id="2401.00001", mode="download")
    assert listed["sections"] == ["Intro", "Method"]
    assert read["text"] == "## Intro\n\nHello.\n\n## Method\n\nLS." and read["cached"]
    assert calls == ["2401.00001", "hep-th/9901001", "2402.00001"]
    assert sorted(p.name for p in _cache(home).iterdir()) == ["2401.00001.json"]
