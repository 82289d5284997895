"""Each configured runner: its agent CLI found, its version inside the tested range, its
model provider's endpoint reachable.

The CLI is the one the runner would start (``runner.commands.<name>``, else the default
on PATH). Its version is what ``--version`` prints (codex, claude), or for an ACP agent
the protocol version it answers an ``initialize`` with. The endpoint is asked one HTTP
request through the proxy the environment names (``HTTPS_PROXY`` / ``HTTP_PROXY`` /
``NO_PROXY``, as aiohttp's ``trust_env`` reads them): any HTTP answer, a 401 included,
means it is reachable; a refused connection, a DNS failure or no answer in time is a
failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from ds_events.config import RunnerConfig

from .check import Check
from .limits import ACP_PROTOCOL_VERSION, DEFAULT_ENDPOINTS, ENDPOINT_TIMEOUT, TESTED, VERSION_TIMEOUT, parse_version

__all__ = ["configured_runners", "check_runner", "endpoint_of", "reach"]

_DEFAULT_ARGV = {"codex": ["codex"], "claude": ["claude"]}
_INSTALL = {
    "codex": "npm install -g @openai/codex@0.169.0",
    "claude": "npm install -g @anthropic-ai/claude-code@2",
}


def configured_runners(config: RunnerConfig) -> list[str]:
    """``runner.name`` first, then every runner ``runner.commands`` names a command for."""
    names = [config.name, *sorted(config.commands)]
    return list(dict.fromkeys(names))


async def check_runner(name: str, config: RunnerConfig) -> list[Check]:
    """The checks of runner ``name``: ``runner.<name>.cli``, ``.version``, ``.provider``."""
    if name == "scripted":
        return [Check(name="runner.scripted", status="ok", detail="built in: the scripted agent runs under this interpreter")]
    if name not in ("codex", "claude", "acp"):
        return [Check(name=f"runner.{name}", status="skip", detail=f"runner.commands names {name!r}, which is not a runner")]
    argv = list(config.commands.get(name) or _DEFAULT_ARGV.get(name, []))
    prefix = f"runner.{name}"
    if not argv:
        return [
            Check(name=f"{prefix}.cli", status="fail", detail="the acp runner has no agent command configured",
                  fix="ds config set runner.commands.acp '[codex-acp]'  (the ACP agent's command line)"),
        ]  # fmt: skip
    found = shutil.which(argv[0])
    if found is None:
        setting = f"ds config set runner.commands.{name} '[/path/to/{os.path.basename(argv[0])}]'"
        fix = f"{_INSTALL[name]}, or {setting}" if name in _INSTALL else setting
        return [
            Check(name=f"{prefix}.cli", status="fail", detail=f"{argv[0]!r} is not found (not on PATH, or not executable)", fix=fix),
            Check(name=f"{prefix}.version", status="skip", detail="the CLI was not found"),
            *([] if name == "acp" else [await _provider(name, config)]),
        ]
    shown = " ".join(argv) if found == argv[0] else f"{' '.join(argv)} ({found})"
    checks = [Check(name=f"{prefix}.cli", status="ok", detail=shown)]
    checks.append(await (_acp_version(argv) if name == "acp" else _version(name, argv)))
    if name == "acp":
        checks.append(Check(name=f"{prefix}.provider", status="skip", detail="an ACP agent reaches its own provider"))
    else:
        checks.append(await _provider(name, config))
    return checks


def endpoint_of(name: str, config: RunnerConfig) -> tuple[str, str]:
    """``(url, where it comes from)`` of the provider runner ``name`` talks to."""
    if name == "codex":
        if config.codex_provider is not None:
            return config.codex_provider.base_url, "runner.codex_provider.base_url"
        return DEFAULT_ENDPOINTS["codex"], "Codex's default provider"
    env = os.environ.get("ANTHROPIC_BASE_URL")
    return (env, "ANTHROPIC_BASE_URL") if env else (DEFAULT_ENDPOINTS["claude"], "Claude Code's default")


async def reach(url: str, *, timeout: float = ENDPOINT_TIMEOUT) -> tuple[bool, str]:
    """Whether ``url`` answers HTTP at all (through the environment's proxy), and what."""
    import aiohttp

    route = _route(url)
    try:
        async with aiohttp.ClientSession(trust_env=True, timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            async with session.get(url, allow_redirects=False) as answer:
                return True, f"HTTP {answer.status} from {url} ({route})"
    except TimeoutError:
        return False, f"no answer from {url} within {timeout:g} s ({route})"
    except aiohttp.ClientError as exc:
        return False, f"{url} cannot be reached ({route}): {type(exc).__name__}: {exc}"


# -- private helpers ----------------------------------------------------------------------


async def _version(name: str, argv: list[str]) -> Check:
    check = f"runner.{name}.version"
    tested = TESTED[name]
    fix = f"{_INSTALL[name]}  (tested: {tested.text()}; {tested.source})"
    try:
        code, output = await _run([*argv, "--version"], VERSION_TIMEOUT)
    except OSError as exc:
        return Check(name=check, status="fail", detail=f"{argv[0]} --version cannot start: {exc.strerror or exc}", fix=fix)
    if code is None:
        return Check(name=check, status="fail", detail=f"{argv[0]} --version gave no answer within {VERSION_TIMEOUT:g} s", fix=fix)
    version = parse_version(output)
    if code != 0 or version is None:
        said = output.strip().splitlines()[-1][:200] if output.strip() else "nothing"
        return Check(name=check, status="fail", detail=f"{argv[0]} --version exited {code} and printed {said!r}", fix=fix)
    if tested.holds(version):
        return Check(name=check, status="ok", detail=f"{version} (tested: {tested.text()})")
    if _older(version, tested.low):
        return Check(name=check, status="fail", detail=f"{version} is older than the tested range {tested.text()}", fix=fix)
    return Check(name=check, status="warn", detail=f"{version} is newer than the tested range {tested.text()}: untested", fix=fix)


async def _acp_version(argv: list[str]) -> Check:
    """The ACP protocol version the agent answers ``initialize`` with (JSON-RPC on stdio)."""
    check = "runner.acp.version"
    fix = f"use an ACP agent that speaks protocol version {ACP_PROTOCOL_VERSION} (runner.commands.acp)"
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": ACP_PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
        "clientInfo": {"name": "ds-doctor", "version": "1"}}}  # fmt: skip
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return Check(name=check, status="fail", detail=f"{argv[0]} cannot start: {exc.strerror or exc}", fix=fix)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(request) + "\n").encode())
        answer = await asyncio.wait_for(_response(proc.stdout, 0), VERSION_TIMEOUT)
    except (TimeoutError, BrokenPipeError, ConnectionResetError):
        answer = None
    finally:
        await _end(proc)
    if answer is None:
        return Check(name=check, status="fail", detail=f"the agent gave no initialize answer within {VERSION_TIMEOUT:g} s", fix=fix)
    result: dict[str, Any] = answer["result"] if isinstance(answer.get("result"), dict) else {}
    version = result.get("protocolVersion")
    info: dict[str, Any] = result["agentInfo"] if isinstance(result.get("agentInfo"), dict) else {}
    agent = f"{info.get('name', argv[0])} {info.get('version', '')}".strip()
    if version != ACP_PROTOCOL_VERSION:
        return Check(name=check, status="fail", detail=f"{agent} answers ACP protocol {version!r}, not {ACP_PROTOCOL_VERSION}", fix=fix)
    return Check(name=check, status="ok", detail=f"{agent} speaks ACP protocol {version} (tested: {ACP_PROTOCOL_VERSION})")


async def _provider(name: str, config: RunnerConfig) -> Check:
    url, source = endpoint_of(name, config)
    ok, detail = await reach(url)
    if ok:
        return Check(name=f"runner.{name}.provider", status="ok", detail=detail)
    setting = (
        "ds config set runner.codex_provider.base_url http://HOST:PORT/v1" if name == "codex" else "export ANTHROPIC_BASE_URL=https://HOST"
    )
    fix = f"behind a proxy: export HTTPS_PROXY=http://PROXY:PORT (and NO_PROXY for local hosts); else use a reachable endpoint: {setting}"
    return Check(name=f"runner.{name}.provider", status="fail", detail=f"{detail} [{source}]", fix=fix)


async def _run(argv: list[str], timeout: float) -> tuple[int | None, str]:
    """``(exit code or None on timeout, stdout and stderr)`` of ``argv``, its group killed
    if it outlives ``timeout``."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _end(proc)
        return None, ""
    return proc.returncode, out.decode("utf-8", "replace")


async def _response(stream: asyncio.StreamReader, request_id: int) -> dict[str, Any] | None:
    while line := await stream.readline():
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == request_id and ("result" in message or "error" in message):
                return message
    return None


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Close the probe's stdin, give it a moment to exit, then KILL its group; reap it."""
    if proc.stdin is not None:
        proc.stdin.close()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), 5.0)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    transport = getattr(proc, "_transport", None)  # the pipes: not left for the garbage collector
    if transport is not None:
        transport.close()


def _route(url: str) -> str:
    """How a request to ``url`` goes: through which proxy variable, or directly."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        return f"via proxy {proxy}"
    return "direct: no proxy variable applies" if not proxy else "direct: NO_PROXY names it"


def _older(version: str, low: str) -> bool:
    return tuple(int(p) for p in version.split(".")) < tuple(int(p) for p in low.split("."))
