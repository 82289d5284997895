"""An agent process never outlives its turn unreaped, even when the host's event loop
shuts down in the middle of ending it (a second cancellation): otherwise the ``Popen``
never learns the exit and its garbage collection warns, in whatever code runs then, that
the process "is still running" (a CI run failed an unrelated test on exactly that)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ds_events.runners.base import kill_and_reap, start_agent

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("cancellations", [1, 2])
def test_a_cancelled_turn_reaps_its_agent_even_when_cancelled_again_while_it_does(tmp_path: Path, cancellations: int) -> None:
    seen: list[subprocess.Popen[bytes]] = []

    async def host() -> None:
        proc = await start_agent(SLEEPER, cwd=str(tmp_path), env=dict(os.environ))
        seen.append(proc._transport.get_extra_info("subprocess"))  # type: ignore[attr-defined]

        async def turn() -> None:  # what a runner does with its agent
            try:
                await proc.wait()
            except asyncio.CancelledError:
                await kill_and_reap(proc)
                raise

        task = asyncio.create_task(turn())
        await asyncio.sleep(0.2)
        for _ in range(cancellations):  # the second: asyncio.run cancelling what is left
            task.cancel()
            await asyncio.sleep(0)
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(host())  # the loop is closed: nothing of it can reap the agent any more
    (popen,) = seen
    assert popen.returncode is not None, "the agent's Popen never learnt that it ended"
    assert _gone(popen.pid)
