"""A turn cancelled while its agent runs (the host stopping, a pause) leaves nothing for
the garbage collector: the agent's process group is killed and reaped, and its pipes are
closed. Left open, their transports warn (ResourceWarning) whenever the collector gets to
them, in whatever code runs then — in this suite, a later test.

The turns run in a child interpreter so that what the collector finds is this test's own.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import asyncio, gc, sys, tempfile, warnings
    from pathlib import Path

    from ds_events.config import RunnerConfig
    from ds_events.home import Home
    from ds_events.runners.base import LineRunner
    from ds_events.services.runtime.commands import TurnSpec
    from ds_events.services.runtime.turns import TurnRecorder

    class Sleeper(LineRunner):
        name = "sleeper"

        def command(self, spec):
            return [sys.executable, "-c", "import time; print('{}', flush=True); time.sleep(600)"]

        def handle(self, item, recorder):
            pass

    async def one_turn(quest, n):
        run_id = f"run-{n:032d}"
        run_dir = quest.root / ".ds" / "runs" / run_id
        run_dir.mkdir(parents=True)
        spec = TurnSpec(quest_id=quest.id, quest_root=str(quest.root), home=str(quest.home.root), run_id=run_id,
                        run_dir=str(run_dir), prompt="p", prompt_path="", skill="scout", runner="sleeper")
        turn = asyncio.create_task(Sleeper(RunnerConfig()).run(spec, TurnRecorder(quest, run_id, runner="sleeper")))
        while not (run_dir / "stdout.jsonl").exists() or not (run_dir / "stdout.jsonl").read_text():
            await asyncio.sleep(0.02)  # the agent is up and its output is being read
        turn.cancel()
        try:
            await turn
        except asyncio.CancelledError:
            pass

    home = Home(tempfile.mkdtemp())
    with home.create_quest("Cancelled turns", quest_id="q1") as quest:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(3):
                asyncio.run(asyncio.wait_for(one_turn(quest, n), 120))
            gc.collect()
    print("warnings", sum(issubclass(w.category, ResourceWarning) for w in caught))
    """
)


def test_cancelled_turns_leave_no_open_transport_for_the_collector() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["warnings", "0"], done.stdout + done.stderr
