"""The cost of logging every MCP tool call, against a raw baseline in the same run.

Each MCP call now appends one durable ``tool.call_finished`` record (issue 12). For
``--rounds`` rounds (default 10), each round measures the p50 over ``--calls`` calls
(default 30) of:

- **ours**: a read-only tool, ``memory.list_recent``, through an in-process MCP client
  (``mcp.Client(server)``, as the contract tests drive it): decoding, the handler in a
  worker thread, and (after this change) the record's durable append;
- **record alone**: what the record adds to a call: ``tool_calls.record_call`` with the
  same arguments and a result of the same shape, on another handle of the same quest
  (the durable append under the home's policy, ``group`` by default, then the views
  catching up and the materialiser looking for files to write);
- **raw**: the least a durable record costs: one JSON line of the record's size appended
  to a file with ``os.write`` + ``os.fdatasync``.

Report: medians over rounds with their spread, and the per-round ratios ours / raw and
record alone / raw.

Run: python3 bench/mcp_tool_call.py [--rounds 10] [--calls 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp

from ds_events.home import Home, Quest
from ds_events.services import tool_calls
from handlers.mcp import QuestBinding, build_server

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _rounds import ratios, spread

RECORD = b'{"type":"tool.call_finished","seq":12,"id":"' + b"0" * 32 + b'","ts":"2026-12-01T07:00:00.000000Z",' + b'"x":"' + b"y" * 300 + b'"}\n'


async def ours_p50(client: mcp.Client, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        result = await client.call_tool("list_recent", {})
        times.append(time.perf_counter() - t0)
        assert not result.is_error, result.content
    return statistics.median(times)


def record_p50(quest: Quest, result: dict[str, object], calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        tool_calls.record_call(quest, namespace="memory", tool="list_recent", arguments={}, result=result, duration_ms=1.0)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def raw_p50(path: Path, calls: int) -> float:
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        for _ in range(calls):
            t0 = time.perf_counter()
            os.write(fd, RECORD)
            os.fdatasync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.init()
        home.create_quest("Bench", quest_id="b1").close()
        server = build_server("memory", QuestBinding(home=home.root, quest_id="b1"))
        ours: list[float] = []
        record: list[float] = []
        raw: list[float] = []
        other = home.open_quest("b1", actor="bench")
        async with mcp.Client(server) as client:
            warm = await client.call_tool("list_recent", {})  # warm up: the quest opens
            result = warm.structured_content or {}
            for _ in range(args.rounds):
                ours.append(await ours_p50(client, args.calls))
                record.append(record_p50(other, result, args.calls))
                raw.append(raw_p50(Path(tmp) / "raw.jsonl", args.calls))
        other.close()
    ms = [x * 1000 for x in ours]
    print(f"memory.list_recent through MCP, p50 per round: median {spread(ms, '{:.2f}', ' ms')}")
    print(f"the tool-call record alone, p50 per round:     median {spread([x * 1000 for x in record], '{:.3f}', ' ms')}")
    print(f"raw durable line append, p50 per round:        median {spread([x * 1000 for x in raw], '{:.3f}', ' ms')}")
    print(f"ratio ours / raw:                               median {spread(ratios(ours, raw), '{:.1f}', 'x')}")
    print(f"ratio record alone / raw:                       median {spread(ratios(record, raw), '{:.1f}', 'x')}")
    print(f"record alone / the whole call:                  median {spread(ratios(record, ours), '{:.2f}', 'x')}")


if __name__ == "__main__":
    asyncio.run(main())
