"""Start-up of our three MCP servers against a minimal MCP server, in the same run.

What a runner pays before the model can call a tool: spawn ``python -m ds_events mcp
--namespace N`` over stdio, send ``initialize``, wait for the answer, send
``notifications/initialized`` and ``tools/list``, wait for the list. The raw baseline
is a server with one tool written here, on the same ``mcp`` SDK and the same Python,
measured the same way; so the ratio is what our code adds on top of the SDK itself.

Each round starts every server once, one after the other, in an order that rotates
from round to round (drift on a shared machine hits every side alike); then, as Codex
does at the start of a turn, our three at once against three minimal servers at once.
Every figure is the median of ``--rounds`` rounds (default 10) with its spread; ratios
are per round. Beside the wall time it prints the CPU time each server used over its
whole life (start, list, exit; from ``wait4``), which a loaded machine disturbs much
less. Our modules load from a bytecode cache, as an installed package's do (see
``_start_env.py``; ``--no-bytecode-cache`` compiles them at every start instead). Run
from the repository root:

    python3 bench/mcp_start.py [--rounds N] [--no-bytecode-cache]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _rounds import ratios, spread, verdict
from _start_env import child_env

NAMESPACES = ("memory", "artifact", "bash_exec")
TARGET = 1.25

MINIMAL_SERVER = textwrap.dedent(
    '''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="minimal")


    @server.tool()
    def echo(text: str) -> str:
        """Return text unchanged."""
        return text


    server.run("stdio")
    '''
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-bytecode-cache", action="store_true", help="Compile our modules at every start.")
    args = parser.parse_args()
    rounds = args.rounds
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        env = _env(Path(tmp), bytecode_cache=not args.no_bytecode_cache)
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        commands = {"minimal": [sys.executable, str(minimal)]}
        for ns in NAMESPACES:
            commands[ns] = [sys.executable, "-m", "ds_events", "mcp", "--namespace", ns]
        for argv in commands.values():  # warm the page cache and check each one answers
            _ready(argv, env)
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        together: dict[str, list[float]] = {"minimal x3": [], "ours x3": []}
        names = list(commands)
        for r in range(rounds):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                wall, used = _ready(commands[name], env)
                seconds[name].append(wall)
                cpu[name].append(used)
            together["minimal x3"].append(_ready_together([commands["minimal"]] * 3, env)[0])
            together["ours x3"].append(_ready_together([commands[ns] for ns in NAMESPACES], env)[0])
    cache = "compiled at every start" if args.no_bytecode_cache else "loaded from a bytecode cache"
    print(f"start to tools/list answered, {rounds} rounds (median, spread min-max); our modules {cache}")
    _table(seconds, "wall")
    print("CPU time of each server's whole run (start, list, exit):")
    _table(cpu, "CPU ")
    print("three at once (as a runner starts them for a turn):")
    for name, values in together.items():
        print(f"  {name:36s} {spread([v * 1e3 for v in values], '{:.0f}', ' ms')}")
    per_round = ratios(together["ours x3"], together["minimal x3"])
    print(f"  ratio ours x3 / minimal x3: {spread(per_round, unit='x')}  ({verdict(per_round, TARGET, higher_is_better=False)})")


def _table(values_by_name: dict[str, list[float]], what: str) -> None:
    for name, values in values_by_name.items():
        label = "minimal MCP server (raw baseline)" if name == "minimal" else f"ds mcp --namespace {name}"
        print(f"  {label:36s} {spread([v * 1e3 for v in values], '{:.0f}', ' ms')}")
    for ns in NAMESPACES:
        per_round = ratios(values_by_name[ns], values_by_name["minimal"])
        print(f"  {what} ratio {ns:10s} / minimal: {spread(per_round, unit='x')}"
              f"  ({verdict(per_round, TARGET, higher_is_better=False)})")


def _env(tmp: Path, *, bytecode_cache: bool) -> dict[str, str]:
    """A home with one quest; the servers run this checkout's code."""
    env = child_env(tmp, bytecode_cache=bytecode_cache)
    env.update(DS_HOME=str(tmp / "home"), DS_QUEST_ID="bench")
    created = subprocess.run(
        [sys.executable, "-m", "ds_events", "quest", "new", "--title", "bench", "--id", "bench"],
        env=env, capture_output=True, text=True,
    )
    if created.returncode != 0:
        raise SystemExit(f"could not create the bench quest: {created.stderr}")
    return env


def _ready(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning ``argv`` to its answer to ``tools/list``, and the CPU
    seconds the server used in all."""
    return _ready_together([argv], env)


def _ready_together(argvs: list[list[str]], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning every server of ``argvs`` at once until the last one has
    answered ``tools/list``, and the CPU seconds they used in all (until they exited)."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        for argv in argvs
    ]
    try:
        for proc in procs:  # every request is queued at once; each server reads it when ready
            _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}})
        for proc in procs:
            _answer(proc, 1)
            _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        for proc in procs:
            tools = _answer(proc, 2)["result"]["tools"]
            if not tools:
                raise SystemExit(f"{proc.args} listed no tools")
        wall = time.perf_counter() - start
    except BaseException:
        for proc in procs:
            proc.kill()
        raise
    finally:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.close()  # end of input: the server stops
    used = 0.0
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)  # reaps it; its CPU time comes with it
        proc.returncode = os.waitstatus_to_exitcode(status)
        used += usage.ru_utime + usage.ru_stime
    return wall, used


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    """The response to ``request_id`` (notifications and log lines before it are skipped)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"{proc.args} ended before answering request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise SystemExit(f"{proc.args} answered request {request_id} with {message['error']}")
            return message


if __name__ == "__main__":
    main()
