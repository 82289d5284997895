"""Scheduler overhead per turn: a message accepted -> the agent's process started.

The scheduler serves one quest (``QuestScheduler.serve``, as ``ds serve`` hosts it).
Each round a user message is appended by another process (``ds message``, the usual
way in) and timed from the moment that process's append returned (it prints the clock
it read then) to the moment the scripted runner's agent process exists. Between the two:
the scheduler notices the log moved, claims the turn under the log's lock (skill
selection, the prompt built from the projections and stored, ``runner.turn_started`` and
the mailbox delivery appended), and spawns the agent in its own process group.

The raw baseline, in the same run: spawning the same agent command directly
(``asyncio.create_subprocess_exec`` in a new session, the same pipes), timed from the
call to the process existing. Reported: medians over ``--turns`` turns, the overhead in
ms and the ratio scheduled/direct.

    PYTHONPATH=$PWD python3 bench/scheduler_turn.py
    PYTHONPATH=$PWD python3 bench/scheduler_turn.py --turns 10 --events 20000   # on a longer log
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import append_in_batches
from ds_events.events import ConversationMessage
from ds_events.home import Home
from ds_events.runners import scheduler_for
from ds_events.runners.base import start_agent
from ds_events.runners.scripted import ScriptedRunner
from ds_events.services.runtime.turns import TurnRecorder, TurnSpec

TRAJECTORY = "turns:\n" + "".join(f"  - steps: [{{say: 'turn {i}'}}]\n" for i in range(1, 200))


class TimedRunner(ScriptedRunner):
    """The scripted runner, noting when its agent process exists."""

    started: list[float] = []

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> Any:
        original = recorder.process_started

        def noted(pid: int, command: list[str]) -> None:
            TimedRunner.started.append(time.monotonic())
            original(pid, command)

        recorder.process_started = noted  # type: ignore[method-assign]
        return await super().run(spec, recorder)


async def direct(argv: list[str], cwd: str, turns: int) -> list[float]:
    times = []
    for _ in range(turns):
        t0 = time.monotonic()
        proc = await start_agent(argv, cwd=cwd, env={"PATH": "/usr/bin:/bin"})
        times.append(time.monotonic() - t0)
        proc.stdin.close()  # type: ignore[union-attr]
        await proc.communicate()
    return times


async def scheduled(home: Home, quest_id: str, trajectory: str, turns: int) -> list[float]:
    quest = home.open_quest(quest_id, actor="scheduler")
    scheduler = scheduler_for(quest, runner="scripted", trajectory=trajectory)
    config = scheduler.config
    scheduler.make_runner = lambda name: TimedRunner(config, trajectory=trajectory)  # type: ignore[method-assign]
    serving = asyncio.create_task(scheduler.serve())
    waits = []
    try:
        for n in range(turns):
            # Another process appends the message and prints the monotonic clock it read
            # right after its append returned (CLOCK_MONOTONIC is shared by processes).
            code = (
                "import sys, time\n"
                "from ds_events.home import Home\n"
                "from ds_events.services import quests\n"
                f"q = Home({str(home.root)!r}).open_quest({quest_id!r})\n"
                f"quests.post_message(q, quests.PostMessage(text='turn {n}'))\n"
                "print(time.monotonic())\n"
            )
            before = len(TimedRunner.started)
            out = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True, check=True)
            accepted = float(out.stdout.strip())
            while len(TimedRunner.started) == before:
                await asyncio.sleep(0.001)
            waits.append(TimedRunner.started[-1] - accepted)
            while quest.state("turns").running is not None or quest.state("turns").total < n + 1:
                await asyncio.sleep(0.01)
    finally:
        serving.cancel()
        try:
            await serving
        except asyncio.CancelledError:
            pass
        quest.close()
    return waits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--events", type=int, default=0, help="events in the log before the first turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        home.init()
        quest = home.create_quest("Scheduler bench", quest_id="sched")
        if args.events:
            append_in_batches(
                quest.log,
                (ConversationMessage(role="assistant", content=f"note {i}") for i in range(args.events)),
                batch=1000,
            )
        quest.close()
        trajectory = Path(tmp) / "t.yaml"
        trajectory.write_text(TRAJECTORY)
        runner = ScriptedRunner(home.config().runner, trajectory=str(trajectory))
        spec = TurnSpec(quest_id="sched", quest_root=tmp, home=tmp, run_id="run-0", run_dir=tmp, prompt="", prompt_path="",
                        skill="scout", runner="scripted")  # fmt: skip
        argv = runner.command(spec)
        raw = asyncio.run(direct(argv, tmp, args.turns))
        waits = asyncio.run(scheduled(home, "sched", str(trajectory), args.turns))
        raw_ms, sched_ms = statistics.median(raw) * 1000, statistics.median(waits) * 1000
        print(f"{args.turns} turns, log of {args.events} events before the first")
        print(f"raw: spawn the agent process directly        p50 {raw_ms:7.2f} ms")
        print(f"scheduled: message accepted -> agent started p50 {sched_ms:7.2f} ms "
              f"(min {min(waits) * 1000:.2f}, max {max(waits) * 1000:.2f})")  # fmt: skip
        print(f"overhead {sched_ms - raw_ms:.2f} ms per turn; ratio scheduled/raw: {sched_ms / raw_ms:.1f}x")


if __name__ == "__main__":
    main()
