"""The scripted agent process: ``python -m ds_events.runners.scripted_agent``.

Reads the prompt on stdin (and ignores it, as a script does), plays turn ``--turn`` of
the trajectory through our real MCP servers (the host's URLs in ``--mcp-config``, or
``ds mcp --namespace ...`` over stdio, started on first use), and prints one JSON line
per thing it does — the stream the scripted runner parses, shaped like a real agent
CLI's ``--json`` output. Exits 1 on a ``fail`` step or a call whose outcome is not the
one expected.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import sys
from typing import Any

import mcp
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ds_events.runners.base import mcp_server_command
from ds_events.runners.scripted import Step, load_trajectory

_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


def emit(**item: Any) -> None:
    sys.stdout.write(json.dumps(item, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def resolve(value: Any, saved: dict[str, Any]) -> Any:
    """Fill ``{{name.path}}`` in strings from saved results (a whole-string template
    keeps the value's type)."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return lookup(whole.group(1), saved)
        return _TEMPLATE.sub(lambda m: str(lookup(m.group(1), saved)), value)
    if isinstance(value, list):
        return [resolve(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, saved) for k, v in value.items()}
    return value


class TemplateError(Exception):
    """A ``{{name.path}}`` that names nothing saved."""


def lookup(path: str, saved: dict[str, Any]) -> Any:
    head, *rest = path.split(".")
    if head == "env":
        return os.environ.get(".".join(rest), "")
    try:
        value: Any = saved[head]
        for part in rest:
            value = value[int(part)] if isinstance(value, list) else value[part]
    except (KeyError, IndexError, ValueError, TypeError):
        raise TemplateError(f"{{{{{path}}}}} names nothing in the saved results ({', '.join(saved) or 'none saved'})") from None
    return value


class Servers:
    """One MCP client per namespace, connected on first use: to a stdio server started
    here, or to the URL ``--mcp-config`` names (``{"mcpServers": {ns: {"type": "http",
    "url": ..., "headers": {...}}}}``, what the host serves the turn under)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self.stack = contextlib.AsyncExitStack()
        self.clients: dict[str, mcp.Client] = {}
        self.config = (config or {}).get("mcpServers", {})

    async def get(self, namespace: str) -> mcp.Client:
        if namespace not in self.clients:
            served = self.config.get(namespace)
            client: mcp.Client
            if served is not None and served.get("type") == "http":
                http = await self.stack.enter_async_context(create_mcp_http_client(headers=served.get("headers") or {}))
                client = mcp.Client(streamable_http_client(served["url"], http_client=http))
            else:
                argv = mcp_server_command(namespace)
                client = mcp.Client(mcp.StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ)))
            self.clients[namespace] = await self.stack.enter_async_context(client)
        return self.clients[namespace]


async def play(
    steps: list[Step], attempt: int, *, resume_after: int = 0, saved: dict[str, Any] | None = None,
    mcp_config: dict[str, Any] | None = None,
) -> int:
    saved = dict(saved or {})
    servers = Servers(mcp_config)
    output_chars = 0
    if resume_after:
        emit(type="reasoning", text=f"Resuming after step {resume_after}: an earlier attempt completed steps 1-{resume_after}.")
    async with servers.stack:
        for n, step in enumerate(steps, 1):
            if n <= resume_after:
                continue
            if step.say is not None:
                text = resolve(step.say, saved)
                emit(type="message", text=text, id=f"step-{n}")
                output_chars += len(text)
            elif step.think is not None:
                emit(type="reasoning", text=step.think)
            elif step.sleep is not None:
                await asyncio.sleep(step.sleep)
            elif step.fail is not None:
                if attempt <= step.attempts:
                    emit(type="error", message=step.fail)
                    return 1
            elif step.call is not None:
                namespace, _, tool = step.call.partition(".")
                args = resolve(step.args, saved)
                call_id = f"call-{n}"
                emit(type="tool_call", id=call_id, server=namespace, tool=step.call, arguments=args)
                result = await (await servers.get(namespace)).call_tool(tool, args)
                ok = not result.is_error
                output = result.structured_content if ok else _error_payload(result)
                emit(type="tool_result", id=call_id, ok=ok, output=output)
                if step.save:
                    saved[step.save] = output
                if step.expect != "any" and ok != (step.expect == "ok"):
                    emit(type="error", message=f"step {n}: {step.call} was expected to end {step.expect}: {output}")
                    return 1
    emit(type="usage", output_tokens=output_chars // 4 + 1)
    return 0


def resume_point(steps: list[Step], retry_of: str) -> tuple[int, dict[str, Any]]:
    """The last step the earlier attempts of this turn completed (0: none), as the quest's
    log shows them, and the results those steps saved."""
    from ds_events.home import Home
    from ds_events.services.runtime.attempts import attempt_chain

    with Home(os.environ["DS_HOME"]).open_quest(os.environ["DS_QUEST_ID"], read_only=True) as quest:
        chain = attempt_chain(quest, retry_of)
    calls = {c.call_id: c for a in chain for c in a.calls}
    said = {m for a in chain for m in a.messages}
    last, saved = 0, {}
    for n, step in enumerate(steps, 1):
        call = calls.get(f"call-{n}")
        if step.call is not None and call is not None and call.status != "unfinished":
            if step.expect == "any" or (call.status == "ok") == (step.expect == "ok"):
                last = n
                if step.save:
                    saved[step.save] = call.output
        elif step.say is not None and f"step-{n}" in said:
            last = n
    return last, saved


def _error_payload(result: Any) -> Any:
    text = "".join(getattr(c, "text", "") for c in result.content)
    with contextlib.suppress(ValueError):
        return json.loads(text[text.index("{") :])
    return {"message": text}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripted_agent")
    parser.add_argument("--trajectory", required=True)
    parser.add_argument("--turn", type=int, default=1)
    parser.add_argument("--attempt", type=int, default=1)
    parser.add_argument("--retry-of", default=None, help="The failed attempt this one retries: resume after its work.")
    parser.add_argument("--mcp-config", default=None, help="A JSON file naming the MCP servers to call (else stdio servers).")
    ns = parser.parse_args(argv)
    prompt = sys.stdin.read()
    emit(type="turn.started", prompt_chars=len(prompt))
    emit(type="usage", input_tokens=len(prompt) // 4 + 1)
    trajectory = load_trajectory(ns.trajectory)
    if ns.turn > len(trajectory.turns):
        emit(type="message", text="Nothing left in my script: I stop here.")
        return 0
    steps = trajectory.turns[ns.turn - 1].steps
    resume_after, saved = resume_point(steps, ns.retry_of) if ns.retry_of else (0, {})
    try:
        mcp_config = json.loads(open(ns.mcp_config, encoding="utf-8").read()) if ns.mcp_config else None
        return asyncio.run(play(steps, ns.attempt, resume_after=resume_after, saved=saved, mcp_config=mcp_config))
    except TemplateError as exc:
        emit(type="error", message=str(exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
