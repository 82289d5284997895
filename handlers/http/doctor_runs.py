"""The daemon's ``ds doctor`` runs: one at a time, and a report younger than
:data:`FRESH_SECONDS` answered again.

A doctor run starts four processes (the scratch quest, three MCP servers) and asks every
provider endpoint: a page polling ``/api/doctor``, or many clients at once, share one run
instead of each forking its own."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ds_events.home import Home

if TYPE_CHECKING:
    from ds_events.doctor import Report

__all__ = ["DoctorRuns", "FRESH_SECONDS"]

FRESH_SECONDS = 10.0


class DoctorRuns:
    def __init__(self) -> None:
        self._lock: asyncio.Lock | None = None  # made in the app's loop, on first use
        self._last: tuple[float, Report] | None = None

    async def report(self, home: Home) -> Report:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # a request that waited here gets the run it waited for
            last = self._last
            if last is not None and time.monotonic() - last[0] < FRESH_SECONDS:
                return last[1]
            from ds_events.doctor import run_doctor  # the runners, mcp: loaded by the first request only

            report = await run_doctor(home)
            self._last = (time.monotonic(), report)
            return report
