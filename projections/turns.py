"""The `turns` view: which turn of the quest runs, what it did, and what comes next.

A fold over the ``runner.*`` events (and ``quest.control``): the running turn (at most
one), a bounded window of recent turns with their outcome, counts per outcome, whether a
pause or stop was asked while a turn ran, a scheduled retry or a failed turn held for the
user, the running turn's last activity in the log, and whether the last turn was cut off
(interrupted) so the next one continues it. Messages waiting for a turn are
the interactions view's mailbox (``pending_items``): this view does not copy them.

Materialises nothing: ``.ds/runs/<run_id>/`` holds the runner's own files.
"""

from __future__ import annotations

import msgspec
from msgspec.structs import replace

from ds_events.events import Event, QuestCompleted, QuestControl
from ds_events.events.runner import (
    AgentMessage,
    RunnerProcessStarted,
    RunnerToolCall,
    TurnFailure,
    TurnFinished,
    TurnHeld,
    TurnRetryScheduled,
    TurnStarted,
)

from .base import Projection

__all__ = ["State", "TurnRecord", "RetryPlan", "PROJECTION", "WINDOW", "running_turn", "recent_turns"]

WINDOW = 200  # finished turns kept in the view; the log keeps them all


class TurnRecord(msgspec.Struct, kw_only=True):
    run_id: str
    runner: str
    model: str = ""
    skill: str = ""
    skill_reason: str = ""
    attempt: int = 1
    retry_of: str | None = None
    number: int = 0  # the quest's Nth turn (a retry keeps the number of the turn it retries)
    message_ids: list[str] = []
    prompt_path: str = ""
    prompt_sha256: str = ""
    started_at: str = ""
    started_seq: int = 0
    host: str = ""
    host_pid: int = 0
    host_start: int | None = None
    host_boot: str = ""
    pid: int | None = None
    pgid: int | None = None
    proc_start: int | None = None
    proc_boot: str = ""
    outcome: str | None = None  # None while the turn runs
    reason: str = ""
    exit_code: int | None = None
    finished_at: str = ""
    duration_ms: float = 0.0
    usage: dict[str, int] = {}
    messages: int = 0
    tool_calls: int = 0
    failure: TurnFailure | None = None  # how the turn failed (from its retry or hold)
    finished_seq: int = 0
    max_attempts: int = 0  # a retry's budget, as its scheduling recorded it (0: unknown)


class RetryPlan(msgspec.Struct, kw_only=True):
    run_id: str  # the failed turn
    attempt: int  # the attempt the retry will be
    delay_s: float
    scheduled_at: str
    scheduled_seq: int
    reason: str = ""
    max_attempts: int = 0  # 0: not recorded (a log older than the field)
    failure: TurnFailure | None = None
    # The user resumed a held turn (``resume`` or a new message): a fresh attempt budget.
    by_user: bool = False


class State(msgspec.Struct, kw_only=True):
    running: str | None = None
    turns: dict[str, TurnRecord] = {}  # the running turn and the last WINDOW finished ones
    order: list[str] = []  # run ids in start order (same window)
    total: int = 0
    first_attempts: int = 0  # turns that are not retries
    outcomes: dict[str, int] = {}
    stop_requested: str | None = None  # "pause" | "stop" asked while a turn ran
    retry: RetryPlan | None = None
    # The last turn was cut off (paused, host died): the next turn continues it even
    # without a new message.
    needs_continuation: bool = False
    last_finished: str | None = None
    # A failed turn that is not retried by itself: it waits for the user.
    held: TurnHeld | None = None
    # The running turn's last event in the log (any event with its run id): what a
    # stall watch that reads only the log goes by.
    activity_seq: int = 0
    activity_at: str = ""
    control: QuestControl | None = None  # the last pause / stop / resume
    completed: QuestCompleted | None = None
    last_seq: int = 0


def initial() -> State:
    return State()


def apply(state: State, event: Event) -> State:
    state.last_seq = event.seq
    if event.run_id is not None and event.run_id == state.running:
        state.activity_seq, state.activity_at = event.seq, event.ts
    match event:
        case AgentMessage():
            _bump(state, event.run_id, "messages")
        case RunnerToolCall():
            _bump(state, event.run_id, "tool_calls")
        case TurnStarted():
            run_id = event.run_id or event.id
            retried = state.turns.get(event.retry_of) if event.retry_of else None
            plan = state.retry if state.retry is not None and state.retry.run_id == event.retry_of else None
            if retried is None:
                state.first_attempts += 1
            state.turns[run_id] = TurnRecord(
                number=retried.number if retried is not None else state.first_attempts,
                run_id=run_id, runner=event.runner, model=event.model, skill=event.skill,
                skill_reason=event.skill_reason, attempt=event.attempt, retry_of=event.retry_of,
                message_ids=list(event.message_ids), prompt_path=event.prompt_path,
                prompt_sha256=event.prompt_sha256, started_at=event.ts, started_seq=event.seq,
                host=event.host, host_pid=event.host_pid, host_start=event.host_start, host_boot=event.host_boot,
                max_attempts=plan.max_attempts if plan is not None else 0,
            )  # fmt: skip
            state.order.append(run_id)
            state.running = run_id
            state.activity_seq, state.activity_at = event.seq, event.ts
            state.total += 1
            state.retry = None
            state.held = None
            state.needs_continuation = False
            _trim(state)
        case RunnerProcessStarted():
            record = state.turns.get(event.run_id or "")
            if record is not None:
                state.turns[record.run_id] = replace(
                    record, pid=event.pid, pgid=event.pgid, proc_start=event.start_time, proc_boot=event.boot_id
                )
        case TurnFinished():
            record = state.turns.get(event.run_id or "")
            if record is not None and record.outcome is None:
                state.turns[record.run_id] = replace(
                    record, outcome=event.outcome, reason=event.reason, exit_code=event.exit_code,
                    finished_at=event.ts, finished_seq=event.seq, duration_ms=event.duration_ms,
                    usage=dict(event.usage),
                )  # fmt: skip
                state.outcomes[event.outcome] = state.outcomes.get(event.outcome, 0) + 1
                state.last_finished = record.run_id
                state.needs_continuation = event.outcome == "interrupted"
            if state.running == event.run_id:
                state.running = None
                state.stop_requested = None
            _trim(state)
        case TurnRetryScheduled():
            state.retry = RetryPlan(
                run_id=event.run_id or "", attempt=event.attempt, delay_s=event.delay_s,
                scheduled_at=event.ts, scheduled_seq=event.seq, reason=event.reason,
                max_attempts=event.max_attempts, failure=event.failure,
            )  # fmt: skip
            _set_failure(state, event.run_id, event.failure)
        case TurnHeld():
            state.held = event
            state.retry = None
            _set_failure(state, event.run_id, event.failure)
        case QuestControl(action=action):
            state.control = event
            if action in ("pause", "stop"):
                if state.running is not None:
                    state.stop_requested = action
                state.retry = None  # a paused quest does not retry by itself
            elif action == "resume":
                state.stop_requested = None
                if state.held is not None:
                    # The user's go-ahead: the held turn runs again now, with a fresh budget.
                    state.retry = RetryPlan(
                        run_id=state.held.run_id or "", attempt=1, delay_s=0.0, scheduled_at=event.ts,
                        scheduled_seq=event.seq, reason="resumed by the user", by_user=True,
                    )  # fmt: skip
        case QuestCompleted():
            state.completed = event
            state.retry = None
            state.held = None
            state.needs_continuation = False
    return state


def _bump(state: State, run_id: str | None, field: str) -> None:
    record = state.turns.get(run_id or "")
    if record is not None:
        state.turns[record.run_id] = replace(record, **{field: getattr(record, field) + 1})


def _set_failure(state: State, run_id: str | None, failure: TurnFailure | None) -> None:
    record = state.turns.get(run_id or "")
    if record is not None and failure is not None:
        state.turns[record.run_id] = replace(record, failure=failure)


def _trim(state: State) -> None:
    excess = len(state.order) - WINDOW
    if excess <= 0:
        return
    dropped = [r for r in state.order[:excess] if r != state.running]
    for run_id in dropped:
        state.turns.pop(run_id, None)
    keep = set(dropped)
    state.order[:] = [r for r in state.order if r not in keep]


def running_turn(state: State) -> TurnRecord | None:
    return state.turns.get(state.running) if state.running else None


def recent_turns(state: State, limit: int = 20) -> list[TurnRecord]:
    """The newest ``limit`` turns, newest first."""
    return [state.turns[r] for r in reversed(state.order[-limit:])]


PROJECTION: Projection[State] = Projection(
    name="turns", state_type=State, initial=initial, apply=apply,
    version=2,  # 2: held turns, failures, the running turn's activity (older snapshots: refolded)
)  # fmt: skip
