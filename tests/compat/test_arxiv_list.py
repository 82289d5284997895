"""DeepScientist's `arxiv` call forms, through a real stdio MCP server whose arXiv client
talks to a loopback Atom API: ``arxiv(mode="list")`` without a paper lists the quest's
paper library; ``full_text`` picks the overview or the full text. Each call asserts the
fields its callers read (``ok``, ``mode``, ``count``, ``items[].arxiv_id``, ``paper_id``,
``title``) and the ``artifact.paper_added`` events in the log."""

from __future__ import annotations

from typing import Any

import mcp
import pytest
from aiohttp import web

from ds_events.home import Home, Quest
from ds_events.replay import replay_quest
from tests.artifact.support import set_config
from tests.helpers import domain_events, stdio_server, tool_error

ENTRY = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><entry>
  <id>http://arxiv.org/abs/{pid}v1</id><published>2020-10-22T17:55:59Z</published>
  <title>Paper {pid}</title><summary>What {pid} found.</summary>
  <author><name>A. Author</name></author>
</entry></feed>"""


@pytest.fixture
async def atom_api(aiohttp_server, home: Home):  # type: ignore[no-untyped-def]
    """A loopback arXiv Atom API answering a paper for every id; config.yaml points at it."""
    asked: list[str] = []

    async def query(request: web.Request) -> web.Response:
        pid = request.query.get("id_list", "")
        asked.append(pid)
        return web.Response(text=ENTRY.format(pid=pid), content_type="application/atom+xml")

    app = web.Application()
    app.router.add_get("/api/query", query)
    server = await aiohttp_server(app, host="127.0.0.1")
    set_config(home, "arxiv", api_url=str(server.make_url("/api/query")))
    return asked


def stdio(home: Home) -> mcp.Client:
    return mcp.Client(stdio_server(home, "artifact"))


async def call(client: mcp.Client, **args: Any) -> dict[str, Any]:
    result = await client.call_tool("arxiv", args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    return result.structured_content  # type: ignore[return-value]


def added(quest: Quest) -> list[str]:
    return [e.paper_id for e in quest.log.read() if e.type == "artifact.paper_added"]


async def test_list_without_a_paper_lists_the_papers_this_quest_read(home: Home, quest: Quest, atom_api):
    async with stdio(home) as c:
        empty = await call(c, mode="list")
        full = await call(c, paper_id="2010.11929", full_text=True)
        overview = await call(c, paper_id="arXiv:1512.03385", mode="list")
        again = await call(c, paper_id="2010.11929", full_text=False)
        library = await call(c, mode="list")
    assert (empty["ok"], empty["mode"], empty["count"], empty["items"]) == (True, "list", 0, [])
    assert (full["ok"], full["mode"], full["paper_id"], full["title"]) == (True, "read", "2010.11929", "Paper 2010.11929")
    assert "text" in full and "text" not in overview and "text" not in again
    assert again["cached"] is True and atom_api == ["2010.11929", "1512.03385"]  # each fetched once
    assert library["count"] == 2
    assert [i["arxiv_id"] for i in library["items"]] == ["1512.03385", "2010.11929"]  # newest first
    first = library["items"][1]
    assert (first["title"], first["abstract"], first["authors"]) == ("Paper 2010.11929", "What 2010.11929 found.", ["A. Author"])
    assert added(quest) == ["2010.11929", "1512.03385"]  # a paper enters the library once


REFUSED = [
    ({"mode": "read"}, "missing_paper_id"),
    ({}, "missing_paper_id"),
    ({"mode": "list", "full_text": True}, "unexpected_argument"),
    ({"mode": "list", "paper_id": "2010.11929", "full_text": False}, "unexpected_argument"),
    ({"mode": "search"}, "invalid_mode"),
    ({"paper_id": "not-an-id"}, "invalid_paper_id"),
    ({"mode": "list", "comment": ["not", "a", "note"]}, "invalid_argument"),  # a comment is text or an object
]


async def test_each_refused_form_gets_its_code_and_changes_nothing(home: Home, quest: Quest, atom_api):
    before = domain_events(quest)
    async with stdio(home) as c:
        for args, code in REFUSED:
            err = tool_error(await c.call_tool("arxiv", args))
            assert err["error"] == code and err["message"], (args, err)
    assert domain_events(quest) == before and atom_api == []


async def test_replay_rebuilds_the_library_file_byte_for_byte(home: Home, quest: Quest, atom_api):
    async with stdio(home) as c:
        await call(c, paper_id="2010.11929")
        await call(c, paper_id="1512.03385", mode="list")
    path = quest.root / ".ds" / "arxiv" / "library.json"
    before = path.read_bytes()
    assert b"2010.11929" in before and b"1512.03385" in before
    path.unlink()
    replay_quest(quest.root, quest_id=quest.id)
    assert path.read_bytes() == before
