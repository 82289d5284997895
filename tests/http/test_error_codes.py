"""Every code of the HTTP edge's catalogue (``handlers/http/errors.py``) is answered, by a
real request, with the status the catalogue gives it, in our error shape; a code added to
the catalogue without a case here fails the last test.

The daemon's own routes can never let a bug, a timeout or an HTTP exception of another
status escape the error middleware; those cases serve a small app of the test's own
through the same middleware and runner."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from ds_events.home import Home, Quest
from handlers.http import make_app
from handlers.http.errors import CODES, error_middleware

from .conftest import DaemonTestServer

JSON = {"Content-Type": "application/json"}
Case = Callable[[Home], Awaitable[tuple[int, dict[str, Any]]]]


async def _served(app: web.Application, send: Callable[[TestClient[Any, Any]], Awaitable[Any]]) -> tuple[int, dict[str, Any]]:
    client = TestClient(DaemonTestServer(app))
    await client.start_server()
    try:
        resp = await send(client)
        return resp.status, await resp.json()
    finally:
        await client.close()


def daemon(method: str, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None, **app: Any) -> Case:
    async def case(home: Home) -> tuple[int, dict[str, Any]]:
        return await _served(make_app(home, **app), lambda c: c.request(method, path, data=body, headers=headers))

    return case


def raw(request: bytes) -> Case:
    """Bytes written to the daemon's socket as they are (no client would send them)."""

    async def case(home: Home) -> tuple[int, dict[str, Any]]:
        client = TestClient(DaemonTestServer(make_app(home)))
        await client.start_server()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
            writer.write(request)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            await writer.wait_closed()
        finally:
            await client.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        return int(head.split()[1]), json.loads(body)

    return case


def own(handler: Callable[[web.Request], Awaitable[web.StreamResponse]], *, middleware: bool = True) -> Case:
    """A route of the test's own behind the error middleware (or only the runner)."""

    async def case(home: Home) -> tuple[int, dict[str, Any]]:
        app = web.Application(middlewares=[error_middleware] if middleware else [])
        app.router.add_get("/x", handler)
        return await _served(app, lambda c: c.get("/x"))

    return case


async def _bug(request: web.Request) -> web.Response:
    raise ZeroDivisionError("a bug of ours")


async def _too_many(request: web.Request) -> web.Response:
    raise web.HTTPTooManyRequests()


async def _slow(request: web.Request) -> web.Response:
    raise TimeoutError  # what aiohttp answers 504 when nothing catches it


def client_gone_case() -> Case:
    """The handler's client is gone when its write fails: the answer (which nobody can
    read) is seen where aiohttp prepares it."""

    async def case(home: Home) -> tuple[int, dict[str, Any]]:
        prepared: list[tuple[int, bytes]] = []

        async def gone(request: web.Request) -> web.Response:
            assert request.transport is not None
            request.transport.close()
            raise ConnectionResetError("the client went away")

        async def seen(request: web.Request, resp: web.StreamResponse) -> None:
            assert isinstance(resp, web.Response) and isinstance(resp.body, bytes)
            prepared.append((resp.status, resp.body))

        app = web.Application(middlewares=[error_middleware])
        app.router.add_get("/x", gone)
        app.on_response_prepare.append(seen)
        client = TestClient(DaemonTestServer(app))
        await client.start_server()
        try:
            with pytest.raises(aiohttp.ClientError):  # the connection is gone: no answer reaches the client
                await client.get("/x")
        finally:
            await client.close()
        assert len(prepared) == 1
        return prepared[0][0], json.loads(prepared[0][1])

    return case


Q = "/api/quests/q1"
CASES: dict[str, Case] = {
    "unauthorized": daemon("GET", "/api/health", token="s3cret"),
    "misdirected_request": daemon("GET", "/api/health", headers={"Host": "rebind.evil.example"}),
    "forbidden_origin": daemon("GET", "/api/health", headers={"Origin": "null"}),
    "unsupported_media_type": daemon("POST", f"{Q}/messages", body=b'{"text": "x"}', headers={"Content-Type": "text/plain"}),
    "body_too_large": daemon("POST", f"{Q}/messages", body=b'{"text": "' + b"x" * 2000 + b'"}', headers=JSON, max_body=1024),
    "too_deeply_nested": daemon("POST", f"{Q}/messages", body=b"[" * 100, headers=JSON),
    "invalid_json": daemon("POST", f"{Q}/messages", body=b'{"text": ', headers=JSON),
    "request_line_too_long": daemon("GET", "/api/health?q=" + "a" * 9000),
    "headers_too_large": daemon("GET", "/api/health", headers={"X-Big": "a" * 9000}),
    "bad_request": raw(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n"),
    "not_found": daemon("GET", "/api/nothing-here"),
    "method_not_allowed": daemon("PUT", "/api/quests", body=b"{}", headers=JSON),
    "http_error": own(_too_many),
    "timeout": own(_slow, middleware=False),
    "internal_error": own(_bug),
    "client_closed_request": client_gone_case(),
    "invalid_cursor": daemon("GET", f"{Q}/events?after=-1"),
    "cursor_beyond_head": daemon("GET", f"{Q}/events?after=99999"),
    "invalid_format": daemon("GET", f"{Q}/canvas?format=png"),
}
# Codes whose status is not the catalogue's own but the server's (the catalogue says so).
SERVER_STATUS = {"http_error": 429}


@pytest.mark.parametrize("code", sorted(CASES))
async def test_each_code_is_answered_with_its_catalogued_status(code: str, home: Home, quest: Quest) -> None:
    status, body = await CASES[code](home)
    assert body["error"] == code and body["message"], body
    assert status == SERVER_STATUS.get(code, CODES[code].status), body


def test_every_catalogued_code_has_a_case() -> None:
    assert sorted(CODES) == sorted(CASES)
