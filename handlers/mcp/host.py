"""The host-served transport: the process that runs turns (``ds run``, ``ds serve``,
``ds acp``) serves the three namespaces to its own turns over MCP streamable HTTP on
loopback, instead of each turn's agent starting three ``ds mcp`` processes that each
open the quest again.

One listener per host (:class:`McpHost`, on ``127.0.0.1`` and a free port, started on
the first turn that asks for it, in a thread with its own event loop). A turn gets a :class:`TurnGrant`: one bearer token
naming exactly that turn's binding (home, quest, run id) and one URL per namespace,
``/mcp/<quest_id>/<run_id>/<namespace>``. A request without a token, with one that is
unknown or whose turn has ended, or with the token of another turn than the one its URL
names, is refused with HTTP 401 and ``{"error": code, "message": ...}`` (the codes are
in :mod:`.errors`); nothing is called, nothing is recorded.

Behind the token, the tools are the very servers ``ds mcp`` serves over stdio
(:func:`handlers.mcp.build_server`), so calls record the same ``tool.call_*`` events
with the same actor (``mcp:<namespace>``) and give the same refusals. Their open quest
handles and projections are kept between turns: each served namespace (a
:class:`_Served`, one per quest and namespace, more only while an earlier turn's call is
still running) is lent to one turn at a time, its log handle stamping that turn's run id
on what it appends, and goes back to the pool once the turn has ended and its last call
has returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
import socket
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from ds_events.services.runtime.turns import MCP_NAMESPACES

from .binding import QuestBinding
from .context import NamespaceState, ToolContext
from .namespace import NamespaceServer

__all__ = ["McpHost", "TurnGrant", "TOKEN_HEADER", "error_response"]

TOKEN_HEADER = "Authorization"

_IDLE_SERVED_PER_NAMESPACE = 2  # idle handles kept per (quest, namespace); more are closed
_START_TIMEOUT = 60.0  # seconds for the listener to start or stop (a loaded machine)
T = TypeVar("T")


@dataclass(frozen=True)
class TurnGrant:
    """What a turn's agent is told: one token, one URL per namespace."""

    quest_id: str
    run_id: str
    token: str
    urls: dict[str, str]

    @property
    def headers(self) -> dict[str, str]:
        return {TOKEN_HEADER: f"Bearer {self.token}"}


class _Served:
    """One namespace of one quest, served: the SDK's session manager (stateless, JSON
    answers) over the namespace's server, running in its own task, and the tool context
    its lifespan opened (the quest handle and the namespace's state)."""

    def __init__(self, namespace: str, binding: QuestBinding, host: str, port: int) -> None:
        from . import build_server

        self.namespace = namespace
        self.binding = binding
        self.context: ToolContext[NamespaceState] | None = None
        server: NamespaceServer[Any] = build_server(namespace, binding)
        inner = server.lifespan

        @contextlib.asynccontextmanager
        async def lifespan(s: NamespaceServer[Any]) -> AsyncIterator[ToolContext[Any]]:
            async with inner(s) as tc:
                self.context = tc
                yield tc

        server.lifespan = lifespan  # to keep hold of the context the server opens
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{host}:{port}", f"localhost:{port}"],
            allowed_origins=[f"http://{host}:{port}", f"http://localhost:{port}"],
        )
        self.manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True, security_settings=security)
        self.in_flight = 0
        self.idle = asyncio.Event()
        self.idle.set()
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._serve(), name=f"mcp {self.binding.quest_id} {self.namespace}")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._task.result()  # raises why it could not start

    async def bind_run(self, run_id: str | None) -> None:
        """Stamp ``run_id`` on what this handle appends from now on (None: no run)."""
        tc = self.context
        if tc is None:
            return
        # The quest opens in the background when the server starts: wait for it off the loop.
        with contextlib.suppress(Exception):
            quest = await tc.quest_async()
            quest.bind_run(run_id)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        self.in_flight += 1
        self.idle.clear()
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.idle.set()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._task

    async def _serve(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()


@dataclass
class _Turn:
    grant: TurnGrant
    home: Path
    served: dict[str, _Served]
    ended: bool = False
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class McpHost:
    """The loopback listener that serves the namespaces to this process's turns.

    It runs in a thread of its own, with its own event loop: the host's loop (the
    scheduler, the runners reading their agents' streams and appending what they report)
    blocks on its appends, and a tool call waiting behind them would cost the agent that
    much per call. The public coroutines may be awaited from any event loop."""

    _instance: McpHost | None = None
    _starting = threading.Lock()

    def __init__(self) -> None:
        self.host = "127.0.0.1"
        self.port = 0
        self._turns: dict[str, _Turn] = {}  # sha256(token) -> turn
        self._pool: dict[tuple[Path, str, str], list[_Served]] = {}  # idle handles
        self._lent: set[_Served] = set()
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._thread_main, name="ds-events MCP host", daemon=True)

    # -- lifecycle --------------------------------------------------------------------

    @classmethod
    async def running(cls) -> McpHost:
        """This process's host, started on first use."""
        host = cls._instance
        if host is not None and host._thread.is_alive():
            return host
        return await asyncio.to_thread(cls._start_once)

    @classmethod
    async def close_running(cls) -> None:
        """Stop this process's host, if one was started (a host process's shutdown)."""
        with cls._starting:
            host, cls._instance = cls._instance, None
        if host is not None:
            await host.close()

    @classmethod
    def _start_once(cls) -> McpHost:
        with cls._starting:
            if cls._instance is not None and cls._instance._thread.is_alive():
                return cls._instance
            host = cls()
            host._thread.start()
            if not host._ready.wait(_START_TIMEOUT) or host._failed is not None:
                raise RuntimeError(f"the MCP host did not start: {host._failed or 'timed out'}")
            cls._instance = host
            return host

    async def close(self) -> None:
        """End every turn's token, close the quest handles, stop listening."""
        if self._loop is not None and self._stopping is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopping.set)
            await asyncio.to_thread(self._thread.join, _START_TIMEOUT)

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # reported by _start_once when it happens while starting
            self._failed = exc
        finally:
            self._ready.set()
            loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it, a keep-alive client waits ~40 ms
        # per call (uvicorn writes a response's head and body apart; Nagle holds the body
        # until the client's delayed ACK of the head).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app, interface="asgi3", lifespan="off", log_config=None, log_level="warning", access_log=False,
            timeout_graceful_shutdown=5,
        )  # fmt: skip
        server = _QuietServer(config)
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="mcp host")
        while not server.started:
            if serving.done():
                serving.result()
                raise RuntimeError("the listener stopped while starting")
            await asyncio.sleep(0.005)
        self._ready.set()
        await self._stopping.wait()
        for turn in list(self._turns.values()):
            await self._end(turn)
        for served in [*self._lent, *(s for pool in self._pool.values() for s in pool)]:
            await served.close()
        self._pool.clear()
        self._lent.clear()
        server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await serving

    async def _in_host(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the host's own loop; await it from the caller's."""
        assert self._loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    # -- turns ------------------------------------------------------------------------

    async def grant(self, *, home: str | Path, quest_id: str, run_id: str) -> TurnGrant:
        """Open (or take from the pool) the quest's three namespaces for one turn and
        issue its token."""
        binding = QuestBinding(home=Path(home), quest_id=quest_id)
        await asyncio.to_thread(binding.check)
        return await self._in_host(self._grant(binding, run_id))

    async def revoke(self, grant: TurnGrant) -> None:
        """End the turn's token now; its namespaces go back to the pool once their last
        call has returned."""
        await self._in_host(self._revoke(grant))

    async def _grant(self, binding: QuestBinding, run_id: str) -> TurnGrant:
        token = secrets.token_urlsafe(32)
        base = f"http://{self.host}:{self.port}/mcp/{binding.quest_id}/{run_id}"
        grant = TurnGrant(quest_id=binding.quest_id, run_id=run_id, token=token,
                          urls={ns: f"{base}/{ns}" for ns in MCP_NAMESPACES})  # fmt: skip
        served = {}
        async with self._lock:
            for namespace in MCP_NAMESPACES:
                served[namespace] = await self._lend(binding, namespace)
        for s in served.values():
            await s.bind_run(run_id)
        self._turns[_digest(token)] = _Turn(grant=grant, home=binding.home, served=served)
        return grant

    async def _revoke(self, grant: TurnGrant) -> None:
        turn = self._turns.get(_digest(grant.token))
        if turn is not None:
            await self._end(turn)

    async def _end(self, turn: _Turn) -> None:
        self._turns.pop(_digest(turn.grant.token), None)
        turn.ended = True
        for s in turn.served.values():
            task = asyncio.create_task(self._give_back(s))
            turn.tasks.add(task)
            task.add_done_callback(turn.tasks.discard)

    async def _lend(self, binding: QuestBinding, namespace: str) -> _Served:
        pool = self._pool.setdefault((binding.home, binding.quest_id, namespace), [])
        if pool:
            served = pool.pop()
        else:
            served = _Served(namespace, binding, self.host, self.port)
            await served.start()
        self._lent.add(served)
        return served

    async def _give_back(self, served: _Served) -> None:
        await served.idle.wait()
        await served.bind_run(None)
        self._lent.discard(served)
        pool = self._pool.setdefault((served.binding.home, served.binding.quest_id, served.namespace), [])
        if len(pool) < _IDLE_SERVED_PER_NAMESPACE:
            pool.append(served)
        else:
            await served.close()

    # -- requests ---------------------------------------------------------------------

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        served, refusal = self._admit(scope)
        if served is None:
            assert refusal is not None
            await _send(send, *refusal)
            return
        with served.request():
            await served.manager.handle_request(scope, receive, send)

    def _admit(self, scope: Scope) -> tuple[_Served | None, tuple[int, bytes] | None]:
        """The served namespace a request may reach, or why it may not (status, body)."""
        parts = scope["path"].strip("/").split("/")
        if len(parts) != 4 or parts[0] != "mcp":
            where = "the host serves /mcp/<quest_id>/<run_id>/<namespace> only"
            return None, error_response(404, "unknown_endpoint", f"no endpoint {scope['path']!r}: {where}")
        _, quest_id, run_id, namespace = parts
        token = _bearer(scope)
        if token is None:
            how = "send the turn's token as 'Authorization: Bearer <token>'"
            return None, error_response(401, "missing_token", f"no bearer token: {how}")
        turn = self._turns.get(_digest(token))
        if turn is None or turn.ended:
            why = "it is wrong, or its turn has ended (a token lasts one turn)"
            return None, error_response(401, "invalid_token", f"the bearer token names no running turn: {why}")
        if (turn.grant.quest_id, turn.grant.run_id) != (quest_id, run_id):
            why = f"the bearer token belongs to another turn than {quest_id}/{run_id}"
            return None, error_response(401, "wrong_turn", f"{why}: use the URL the turn was given")
        served = turn.served.get(namespace)
        if served is None:
            known = ", ".join(MCP_NAMESPACES)
            return None, error_response(404, "unknown_namespace", f"no namespace {namespace!r}: one of {known}")
        return served, None


class _QuietServer(uvicorn.Server):
    """uvicorn without its signal handlers: the host process keeps its own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bearer(scope: Scope) -> str | None:
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def error_response(status: int, code: str, message: str) -> tuple[int, bytes]:
    """A refusal's HTTP status and JSON body: ``{"error": code, "message": ...}``."""
    return status, json.dumps({"error": code, "message": message}).encode()


async def _send(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="ds-events"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
