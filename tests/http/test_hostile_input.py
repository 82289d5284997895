"""Hostile input gets a structured 4xx and changes nothing: bodies nested beyond the bound
(checked before decoding), lone surrogates in every string of every writing route (one
check, in decode_command), text that is not UTF-8 in the path, query and headers, a
cursor beyond the head; and, on a real ``ds serve``, the requests aiohttp refuses itself
(a request line or a header too long, too many headers, not HTTP) answered as JSON."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ds_events.home import Quest
from handlers.http import make_app
from handlers.http.body import MAX_DEPTH

from .conftest import Served
from .routes import every_route, fill

JSON = {"Content-Type": "application/json"}
SURROGATE = '"a\\ud800b"'  # JSON text: the escape of a lone surrogate, valid JSON


async def _refused(resp: Any, status: int, code: str) -> dict[str, Any]:
    body = await resp.json()
    assert (resp.status, body["error"]) == (status, code), body
    assert body["message"]
    return body


def _post_routes(quest: Quest) -> list[str]:
    return [fill(t) for m, t in every_route(make_app(quest.home)) if m == "POST"]


def _get_routes(quest: Quest) -> list[str]:
    return [fill(t) for m, t in every_route(make_app(quest.home)) if m == "GET"]


async def test_a_body_nested_beyond_the_bound_is_refused_on_every_writing_route_before_decoding(client: Any, quest: Quest) -> None:
    before = quest.log.last_seq
    for path in _post_routes(quest):
        for deep in [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000, b"[" * 100_000,
                     b'{"text": "x", "comment": ' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"}"]:  # fmt: skip
            body = await _refused(await client.post(path, data=deep, headers=JSON), 400, "too_deeply_nested")
            assert body["max_depth"] == MAX_DEPTH and body["depth"] > MAX_DEPTH
        # Brackets inside strings nest nothing; the bound itself is accepted by the parser.
        fine = b'{"comment": "' + b"[" * 10_000 + b'", "zz": ' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
        assert (await (await client.post(path, data=fine, headers=JSON)).json())["error"] == "unknown_argument"
    assert quest.log.last_seq == before


@pytest.mark.parametrize("raw", [b"[NaN]", b'{"text": Infinity}', b'{"text": 1e999}', b'{"text": -1e400}', b'{"text": "\xed\xa0\x80"}',
                                 b"\xff\xfe{\x00}\x00", b'{"text": ' + b"9" * 5000 + b"}", b"{not json"])  # fmt: skip
async def test_what_is_not_utf8_json_with_finite_numbers_is_invalid_json(client: Any, quest: Quest, raw: bytes) -> None:
    before = quest.log.last_seq
    for path in _post_routes(quest):
        await _refused(await client.post(path, data=raw, headers=JSON), 400, "invalid_json")
    assert quest.log.last_seq == before


# Every string a writing route takes today (each command's own fields), at the top level
# and nested; the generic forms (comment, a name) reach any route added later.
STRING_FIELDS = {
    "/api/quests": ["title", "id", "brief"],
    "/api/quests/q1/messages": ["text", "role"],
    "/api/quests/q1/control": ["action", "reason"],
    "/api/quests/q1/runner": ["runner", "model"],
    "/api/quests/q1/interactions/ia-00000000/reply": ["text", "option_id"],
    "/api/quests/q1/archive": ["reason"],
    "/api/quests/q1/unarchive": ["reason"],
}


async def test_a_lone_surrogate_in_any_string_of_any_writing_route_is_invalid_text_naming_its_path(client: Any, quest: Quest) -> None:
    before = quest.log.last_seq
    assert set(_post_routes(quest)) == set(STRING_FIELDS), "a new writing route: name its string fields here"
    for path in _post_routes(quest):
        forms = [(f'{{"{field}": {SURROGATE}}}', field) for field in STRING_FIELDS[path]]
        forms += [
            (f'{{"comment": {SURROGATE}}}', "comment"),
            (f'{{"comment": {{"why": ["ok", {{"deep": {SURROGATE}}}]}}}}', "comment.why[1].deep"),
            ('{"a\\udcffb": 1}', "a\\udcffb"),
            ('{"comment": {"\\ud800": "x"}}', "comment.\\ud800"),
        ]
        if path.endswith("/reply"):
            forms.append((f'{{"text": "ok", "data": {{"answer": [{SURROGATE}]}}}}', "data.answer[0]"))
        for text, argument in forms:
            body = await _refused(await client.post(path, data=text.encode(), headers=JSON), 400, "invalid_text")
            assert body["argument"] == argument, (path, text, body)
            assert "\\ud800" not in json.dumps(body, ensure_ascii=False).replace("\\\\", "")  # shown escaped, not raw
    assert quest.log.last_seq == before


async def test_text_that_is_not_utf8_in_the_path_query_or_a_header_is_invalid_text(client: Any, quest: Quest) -> None:
    before = quest.log.last_seq
    for path in _get_routes(quest):
        await _refused(await client.get(f"{path}?q=%ED%A0%80"), 400, "invalid_text")  # a surrogate's CESU-8 bytes
        body = await _refused(await client.get(f"{path}?limit=1&%FF=1"), 400, "invalid_text")
        assert body["argument"] == "%FF"
        if "q1" in path:
            body = await _refused(await client.get(path.replace("q1", "q1%ED%A0%80", 1)), 400, "invalid_text")
            assert body["argument"] == "path"
    for path in _post_routes(quest):
        await _refused(await client.post(f"{path}?x=%C0%80", json={}), 400, "invalid_text")  # an overlong NUL
    body = await _refused(await client.get("/api/quests/q1/memory?q=%E2%82"), 400, "invalid_text")  # cut short
    assert body["argument"] == "q"
    # Valid escapes pass, and mean what they say.
    assert (await client.get("/api/quests/q1/memory?q=%C3%A9t%C3%A9")).status == 200
    assert quest.log.last_seq == before


async def test_header_bytes_that_are_not_utf8_are_invalid_text_naming_the_header(served: Served) -> None:
    # Only a raw socket can send them: clients encode what they are given. (Host, Origin
    # and Sec-Fetch-Site with such bytes name no own origin: the guard refuses them first.)
    for header in ["Last-Event-ID", "Authorization", "Accept", "Content-Type"]:
        status, body = await _raw(served, b"GET /api/quests/q1/events?stream=1 HTTP/1.1\r\n" + _host(served) + header.encode() + b": 1\xff\r\n\r\n")
        assert (status, body["error"], body["argument"]) == (400, "invalid_text", header), body


async def test_a_cursor_beyond_the_head_is_refused_with_the_head(client: Any, quest: Quest) -> None:
    head = quest.log.last_seq
    for path, headers in [
        (f"/api/quests/q1/events?after={head + 1}", {}),
        ("/api/quests/q1/events?after=99999999999", {}),
        ("/api/quests/q1/events?stream=1&after=99999999999", {}),
        ("/api/quests/q1/events?stream=1", {"Last-Event-ID": "99999999999"}),
        ("/api/quests/q1/events", {"Accept": "application/x-ndjson", "Last-Event-ID": str(head + 1)}),
    ]:
        body = await _refused(await client.get(path, headers=headers), 400, "cursor_beyond_head")
        assert body["last_seq"] == head and body["argument"] == ("after" if "after=" in path else "Last-Event-ID")
    # At the head: a page with nothing more, a stream that waits for the next event.
    page = await (await client.get(f"/api/quests/q1/events?after={head}")).json()
    assert page == {"events": [], "next_after": head, "has_more": False}
    async with client.get("/api/quests/q1/events?stream=1", headers={"Last-Event-ID": str(head)}) as resp:
        assert resp.status == 200
        assert (await asyncio.wait_for(resp.content.readline(), 15)).startswith(b"retry: ")


async def test_requests_aiohttp_refuses_itself_get_our_json_and_no_error_is_logged(served: Served) -> None:
    errors = len(served.log_lines("ERROR"))
    cases = [
        (b"GET /api/" + b"a" * 9000 + b" HTTP/1.1\r\n" + _host(served) + b"\r\n", 414, "request_line_too_long"),
        (b"GET /api/health?q=" + b"a" * 9000 + b" HTTP/1.1\r\n" + _host(served) + b"\r\n", 414, "request_line_too_long"),
        (b"GET /api/health HTTP/1.1\r\n" + _host(served) + b"X-Big: " + b"a" * 9000 + b"\r\n\r\n", 431, "headers_too_large"),
        (b"GET /api/health HTTP/1.1\r\n" + _host(served) + b"X" * 9000 + b": a\r\n\r\n", 431, "headers_too_large"),
        (b"GET /api/health HTTP/1.1\r\n" + _host(served) + b"".join(b"X-%d: a\r\n" % i for i in range(200)) + b"\r\n", 431, "headers_too_large"),
        (b"BREW /api/health HTTP/1.1\r\n\r\n", 400, "bad_request"),
        (b"GET /api/quests/q1\xff HTTP/1.1\r\n" + _host(served) + b"\r\n", 400, "bad_request"),
        (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 400, "bad_request"),
    ]
    for request, status, code in cases:
        got, body = await _raw(served, request)
        assert (got, body["error"]) == (status, code), (request[:60], body)
        assert body["message"]
    assert len(served.log_lines("ERROR")) == errors, served.log.read_text()[-3000:]


def _host(served: Served) -> bytes:
    return f"Host: 127.0.0.1:{served.port}\r\nConnection: close\r\n".encode()


async def _raw(served: Served, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send ``request`` as bytes; (status, JSON body) of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    try:
        writer.write(request)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)  # the server closes after a refusal
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), answer[:400]
    return int(head.split(b" ", 2)[1]), json.loads(body)
