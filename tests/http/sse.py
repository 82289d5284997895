"""A small Server-Sent Events reader for the tests (frames as dicts)."""

from __future__ import annotations

import asyncio
import json
from typing import Any


async def frames(resp: Any, timeout: float = 15.0) -> Any:
    """Yield ``{"id", "event", "data"}`` per SSE frame (comments and retry skipped)."""
    frame: dict[str, Any] = {}
    while True:
        line = await asyncio.wait_for(resp.content.readline(), timeout)
        if not line:
            return
        text = line.decode().rstrip("\n")
        if text == "":
            if "data" in frame:
                frame["data"] = json.loads(frame["data"])
                yield frame
            frame = {}
        elif text.startswith(":"):
            continue
        else:
            name, _, value = text.partition(": ")
            if name in ("id", "event", "data"):
                frame[name] = value


async def take(resp: Any, n: int, timeout: float = 15.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    async for f in frames(resp, timeout):
        out.append(f)
        if len(out) >= n:
            break
    return out
