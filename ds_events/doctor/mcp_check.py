"""The three MCP namespaces start as a runner starts them and list their tools.

Each server is the runners' own command (:func:`ds_events.runners.base.mcp_server_command`:
this interpreter, ``-m ds_events mcp --namespace N``) behind a real stdio MCP client,
bound to a scratch quest in a temporary home that is removed afterwards: the user's
home gets no quest. The scratch home uses the file store whatever the user's store is
(the store is a check of its own).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from ds_events.runners.base import mcp_server_command
from ds_events.services.runtime.turns import MCP_NAMESPACES

from .check import Check
from .limits import MCP_TIMEOUT

__all__ = ["check_mcp_servers", "SCRATCH_QUEST"]

SCRATCH_QUEST = "doctor"


async def check_mcp_servers(*, timeout: float = MCP_TIMEOUT) -> list[Check]:
    """``mcp.<namespace>`` for each namespace: started, initialised, its tools listed."""
    with tempfile.TemporaryDirectory(prefix="ds-doctor-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "DS_HOME": str(home), "DS_STORE": "file", "DS_QUEST_ID": SCRATCH_QUEST}
        env.pop("DS_QUEST_ROOT", None)
        made = await _make_scratch_quest(env, timeout)
        if made is not None:
            return [Check(name=f"mcp.{ns}", status="fail", detail=f"the scratch quest could not be made: {made}",
                          fix="run `ds doctor` again; if it persists, `python3 -m ds_events quest new --title t` shows the error")
                    for ns in MCP_NAMESPACES]  # fmt: skip
        return list(await asyncio.gather(*(_probe(ns, env, Path(scratch), timeout) for ns in MCP_NAMESPACES)))


# -- private helpers ----------------------------------------------------------------------


async def _make_scratch_quest(env: dict[str, str], timeout: float) -> str | None:
    """Create the scratch quest with ``ds quest new`` (a process of its own, so the
    scratch home's file store is chosen by its env, not this process's); None when done."""
    argv = [sys.executable, "-m", "ds_events", "quest", "new", "--title", "ds doctor scratch quest", "--id", SCRATCH_QUEST]
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"`ds quest new` did not finish within {timeout:g} s"
    return None if proc.returncode == 0 else err.decode("utf-8", "replace").strip()[-500:]


async def _probe(namespace: str, env: dict[str, str], scratch: Path, timeout: float) -> Check:
    import anyio
    import mcp
    from mcp.client.stdio import stdio_client

    argv = mcp_server_command(namespace)
    params = mcp.StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    errors = scratch / f"{namespace}.stderr"
    name = f"mcp.{namespace}"
    try:
        with open(errors, "w", encoding="utf-8") as errlog, anyio.fail_after(timeout):
            async with stdio_client(params, errlog=errlog) as (read, write), mcp.ClientSession(read, write) as session:
                await session.initialize()
                tools = sorted(t.name for t in (await session.list_tools()).tools)
    except TimeoutError:
        return Check(name=name, status="fail", detail=f"no tool list within {timeout:g} s{_said(errors)}", fix=_fix(namespace))
    except Exception as exc:  # whatever broke the server is this check's answer; the others go on
        cause = _leaf(exc)
        return Check(name=name, status="fail", detail=f"{type(cause).__name__}: {cause}{_said(errors)}", fix=_fix(namespace))
    if not tools:
        return Check(name=name, status="fail", detail=f"the server started but lists no tools{_said(errors)}", fix=_fix(namespace))
    return Check(name=name, status="ok", detail=f"{len(tools)} tool{'s' if len(tools) != 1 else ''}: {', '.join(tools)}")


def _leaf(exc: BaseException) -> BaseException:
    """The one error inside the client's task groups (anyio wraps it, group in group)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _said(errors: Path) -> str:
    try:
        text = errors.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return f"; its stderr: {text[-400:]}" if text else ""


def _fix(namespace: str) -> str:
    return (
        f"run `DS_QUEST_ID=QUEST python3 -m ds_events mcp --namespace {namespace}` in a terminal to see why it does not start "
        "(a broken install: python3 -m pip install -e .)"
    )
