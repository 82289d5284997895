"""What a hostile page in the user's browser can send to a real ``ds serve`` on loopback
(no token): every forged form is refused with a 4xx in our shape, on every route that
writes, and nothing is written — the quest log's last seq and every file of the home
stay as they were. The same request without the forgery is written (so the checks can
see a write when there is one).

Run with ``-s`` for the table: request form -> status, code, written?
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from tests.mcp_support import changed, snapshot

from .conftest import Served

EVIL = "http://evil.example"
JSON = {"Content-Type": "application/json"}

# Every route that writes, with a body it would accept.
WRITES = [
    ("/api/quests/q1/messages", {"text": "from another site"}),
    ("/api/quests/q1/control", {"action": "stop", "reason": "from another site"}),
    ("/api/quests/q1/runner", {"runner": "scripted"}),
    ("/api/quests", {"title": "Planted", "id": "planted"}),
    ("/api/quests/q1/interactions/ia-any/reply", {"text": "yes"}),
]


def _text_plain(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"data": json.dumps(body), "headers": {"Content-Type": "text/plain"}}


def _form(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"data": body}  # aiohttp sends a dict as application/x-www-form-urlencoded


def _multipart(body: dict[str, Any], port: int) -> dict[str, Any]:
    form = aiohttp.FormData()
    for key, value in body.items():
        form.add_field(key, value)
    form.add_field("file", b"\x00binary", filename="x.bin", content_type="application/octet-stream")
    return {"data": form}


def _foreign_origin(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"json": body, "headers": {"Origin": EVIL}}


def _null_origin(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"json": body, "headers": {"Origin": "null"}}


def _cross_site(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"json": body, "headers": {"Sec-Fetch-Site": "cross-site"}}


def _rebinding_host(body: dict[str, Any], port: int) -> dict[str, Any]:
    return {"json": body, "headers": {"Host": f"rebind.evil.example:{port}"}}


FORMS = {
    "text/plain body": (_text_plain, 415, "unsupported_media_type"),
    "form-urlencoded body": (_form, 415, "unsupported_media_type"),
    "multipart body": (_multipart, 415, "unsupported_media_type"),
    "foreign Origin (JSON body)": (_foreign_origin, 403, "forbidden_origin"),
    "Origin: null (JSON body)": (_null_origin, 403, "forbidden_origin"),
    "Sec-Fetch-Site: cross-site (JSON body)": (_cross_site, 403, "forbidden_origin"),
    "rebinding Host rebind.evil.example:PORT (JSON body)": (_rebinding_host, 421, "misdirected_request"),
}


@pytest.mark.parametrize("form", list(FORMS))
async def test_a_forged_request_is_refused_on_every_writing_route_and_writes_nothing(served: Served, form: str) -> None:
    make, status, code = FORMS[form]
    async with aiohttp.ClientSession() as session:
        await _warm_up(session, served)
        seq, files = served.last_seq(), snapshot(served.home.root)
        for path, body in WRITES:
            async with session.post(served.base + path, **make(body, served.port)) as resp:
                answer = await resp.json()
            assert (resp.status, answer["error"]) == (status, code), (path, answer)
            assert answer["message"]
            written = served.last_seq() != seq or changed(files, snapshot(served.home.root)) != []
            print(f"| {form} | POST {path} | {resp.status} {answer['error']} | {'yes' if written else 'no'} |")
            assert not written, (form, path, changed(files, snapshot(served.home.root)))


async def test_a_page_under_a_rebinding_name_cannot_read_either(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        for path in ["/api/quests", "/api/quests/q1", "/api/quests/q1/events?stream=1", "/"]:
            async with session.get(served.base + path, headers={"Host": f"rebind.evil.example:{served.port}"}) as resp:
                answer = await resp.json()
            assert resp.status == 421 and answer["error"] == "misdirected_request", (path, answer)
            assert f"127.0.0.1:{served.port}" in answer["allowed_hosts"] and f"localhost:{served.port}" in answer["allowed_hosts"]
            print(f"| rebinding Host, GET {path} | 421 misdirected_request | read: no |")


async def test_the_same_requests_from_the_daemons_own_page_are_written(served: Served) -> None:
    """What the page sends (its own Origin, JSON): accepted — the checks above can see a
    write. The reply names no open request, so it is refused by the service (404)."""
    own = {"Origin": served.base, "Sec-Fetch-Site": "same-origin"}
    async with aiohttp.ClientSession() as session:
        for path, body in WRITES:
            seq = served.last_seq()
            async with session.post(served.base + path, json=body, headers=own) as resp:
                answer = await resp.json()
            if path.endswith("/reply"):
                assert resp.status == 404 and answer["error"] == "unknown_interaction", answer
                continue
            assert resp.status in (200, 201), (path, answer)
            if path != "/api/quests":  # a new quest has its own log
                assert served.last_seq() > seq
            print(f"| own page (Origin {served.base}) | POST {path} | {resp.status} | yes |")


async def _warm_up(session: aiohttp.ClientSession, served: Served) -> None:
    """Let the daemon open the quest (it may write views then) before a snapshot is taken."""
    for path in ["/api/quests", "/api/quests/q1", "/api/quests/q1/interactions"]:
        async with session.get(served.base + path) as resp:
            assert resp.status == 200, await resp.text()
