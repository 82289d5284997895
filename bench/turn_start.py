"""Where a turn's start goes, and what a tool call costs, over stdio and the host-served
HTTP transport, in the same run.

A turn is run by the real scheduler (``QuestScheduler.run_until_idle``, as ``ds run``
hosts it) on a small quest, one user message per turn, with the scripted runner (and,
with ``--codex``, the real Codex CLI against ``fixtures/responses_server.py``). Each
turn is timed from ``runner.turn_started`` (the claim, with its prompt, is done) through:

- agent spawned: the agent's process exists (``runner.process_started``);
- agent up: its first stdout line (the scripted agent's ``turn.started``; Codex's
  ``thread.started``);
- first tool result: the agent reports the result of its first MCP call. Over stdio
  this includes the server's process start, its imports and its opening of the quest;
  over http, one request to this host, whose quest handles are already open.

The raw baseline, in the same round: the bare agent process started directly (no
scheduler, no MCP servers: the scripted agent with a one-message script; Codex with no
MCP servers configured, until its first model request), plus one tool call made
in-process (an ``mcp.Client`` on the namespace's server object, quest open). Target:
turn_started -> first tool result <= 1.5x that baseline.

Per-call overhead: a turn of ``--calls`` ``memory.list_recent`` calls after the first,
timed from the first call's result to the last one's (the agent's view, each call
recorded in the log), per call; vs the same calls made in-process in the same round.

Also printed, once: opening the quest (``Home.open_quest``, what each stdio server does
after its imports) and the prompt build (``turn_prompt``), as measured inside the
scheduled turns.

    PYTHONPATH=$PWD python3 bench/turn_start.py [--rounds 5] [--calls 20]
    PYTHONPATH=$PWD python3 bench/turn_start.py --codex $(fixtures/install_agent.sh codex --print)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp
import yaml
from _rounds import ratios, spread, verdict
from _start_env import child_env

from ds_events.config import RunnerConfig, parse_config
from ds_events.home import Home, Quest
from ds_events.runners.base import start_agent
from ds_events.runners.codex import CodexRunner
from ds_events.runners.scripted import ScriptedRunner
from ds_events.services import quest as quest_service
from ds_events.services.runtime.scheduler import QuestScheduler
from ds_events.services.runtime.turns import TurnRecorder, TurnSpec, turn_prompt
from handlers.mcp import QuestBinding, build_server
from handlers.mcp.host import McpHost

TARGET = 1.5
REPO = Path(__file__).resolve().parent.parent


class Marks:
    """Monotonic marks of one turn."""

    def __init__(self) -> None:
        self.t: dict[str, float] = {}
        self.results: list[float] = []

    def mark(self, name: str) -> None:
        self.t.setdefault(name, time.monotonic())


def timed_runner(base: type[Any]) -> type[Any]:
    class Timed(base):  # type: ignore[misc, valid-type]
        marks = Marks()

        async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> Any:
            m = Timed.marks
            started, result = recorder.process_started, recorder.tool_result

            def process_started(pid: int, command: list[str]) -> None:
                m.mark("spawned")
                started(pid, command)

            def tool_result(*args: Any, **kw: Any) -> None:
                m.results.append(time.monotonic())
                m.mark("first_result")
                result(*args, **kw)

            recorder.process_started = process_started  # type: ignore[method-assign]
            recorder.tool_result = tool_result  # type: ignore[method-assign]
            return await super().run(spec, recorder)

        def handle(self, item: dict[str, Any], recorder: TurnRecorder) -> None:
            Timed.marks.mark("agent_up")
            super().handle(item, recorder)

    return Timed


prompt_seconds: list[float] = []


def timed_prompt(quest: Quest, request: Any) -> str:
    t = time.perf_counter()
    try:
        return turn_prompt(quest, request)
    finally:
        prompt_seconds.append(time.perf_counter() - t)


async def scheduled_turn(quest: Quest, runner_cls: type[Any], config: RunnerConfig, **kw: Any) -> Marks:
    runner_cls.marks = marks = Marks()
    quest_service.post_message(quest, quest_service.PostMessage(text="go"))
    scheduler = QuestScheduler(
        quest, make_runner=lambda _n: runner_cls(config, **kw), runner=runner_cls.name, model=None, config=config,
        build_prompt=timed_prompt,
    )  # fmt: skip
    scheduler.on_started = lambda _spec: marks.mark("turn_started")
    finished = await scheduler.run_until_idle(max_turns=1)
    if [f.outcome for f in finished] != ["completed"]:
        raise SystemExit(f"a {runner_cls.name} turn did not complete: {finished}")
    return marks


async def bare_scripted_agent(trajectory: Path, env: dict[str, str]) -> float:
    """The scripted agent started directly with a one-message script, until it exits."""
    t = time.monotonic()
    proc = await start_agent(
        [sys.executable, "-m", "ds_events.runners.scripted_agent", "--trajectory", str(trajectory)], cwd=str(REPO), env=env
    )
    await proc.communicate(b"")
    return time.monotonic() - t


async def in_process_calls(home: Home, quest_id: str, n: int) -> tuple[float, float]:
    """(one call, per call over ``n`` more) of memory.list_recent through an in-process client."""
    async with mcp.Client(build_server("memory", QuestBinding(home=home.root, quest_id=quest_id))) as client:
        await client.call_tool("list_recent", {})  # the quest opened, warm
        t = time.monotonic()
        await client.call_tool("list_recent", {})
        one = time.monotonic() - t
        t = time.monotonic()
        for _ in range(n):
            await client.call_tool("list_recent", {})
        return one, (time.monotonic() - t) / max(n, 1)


def ms(values: list[float]) -> str:
    return spread([v * 1000 for v in values], fmt="{:.0f}", unit=" ms")


async def scripted_rounds(tmp: Path, rounds: int, calls: int) -> None:
    os.environ["DS_HOME"] = str(tmp / "home")
    home = Home(tmp / "home")
    home.init()
    one_call = [{"call": "memory.list_recent", "args": {}}, {"say": "done"}]
    many = [{"call": "memory.list_recent", "args": {}} for _ in range(calls + 1)] + [{"say": "done"}]
    traj = tmp / "turns.yaml"
    traj.write_text(yaml.safe_dump({"turns": [{"steps": one_call if i % 2 == 0 else many} for i in range(4 * rounds + 4)]}))
    bare = tmp / "bare.yaml"
    bare.write_text(yaml.safe_dump({"turns": [{"steps": [{"say": "done"}]}]}))
    env = child_env(tmp)
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the agents and stdio servers run this checkout
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = env["PYTHONPYCACHEPREFIX"]
    quests = {t: home.create_quest(f"bench {t}", quest_id=f"q-{t}") for t in ("stdio", "http")}
    runner = timed_runner(ScriptedRunner)
    figures: dict[str, list[float]] = {k: [] for k in (
        "stdio_first", "http_first", "stdio_spawn", "http_spawn", "stdio_up", "http_up", "bare", "inproc_one",
        "stdio_per_call", "http_per_call", "inproc_per_call", "open",
    )}  # fmt: skip

    async def turn(transport: str) -> Marks:
        config = RunnerConfig(name="scripted", mcp_transport=transport, trajectory=str(traj))  # type: ignore[arg-type]
        return await scheduled_turn(quests[transport], runner, config)

    # A warm-up round (bytecode cache filled, the host listening), not counted.
    for transport in ("stdio", "http"):
        await turn(transport)
        await turn(transport)
    for r in range(rounds):
        order = ("stdio", "http") if r % 2 == 0 else ("http", "stdio")
        for transport in order:  # the one-call turn, then the many-call turn
            m = await turn(transport)
            figures[f"{transport}_first"].append(m.t["first_result"] - m.t["turn_started"])
            figures[f"{transport}_spawn"].append(m.t["spawned"] - m.t["turn_started"])
            figures[f"{transport}_up"].append(m.t["agent_up"] - m.t["turn_started"])
            m = await turn(transport)
            figures[f"{transport}_per_call"].append((m.results[-1] - m.results[0]) / calls)
        figures["bare"].append(await bare_scripted_agent(bare, env))
        one, per_call = await in_process_calls(home, quests["stdio"].id, calls)
        figures["inproc_one"].append(one)
        figures["inproc_per_call"].append(per_call)
        t = time.perf_counter()
        home.open_quest(quests["stdio"].id, actor="mcp:memory").close()
        figures["open"].append(time.perf_counter() - t)
    await McpHost.close_running()
    for q in quests.values():
        q.close()

    baseline = [b + c for b, c in zip(figures["bare"], figures["inproc_one"], strict=True)]
    print(f"scripted runner, {rounds} rounds (medians, spread over rounds):")
    print(f"  opening the quest (Home.open_quest, in-process): {ms(figures['open'])}")
    print(f"  prompt build (turn_prompt, in the scheduled turns): {ms(prompt_seconds)}")
    for transport in ("stdio", "http"):
        print(f"  {transport}: turn_started -> agent spawned {ms(figures[f'{transport}_spawn'])}; "
              f"-> agent up {ms(figures[f'{transport}_up'])}; -> first tool result {ms(figures[f'{transport}_first'])}")  # fmt: skip
    print(f"  baseline: bare agent process {ms(figures['bare'])} + one in-process call {ms(figures['inproc_one'])}")
    for transport in ("stdio", "http"):
        rs = ratios(figures[f"{transport}_first"], baseline)
        print(f"  turn start {transport} / baseline: {spread(rs)}x; {verdict(rs, TARGET, higher_is_better=False)}")
    rs = ratios(figures["stdio_first"], figures["http_first"])
    print(f"  turn start stdio / http: {spread(rs)}x")
    print(f"  per call ({calls} memory.list_recent after the first): stdio {ms(figures['stdio_per_call'])}, "
          f"http {ms(figures['http_per_call'])}, in-process {ms(figures['inproc_per_call'])}")  # fmt: skip
    for transport in ("stdio", "http"):
        rs = ratios(figures[f"{transport}_per_call"], figures["inproc_per_call"])
        print(f"  per call {transport} / in-process: {spread(rs)}x")


# -- the real Codex CLI ---------------------------------------------------------------------


def _responses() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("ds_bench_responses", REPO / "fixtures" / "responses_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def codex_rounds(tmp: Path, rounds: int, codex: str) -> None:
    responses = _responses()
    home = Home(tmp / "codex-home")
    home.init()
    os.environ["DS_HOME"] = str(home.root)
    call = {"items": [{"call": "mcp__memory__list_recent", "call_id": "call_1", "arguments": {}}]}
    done = {"items": [{"say": "done"}]}
    quests = {t: home.create_quest(f"codex {t}", quest_id=f"c-{t}") for t in ("stdio", "http")}
    runner = timed_runner(CodexRunner)
    figures: dict[str, list[float]] = {k: [] for k in ("stdio", "http", "stdio_up", "http_up", "bare", "inproc_one")}

    async def turn(transport: str) -> Marks:
        async with responses.ResponsesServer([call, done]) as server:
            text = yaml.safe_dump({"runner": {
                "name": "codex", "model": "ds-scripted-model", "commands": {"codex": [codex]}, "max_attempts": 1,
                "codex_provider": {"name": "scripted", "base_url": server.base_url, "request_max_retries": 0,
                                   "stream_max_retries": 0},
                "mcp_transport": transport,
            }})  # fmt: skip
            config = parse_config(text, tmp / "config.yaml").runner
            return await scheduled_turn(quests[transport], runner, config)

    async def bare() -> float:
        """Codex with no MCP servers, until the model endpoint gets its first request."""
        async with responses.ResponsesServer([done]) as server:
            codex_home = tmp / "bare-codex-home"
            codex_home.mkdir(exist_ok=True)
            (codex_home / "config.toml").write_text(
                'model_provider = "scripted"\napproval_policy = "never"\ncheck_for_update_on_startup = false\n'
                f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{server.base_url}"\nwire_api = "responses"\n'
                "request_max_retries = 0\nstream_max_retries = 0\n"
            )
            env = {**os.environ, "CODEX_HOME": str(codex_home)}
            t = time.monotonic()
            proc = await start_agent([codex, "exec", "--json", "--skip-git-repo-check", "--model", "ds-scripted-model", "-"],
                                     cwd=str(quests["stdio"].root), env=env)  # fmt: skip
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")  # an empty prompt is refused: codex exits before any request
            proc.stdin.close()
            while not server.requests:
                if proc.returncode is not None:
                    raise SystemExit(f"the bare codex exited ({proc.returncode}) before its first model request")
                await asyncio.sleep(0.002)
            first = time.monotonic() - t
            await proc.wait()
            return first

    for transport in ("stdio", "http"):  # warm-up, not counted
        await turn(transport)
    for r in range(rounds):
        for transport in ("stdio", "http") if r % 2 == 0 else ("http", "stdio"):
            m = await turn(transport)
            figures[transport].append(m.t["first_result"] - m.t["turn_started"])
            figures[f"{transport}_up"].append(m.t["agent_up"] - m.t["turn_started"])
        figures["bare"].append(await bare())
        figures["inproc_one"].append((await in_process_calls(home, quests["stdio"].id, 0))[0])
    await McpHost.close_running()
    baseline = [b + c for b, c in zip(figures["bare"], figures["inproc_one"], strict=True)]
    print(f"codex runner (real Codex CLI, scripted model), {rounds} rounds:")
    for transport in ("stdio", "http"):
        print(f"  {transport}: turn_started -> codex up {ms(figures[f'{transport}_up'])}; -> first tool result {ms(figures[transport])}")
    print(f"  baseline: bare codex to its first model request {ms(figures['bare'])} + one in-process call {ms(figures['inproc_one'])}")
    for transport in ("stdio", "http"):
        rs = ratios(figures[transport], baseline)
        print(f"  turn start {transport} / baseline: {spread(rs)}x; {verdict(rs, TARGET, higher_is_better=False)}")
    print(f"  turn start stdio / http: {spread(ratios(figures['stdio'], figures['http']))}x")
    for q in quests.values():
        q.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--codex", default="", help="the Codex CLI to measure too (fixtures/install_agent.sh codex --print)")
    parser.add_argument("--no-scripted", action="store_true", help="only the Codex rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ds-turn-start-") as tmp:
        if not args.no_scripted:
            asyncio.run(scripted_rounds(Path(tmp), args.rounds, args.calls))
        if args.codex:
            asyncio.run(codex_rounds(Path(tmp), args.rounds, args.codex))


if __name__ == "__main__":
    main()
