"""The scheduler: runs a quest's turns, one at a time, from its projections.

One :class:`QuestScheduler` per quest, in the process that hosts turns (``ds run`` in
the foreground, ``ds serve`` for every active quest). Each step reads what the quest
needs (:func:`ds_events.services.runtime.turns.next_action`) and acts:

- queued messages, a due retry, or a turn cut off: claim a turn (under the log's lock,
  so a second host cannot start another), start the runner, and watch it: a pause or a
  stop (``quest.control``, from any process) interrupts it, and a runner that prints
  nothing for ``stall_seconds`` is ended as ``stalled``; then record the outcome once.
- a turn runs in another live host: wait for it; a turn whose host died: record it
  interrupted (:func:`ds_events.services.runtime.turns.recover_turns`).
- nothing to do: return (``run_until_idle``) or wait for the log to move (``serve``).

Runners are adapters (``ds_events/runners``): anything with the :class:`Runner` shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from ds_events.config import RunnerConfig
from ds_events.crashpoints import crashpoint
from ds_events.events.runner import TurnFinished, TurnOutcome
from ds_events.home import Quest
from ds_events.services.artifacts import undo_unrecorded_checkpoints
from ds_events.services.bash import reconcile as reconcile_sessions
from ds_events.services.runtime import turns as turns
from ds_events.services.runtime.commands import Action, PromptBuilder, RunResult, TurnSpec
from ds_events.services.runtime.turns import Host, TurnRecorder
from projections import turns as view

__all__ = ["Runner", "QuestScheduler"]

POLL_SECONDS = 0.1  # how often a running turn's pause/stop/stall is checked
REAP_WAIT_SECONDS = 30.0  # how long a host going away waits for its runner to reap the agent
# How often an idle quest's log is checked for another process's append (a message from
# `ds message` or the HTTP API's own handle): the latency a new turn can wait for.
NEWS_POLL_SECONDS = 0.02


class Runner(Protocol):
    """Drives one agent for one turn. ``run`` starts the agent (in its own process
    group, reported through ``recorder.process_started``), feeds it the prompt, turns
    its stream into ``recorder`` calls, and returns when the agent has exited.
    ``interrupt`` asks the agent to stop gracefully (an ACP ``session/cancel``); the
    scheduler then signals its process group."""

    name: str

    async def run(self, spec: TurnSpec, recorder: TurnRecorder) -> RunResult: ...

    async def interrupt(self) -> None: ...


class QuestScheduler:
    def __init__(
        self,
        quest: Quest,
        *,
        make_runner: Callable[[str], Runner],
        runner: str | None,
        model: str | None,
        config: RunnerConfig,
        build_prompt: PromptBuilder,
        host: Host | None = None,
    ) -> None:
        self.quest = quest
        self.make_runner = make_runner
        # Given here, they win; else each turn takes the quest's own setting
        # (``quest.runner_set``), else the home's ``runner`` config.
        self.runner_name = runner
        self.model = model
        self.config = config
        self.build_prompt = build_prompt
        self.host = host or Host.this_process()
        self.finished: list[TurnFinished] = []
        self.on_started: Callable[[TurnSpec], Any] | None = None  # hook: a turn's runner starts
        self.in_turn = False  # claiming or running a turn (the Fleet does not cancel it then)

    # -- loops ------------------------------------------------------------------------

    async def run_until_idle(self, *, max_turns: int | None = None) -> list[TurnFinished]:
        """Run turns until the quest needs none (or ``max_turns`` ran); returns the
        turns' end records."""
        await asyncio.to_thread(turns.recover_turns, self.quest, grace_seconds=self.config.kill_grace_seconds)
        await asyncio.to_thread(_heal, self.quest)
        ran = 0
        while max_turns is None or ran < max_turns:
            action = self._action()
            if action.kind == "idle":
                break
            if action.kind == "busy":
                await self._wait_for_other_host()
                continue
            if action.kind == "retry" and action.due > time.time():
                await self._sleep_until(action.due)
                continue
            if await self._take_turn(action):
                ran += 1
        return self.finished

    async def serve(self) -> None:
        """Run turns whenever the quest needs one, forever (cancel to stop)."""
        await asyncio.to_thread(turns.recover_turns, self.quest, grace_seconds=self.config.kill_grace_seconds)
        await asyncio.to_thread(_heal, self.quest)
        while True:
            action = self._action()
            if action.kind == "idle":
                await self._wait_for_news(None)
            elif action.kind == "busy":
                await self._wait_for_other_host()
            elif action.kind == "retry" and action.due > time.time():
                await self._sleep_until(action.due)
            else:
                await self._take_turn(action)

    # -- one turn ---------------------------------------------------------------------

    async def _take_turn(self, action: Action) -> bool:
        self.in_turn = True
        try:
            return await self._claim_and_run(action)
        finally:
            self.in_turn = False

    async def _claim_and_run(self, action: Action) -> bool:
        status = self.quest.state("status")
        runner = self.runner_name or status.runner or self.config.name
        model = self.model if self.model is not None else (status.model or self.config.model)
        spec = await asyncio.to_thread(
            turns.claim_turn, self.quest, runner=runner, model=model, host=self.host,
            build_prompt=self.build_prompt, action=action,
        )  # fmt: skip
        if spec is None:
            return False
        await self._run_turn(spec)
        return True

    async def _run_turn(self, spec: TurnSpec) -> None:
        runner = self.make_runner(spec.runner)
        recorder = TurnRecorder(self.quest, spec.run_id, runner=spec.runner)
        started = time.monotonic()
        if self.on_started is not None:
            self.on_started(spec)
        task = asyncio.create_task(runner.run(spec, recorder))
        stopped: str | None = None  # "pause" | "stop" | "stalled"
        signalled = False  # the stop reached the agent's process group
        result: RunResult | None = None
        error = ""
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=POLL_SECONDS)
                if task.done():
                    continue
                if stopped is None:
                    requested = self.quest.state("turns").stop_requested
                    silent = time.monotonic() - recorder.last_activity
                    if requested is not None or silent > self.config.stall_seconds:
                        stopped = requested or "stalled"
                        crashpoint("host.stop.before_interrupt")
                        signalled = await self._interrupt(runner)
                elif not signalled and _has_agent(self.quest):
                    # The stop came while the runner was still starting its agent (the
                    # host's MCP listener, a slow exec): the agent runs now, so end it.
                    signalled = await self._interrupt(runner)
            result = task.result()
        except asyncio.CancelledError:
            # The host is shutting down: end the agent, leave the turn for recovery
            # to record (this host is alive until it exits, then it is not).
            task.cancel()
            await self._interrupt(runner)
            # The runner reaps its agent as it unwinds: let it finish that (bounded) before
            # this host's loop can close under it and leave the process unreaped.
            await asyncio.wait({task}, timeout=REAP_WAIT_SECONDS)
            raise
        except Exception as exc:  # a runner bug or an agent that could not start
            error = f"{type(exc).__name__}: {exc}"
        if stopped is None and not (result is not None and result.ok):
            # A pause or stop whose signal ended the agent before the loop above looked
            # (``ds control`` in another process, a control in a worker thread) is still
            # why the turn ended; an agent that finished its work completed it.
            stopped = self.quest.state("turns").stop_requested
        outcome, reason = _outcome(stopped, result, error, self.config.stall_seconds)
        crashpoint("host.scheduler.before_finish")
        finished = await asyncio.to_thread(
            turns.finish_turn, self.quest, spec.run_id, outcome=outcome, reason=reason,
            exit_code=result.exit_code if result else None, usage=recorder.usage,
            duration_ms=(time.monotonic() - started) * 1000, messages=recorder.messages,
            tool_calls=recorder.tool_calls, max_attempts=self.config.max_attempts,
            backoff_seconds=self.config.backoff_seconds, backoff_max_seconds=self.config.backoff_max_seconds,
            actor="scheduler",
        )  # fmt: skip
        crashpoint("host.scheduler.after_finish")
        if finished is not None:
            self.finished.append(finished)

    async def _interrupt(self, runner: Runner) -> bool:
        """Ask the runner to stop, then signal the agent's process group; False when no
        agent process runs yet (the caller signals again once one does)."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(runner.interrupt(), timeout=max(self.config.kill_grace_seconds, 0.1))
        stopped = await asyncio.to_thread(turns.stop_runner, self.quest, grace_seconds=self.config.kill_grace_seconds)
        return stopped is not None

    # -- waiting ----------------------------------------------------------------------

    def _action(self) -> Action:
        q = self.quest
        status = q.state("status")
        return turns.next_action(status.status, q.state("turns"), q.state("interactions"), archived=status.archived)

    async def _wait_for_other_host(self) -> None:
        """A turn runs elsewhere: wait for news; if its host died, record it."""
        await self._wait_for_news(1.0)
        await asyncio.to_thread(turns.recover_turns, self.quest, grace_seconds=self.config.kill_grace_seconds)

    async def _sleep_until(self, due: float) -> None:
        """Wait for a retry's time, waking early on news (a pause cancels the retry)."""
        await self._wait_for_news(max(0.0, due - time.time()))

    async def _wait_for_news(self, timeout: float | None) -> None:
        """Return when the log moves past what the views have seen, or after ``timeout``."""
        follower = self.quest.log.follow(self.quest.views.last_seq, poll_interval=NEWS_POLL_SECONDS)
        try:
            await asyncio.wait_for(anext(follower), timeout)
        except TimeoutError:
            pass
        finally:
            await follower.aclose()  # now, not at collection


def _has_agent(quest: Quest) -> bool:
    """The running turn's agent process is recorded (``runner.process_started``)."""
    record = view.running_turn(quest.state("turns"))
    return record is not None and record.pgid is not None


def _heal(quest: Quest) -> None:
    """What a killed process could not finish, on a host's start: shell sessions left
    recorded running with their monitor gone (``bash.session_lost``), and a checkpoint
    commit made but never recorded (undone, as its rollback would have)."""
    reconcile_sessions(quest)
    undo_unrecorded_checkpoints(quest)


def _outcome(stopped: str | None, result: RunResult | None, error: str, stall_seconds: float) -> tuple[TurnOutcome, str]:
    if stopped == "pause":
        return "interrupted", "paused"
    if stopped == "stop":
        return "cancelled", "stopped"
    if stopped == "stalled":
        return "stalled", f"no output for {stall_seconds:g} s"
    if result is None:
        return "failed", error or "the runner ended without a result"
    if result.ok:
        return "completed", ""
    code = f"exit {result.exit_code}" if result.exit_code is not None else "failed"
    return "failed", f"{code}: {result.error}" if result.error else code
