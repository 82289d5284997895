"""The guard (handlers/http/guard.py), in process: which Host, Origin, Sec-Fetch-Site and
Content-Type pass, which are refused and how; the page's own requests pass; a token is
still required after the guard."""

from __future__ import annotations

from typing import Any

import pytest

from ds_events.home import Quest


async def _refused(resp: Any, status: int, code: str) -> dict[str, Any]:
    body = await resp.json()
    assert (resp.status, body["error"]) == (status, code), body
    assert body["message"]
    return body


async def test_every_own_name_with_the_port_the_connection_arrived_at_is_accepted(client: Any) -> None:
    port = client.server.port
    for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}", f"[0:0::1]:{port}"]:
        resp = await client.get("/api/health", headers={"Host": host})
        assert resp.status == 200, (host, await resp.text())


@pytest.mark.parametrize("host", [
    "rebind.evil.example:{port}", "rebind.evil.example", "127.0.0.2:{port}", "localhost.:{port}", "127.0.0.1:{other}",
    "127.0.0.1", "127.0.0.1:0{port}x", "[::1", "[::1]x:{port}", "", "user@127.0.0.1:{port}", "127.0.0.1:{port}/x",
    "127.0.0.1:99999", "\u0661\u0662\u0667.0.0.1:{port}",
])  # fmt: skip
async def test_any_other_host_is_421_naming_the_allowed_hosts(client: Any, quest: Quest, host: str) -> None:
    port = client.server.port
    value = host.format(port=port, other=port + 1 if port < 65535 else port - 1)
    before = quest.log.last_seq
    body = await _refused(await client.get("/api/quests", headers={"Host": value}), 421, "misdirected_request")
    assert body["allowed_hosts"] == sorted([f"127.0.0.1:{port}", f"[::1]:{port}", f"localhost:{port}"])
    await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}, headers={"Host": value}), 421, "misdirected_request")
    assert quest.log.last_seq == before


async def test_the_configured_host_is_one_more_own_name(make_client: Any) -> None:
    client = await make_client(host="ds.lab.example")
    port = client.server.port
    assert (await client.get("/api/health", headers={"Host": f"ds.lab.example:{port}"})).status == 200
    assert (await client.get("/api/health", headers={"Host": f"ds.lab.example:{port}", "Origin": f"http://ds.lab.example:{port}"})).status == 200
    body = await _refused(await client.get("/api/health", headers={"Host": f"other.example:{port}"}), 421, "misdirected_request")
    assert f"ds.lab.example:{port}" in body["allowed_hosts"]


async def test_without_it_configured_that_name_is_refused(client: Any) -> None:
    await _refused(await client.get("/api/health", headers={"Host": f"ds.lab.example:{client.server.port}"}), 421, "misdirected_request")


async def test_the_pages_own_origin_passes_under_each_own_name(client: Any, quest: Quest) -> None:
    port = client.server.port
    for name in ("127.0.0.1", "localhost", "[::1]"):
        own = {"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}", "Sec-Fetch-Site": "same-origin"}
        resp = await client.post("/api/quests/q1/messages", json={"text": f"from the page at {name}"}, headers=own)
        assert resp.status == 201, await resp.text()
        assert (await client.get("/api/quests/q1/events?after=0&limit=1", headers=own)).status == 200


@pytest.mark.parametrize("origin", [
    "http://evil.example", "null", "http://127.0.0.1:{other}", "https://127.0.0.1:{port}", "http://rebind.evil.example:{port}",
    "http://127.0.0.1:{port}.evil.example", "http://127.0.0.1", "127.0.0.1:{port}", "", "file://", "http://localhost:{port}/x",
])  # fmt: skip
async def test_a_foreign_origin_is_403_on_every_method_including_get_and_the_stream(client: Any, quest: Quest, origin: str) -> None:
    port = client.server.port
    value = origin.format(port=port, other=port + 1 if port < 65535 else port - 1)
    before = quest.log.last_seq
    headers = {"Origin": value}
    body = await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}, headers=headers), 403, "forbidden_origin")
    assert body["origin"] == value and f"http://127.0.0.1:{port}" in body["allowed_origins"]
    await _refused(await client.get("/api/quests/q1", headers=headers), 403, "forbidden_origin")
    await _refused(await client.get("/api/quests/q1/events?stream=1", headers=headers), 403, "forbidden_origin")
    await _refused(await client.get("/api/quests/q1/events", headers=headers | {"Accept": "application/x-ndjson"}), 403, "forbidden_origin")
    await _refused(await client.get("/", headers=headers), 403, "forbidden_origin")
    await _refused(await client.options("/api/quests/q1/messages", headers=headers | {"Access-Control-Request-Method": "POST"}), 403, "forbidden_origin")
    assert quest.log.last_seq == before


@pytest.mark.parametrize("site", ["cross-site", "same-site", "CROSS-SITE"])
async def test_a_request_the_browser_says_another_site_made_is_403_on_the_api(client: Any, quest: Quest, site: str) -> None:
    before = quest.log.last_seq
    headers = {"Sec-Fetch-Site": site}
    body = await _refused(await client.get("/api/quests", headers=headers), 403, "forbidden_origin")
    assert body["sec_fetch_site"] == site.lower()
    await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}, headers=headers), 403, "forbidden_origin")
    assert quest.log.last_seq == before
    # The page's own files hold no data: a link from elsewhere still opens the page.
    assert (await client.get("/", headers=headers)).status == 200
    assert (await client.get("/static/app.js", headers=headers)).status == 200


@pytest.mark.parametrize("site", ["same-origin", "none"])
async def test_the_page_and_the_address_bar_pass(client: Any, site: str) -> None:
    assert (await client.get("/api/quests", headers={"Sec-Fetch-Site": site})).status == 200


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/octet-stream", "application/json; charset=iso-8859-1", "application/jsonp", "text/json", "application/json-seq",
])  # fmt: skip
async def test_a_write_without_a_json_content_type_is_415_and_writes_nothing(client: Any, quest: Quest, content_type: str | None) -> None:
    before = quest.log.last_seq
    headers = {} if content_type is None else {"Content-Type": content_type}
    for path in ["/api/quests/q1/messages", "/api/quests/q1/control", "/api/quests"]:
        # skip_auto_headers: without it aiohttp adds application/octet-stream to a body
        resp = await client.post(path, data=b'{"text": "x", "action": "stop", "title": "t"}', headers=headers, skip_auto_headers=["Content-Type"])
        body = await _refused(resp, 415, "unsupported_media_type")
        assert body["content_type"] == content_type
        for method in (client.put, client.patch, client.delete):
            await _refused(await method(path, data=b"{}", headers=headers, skip_auto_headers=["Content-Type"]), 415, "unsupported_media_type")
    await _refused(await client.post("/api/quests/q1/control", headers=headers, skip_auto_headers=["Content-Type"]), 415, "unsupported_media_type")
    assert quest.log.last_seq == before
    assert quest.home.quest_ids() == ["q1"]


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\"", "application/json; charset=utf8"])
async def test_json_with_or_without_a_utf8_charset_is_accepted(client: Any, quest: Quest, content_type: str) -> None:
    resp = await client.post("/api/quests/q1/messages", data=b'{"text": "hello"}', headers={"Content-Type": content_type})
    assert resp.status == 201, await resp.text()


async def test_with_a_token_the_guard_comes_first_and_the_token_is_still_required(make_client: Any, quest: Quest) -> None:
    client = await make_client(token="s3cret")
    before = quest.log.last_seq
    bearer = {"Authorization": "Bearer s3cret"}
    # A page on another origin learns nothing, not even that a token is needed.
    await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}, headers={"Origin": "http://evil.example"} | bearer), 403, "forbidden_origin")
    await _refused(await client.post("/api/quests/q1/messages", data="x", headers={"Content-Type": "text/plain"} | bearer), 415, "unsupported_media_type")
    await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}), 401, "unauthorized")
    await _refused(await client.post("/api/quests/q1/messages", json={"text": "x"}, headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    assert quest.log.last_seq == before
    own = {"Origin": f"http://127.0.0.1:{client.server.port}"}
    assert (await client.post("/api/quests/q1/messages", json={"text": "x"}, headers=own | bearer)).status == 201
