"""What every runner shares: starting the agent as a process group, feeding it the
prompt, keeping its raw streams under the turn's directory, and reading its stdout as
JSON lines that the runner's own ``handle`` turns into turn events.

Every runner's MCP configuration comes from :func:`mcp_endpoints`: per namespace either
the stdio server to start (``ds mcp --namespace ...``) or, when ``runner.mcp_transport``
is ``http``, the URL and bearer token under which this host serves the turn
(:func:`serving_turn` obtains them from :class:`handlers.mcp.host.McpHost` for the time
the turn runs).

A runner for an agent CLI that prints JSON lines (Codex, Claude Code, the scripted
agent) subclasses :class:`LineRunner` and writes :meth:`LineRunner.command` and
:meth:`LineRunner.handle`. The ACP runner speaks JSON-RPC both ways and drives the
process itself, with :func:`start_agent` and :func:`stop_group`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ds_events.bash import procs
from ds_events.config import RunnerConfig
from ds_events.crashpoints import crashpoint
from ds_events.services.runtime.commands import RunResult, TurnSpec
from ds_events.services.runtime.turns import MCP_NAMESPACES, TurnRecorder

__all__ = [
    "LineRunner", "McpEndpoint", "mcp_endpoints", "mcp_stdio_endpoints", "serving_turn", "close_mcp_host",
    "mcp_server_command",
    "agent_env", "start_agent", "stop_group", "kill_and_reap",
    "STREAM_LIMIT", "TOKEN_ENV",
]  # fmt: skip

STREAM_LIMIT = 64 * 1024 * 1024  # the longest stdout line read whole (a big tool result)
REAP_SECONDS = 5.0  # the longest a KILLed agent is waited for, when its loop no longer can
TOKEN_ENV = "DS_MCP_TOKEN"  # the agent's env var holding its turn's bearer token (http)


@dataclass(frozen=True)
class McpEndpoint:
    """How a turn's agent reaches one namespace: a stdio server to start (``command``,
    with ``env`` added to its environment) or the host's ``url`` with the turn's
    bearer ``token``."""

    namespace: str
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    token: str = ""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}


# run id -> the endpoints this host serves that turn under (while it runs)
_served: dict[str, list[McpEndpoint]] = {}


async def close_mcp_host() -> None:
    """Stop the listener :func:`serving_turn` started in this event loop, if it did (a
    host's shutdown: ``ds run`` at its end, ``ds serve`` / ``ds acp`` with their fleet)."""
    host = sys.modules.get("handlers.mcp.host")  # not imported: never started
    if host is not None:
        await host.McpHost.close_running()


def mcp_endpoints(spec: TurnSpec) -> list[McpEndpoint]:
    """The three namespaces for ``spec``'s agent: the host's URLs while
    :func:`serving_turn` serves the turn, else stdio servers with the quest in their env
    (DS_HOME, DS_QUEST_ID, DS_RUN_ID, and PYTHONPATH when set, so a source checkout
    serves its own code)."""
    served = _served.get(spec.run_id)
    if served is not None:
        return list(served)
    return mcp_stdio_endpoints(spec)


def mcp_stdio_endpoints(spec: TurnSpec) -> list[McpEndpoint]:
    """The three namespaces for ``spec``'s agent as stdio servers (for an agent that
    takes no other kind, whatever the host serves)."""
    env = {**spec.env, "DS_RUN_ID": spec.run_id}
    if os.environ.get("PYTHONPATH"):
        env.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
    return [McpEndpoint(ns, command=mcp_server_command(ns), env=dict(sorted(env.items()))) for ns in MCP_NAMESPACES]


@contextlib.asynccontextmanager
async def serving_turn(spec: TurnSpec, config: RunnerConfig) -> AsyncIterator[list[McpEndpoint]]:
    """For the time of the turn: with ``runner.mcp_transport: http``, have this process
    serve the namespaces to it (a token that ends with the block); with ``stdio``,
    nothing to do. Yields :func:`mcp_endpoints`. Re-entered for a turn it already
    serves, it changes nothing."""
    if config.mcp_transport != "http" or spec.run_id in _served:
        yield mcp_endpoints(spec)
        return
    from handlers.mcp.host import McpHost

    host = await McpHost.running()
    grant = await host.grant(home=spec.env.get("DS_HOME", spec.home), quest_id=spec.quest_id, run_id=spec.run_id)
    _served[spec.run_id] = [McpEndpoint(ns, url=url, token=grant.token) for ns, url in grant.urls.items()]
    try:
        yield mcp_endpoints(spec)
    finally:
        _served.pop(spec.run_id, None)
        await host.revoke(grant)


def mcp_server_command(namespace: str) -> list[str]:
    """argv of our stdio MCP server for ``namespace`` (this interpreter, so a venv works
    without ``ds`` on PATH)."""
    if namespace not in MCP_NAMESPACES:
        raise ValueError(f"unknown namespace {namespace!r}")
    return [sys.executable, "-m", "ds_events", "mcp", "--namespace", namespace]


def agent_env(spec: TurnSpec, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The agent's environment: ours, plus the quest's DS_HOME / DS_QUEST_ID, plus ``extra``."""
    env = dict(os.environ)
    env.update(spec.env)
    env["DS_RUN_ID"] = spec.run_id
    env.update(extra or {})
    return env


async def start_agent(argv: list[str], *, cwd: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start ``argv`` as the leader of a new process group, pipes on all three streams."""
    return await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=STREAM_LIMIT,
    )  # fmt: skip


def stop_group(proc: asyncio.subprocess.Process) -> None:
    """KILL the agent's whole process group (when the host itself is going away)."""
    with contextlib.suppress(PermissionError):
        procs.signal_group(proc.pid, signal.SIGKILL)


async def kill_and_reap(proc: asyncio.subprocess.Process, *, timeout: float = 10.0) -> None:
    """KILL the agent's group, wait (bounded) for it to end, and close its pipes: a turn
    cancelled mid-read leaves no subprocess transport for the garbage collector (whose
    ResourceWarning would surface later, in whatever code runs then)."""
    stop_group(proc)
    try:
        with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
    finally:  # also when a second cancellation (the loop shutting down) cut the wait short
        _close_transport(proc)


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    """Close the process's pipes and make sure its ``Popen`` knows the exit status.

    The pipes' readers were cancelled with the turn, and asyncio.subprocess.Process
    exposes no public close. An event loop that closes before its child watcher reports
    the exit never tells the ``Popen``, whose garbage collection would then warn that the
    process "is still running" in whatever code runs at that moment: so, once the group is
    KILLed, reap it here (a killed process ends within moments; bounded all the same)."""
    transport = getattr(proc, "_transport", None)
    if transport is None:
        return
    popen = transport.get_extra_info("subprocess")
    transport.close()
    if popen is not None and popen.returncode is None:
        with contextlib.suppress(subprocess.TimeoutExpired, ChildProcessError):
            popen.wait(timeout=REAP_SECONDS)


class LineRunner:
    """An agent CLI that reads its prompt on stdin and prints JSON lines on stdout."""

    name = "line"

    def __init__(self, config: RunnerConfig) -> None:
        self.config = config
        self.failure = ""  # set by handle() when the stream reports an error

    # -- what a subclass writes -------------------------------------------------------

    def command(self, spec: TurnSpec) -> list[str]:
        raise NotImplementedError

    def environment(self, spec: TurnSpec) -> dict[str, str]:
        return agent_env(spec)

    def workspace(self, spec: TurnSpec) -> str:
        return spec.quest_root

    def handle(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
        """One decoded stdout line of the agent."""
        raise NotImplementedError

    def succeeded(self, exit_code: int) -> bool:
        return exit_code == 0 and not self.failure

    # -- the shared driver ------------------------------------------------------------

    def executable(self, default: str) -> list[str]:
        """The configured command for this runner (``runner.commands.<name>``), else ``default``."""
        return list(self.config.commands.get(self.name) or [default])

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        async with serving_turn(spec, self.config):
            return await self._run(spec, recorder)

    async def _run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult:
        argv = self.command(spec)
        run_dir = Path(spec.run_dir)
        crashpoint("host.runner.before_spawn")
        proc = await start_agent(argv, cwd=self.workspace(spec), env=self.environment(spec))
        recorder.process_started(proc.pid, argv)
        try:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            proc.stdin.write(spec.prompt.encode())
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await proc.stdin.drain()
            proc.stdin.close()
            crashpoint("host.runner.after_prompt_fed")
            with open(run_dir / "stdout.jsonl", "wb") as out, open(run_dir / "stderr.log", "wb") as err:
                await asyncio.gather(
                    self._read_stdout(proc.stdout, out, recorder), _copy(proc.stderr, err, recorder)
                )
            code = await proc.wait()
        except BaseException:  # cancelled (the host is going away) or a bug: the agent goes too
            await kill_and_reap(proc)
            raise
        if self.succeeded(code):
            return RunResult(ok=True, exit_code=code)
        return RunResult(ok=False, exit_code=code, error=self.failure or _tail(run_dir / "stderr.log"))

    async def interrupt(self) -> None:
        return None  # the scheduler signals the process group

    async def _read_stdout(self, stream: asyncio.StreamReader, out: Any, recorder: TurnRecorder) -> None:
        while line := await stream.readline():
            out.write(line)
            out.flush()
            recorder.touch()
            try:
                item = json.loads(line)
            except ValueError:
                continue  # not a JSON line (a banner): kept in the raw stream only
            if isinstance(item, dict):
                self.handle(item, recorder)


async def _copy(stream: asyncio.StreamReader, out: Any, recorder: TurnRecorder) -> None:
    while chunk := await stream.read(65536):
        out.write(chunk)
        out.flush()
        recorder.touch()


def _tail(path: Path, limit: int = 2000) -> str:
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()
