"""A quest's health: one word (and one line) for what it is doing now, from the log.

Not a projection of its own: :func:`derive` reads three views that already fold the
facts (``status``, ``turns``, ``interactions``) and answers with a :class:`Health`. It is
pure: the clock is a parameter (``now``), which only one state needs — ``stalled``, a
running turn whose last event in the log is older than ``stall_seconds``. Everything
else (a retry's time, a held failure and its failing call) is written in the log.

The vocabulary, shared by ``ds quest list/show``, the HTTP quest routes, the page,
SUMMARY.md and ACP (one word, in this order of precedence):

- ``completed``, ``stopped``, ``paused``: the quest's own status says so;
- ``failed``: a turn failed and is held for the user (deterministic, or attempts spent);
- ``stalled``: a turn runs but its last activity is older than ``stall_seconds``;
- ``waiting_for_user``: an open blocking request (a decision or approval) awaits a reply;
- ``running``: a turn runs;
- ``retrying``: a failed attempt will run again at ``next_attempt_at``;
- ``new``: no turn has run yet; ``idle``: nothing to do until the user writes.
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec

from ds_events.events.base import seconds_ts, ts_seconds
from ds_events.events.runner import TurnFailure, TurnHeld

from . import interactions as interactions_view, turns as turns_view
from .status import StatusState

__all__ = ["Health", "HealthState", "HEALTH_STATES", "derive", "replay_health"]

HealthState = Literal["new", "running", "waiting_for_user", "idle", "paused", "stopped", "retrying", "failed", "stalled", "completed"]
HEALTH_STATES: tuple[str, ...] = (
    "new", "running", "waiting_for_user", "idle", "paused", "stopped", "retrying", "failed", "stalled", "completed",
)  # fmt: skip


class Health(msgspec.Struct, kw_only=True):
    """What ``health`` holds on every surface. ``since``/``since_seq``: the event that
    put the quest in this state; ``run_id``: the turn concerned; ``attempt`` of
    ``max_attempts`` (0: unknown) for a running, retrying or failed turn;
    ``next_attempt_at`` only while retrying; ``failure`` for retrying and failed."""

    state: HealthState
    summary: str
    since: str | None = None
    since_seq: int = 0
    run_id: str | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    next_attempt_at: str | None = None
    reason: str = ""
    failure: TurnFailure | None = None


def derive(
    status: StatusState,
    turns: turns_view.State,
    interactions: interactions_view.State,
    *,
    now: float,
    stall_seconds: float,
    max_attempts: int,
) -> Health:
    """The quest's health from its ``status``, ``turns`` and ``interactions`` views.

    ``max_attempts`` is the budget to show when the log does not record one (a log
    older than the field); ``now`` (POSIX seconds) and ``stall_seconds`` judge a stall.
    """
    if status.status == "completed":
        done = turns.completed
        line = f"completed: {status.completed_summary}" if status.completed_summary else "completed"
        return Health(state="completed", summary=line, since=_ts(done), since_seq=_seq(done))
    if status.status in ("stopped", "paused"):
        control = turns.control
        word = status.status
        why = control.reason if control is not None else ""
        hint = "`ds control QUEST resume` continues it"
        return Health(
            state="paused" if word == "paused" else "stopped", summary=f"{word}{f' ({why})' if why else ''}: {hint}",
            since=_ts(control), since_seq=_seq(control), reason=why,
        )  # fmt: skip
    if status.status == "new" or not status.quest_id:
        return Health(state="new", summary="new: the quest has no events yet")
    running = turns_view.running_turn(turns)
    resumed = turns.retry is not None and turns.retry.by_user  # the held turn runs again soon
    if running is None and turns.held is not None and not resumed:
        return _failed(turns, turns.held, max_attempts)
    if running is None and turns.retry is None and not turns.needs_continuation:
        legacy = _exhausted_without_hold(turns, max_attempts)
        if legacy is not None:
            return legacy
    waiting = [interactions.interactions[i] for i in interactions.open_requests if i in interactions.interactions]
    if running is not None:
        budget = running.max_attempts or max_attempts
        silent = now - _seconds(turns.activity_at) if turns.activity_at else 0.0
        if stall_seconds < math.inf and silent > stall_seconds:
            return Health(
                state="stalled", summary=f"stalled: turn {running.run_id} silent for {silent:.0f} s (since its last event)",
                since=turns.activity_at, since_seq=turns.activity_seq, run_id=running.run_id,
                attempt=running.attempt, max_attempts=budget, reason=f"no activity for {silent:.0f} s",
            )  # fmt: skip
        if waiting:
            return _waiting(waiting, running.run_id)
        of = f" of {budget}" if budget else ""
        attempt = f", attempt {running.attempt}{of}" if running.attempt > 1 or running.retry_of else ""
        stopping = f"; {turns.stop_requested} requested" if turns.stop_requested else ""
        return Health(
            state="running", summary=f"running: turn {running.number}{attempt} ({running.skill}){stopping}",
            since=running.started_at, since_seq=running.started_seq, run_id=running.run_id,
            attempt=running.attempt, max_attempts=budget or None,
        )  # fmt: skip
    if waiting:
        return _waiting(waiting, None)
    if turns.retry is not None:
        return _retrying(turns, turns.retry, max_attempts)
    queued = len(interactions.pending)
    if turns.total == 0:
        line = f"new: {queued} message(s) queued, waiting for a host (`ds run` or `ds serve`)" if queued else "new: no turn yet"
        return Health(state="new", summary=line)
    last = turns.turns.get(turns.last_finished or "")
    since, since_seq = (last.finished_at, last.finished_seq) if last is not None else (None, 0)
    if queued:
        line = f"idle: {queued} message(s) queued, waiting for a host (`ds run` or `ds serve`)"
    elif turns.needs_continuation:
        line = "idle: the last turn was cut off; the next host continues it"
    else:
        line = "idle: waiting for a message"
    return Health(state="idle", summary=line, since=since, since_seq=since_seq, run_id=last.run_id if last else None)


def replay_health(status: StatusState, turns: turns_view.State, interactions: interactions_view.State) -> Health:
    """The health as a replay of the log can know it, with no clock: every state but
    ``stalled``, which needs the time now (a running turn shows as ``running``). What the
    materialised files (SUMMARY.md) show, so that replay writes them byte for byte."""
    return derive(status, turns, interactions, now=0.0, stall_seconds=math.inf, max_attempts=0)


# -- the states that carry a failure ----------------------------------------------------


def _failed(turns: turns_view.State, held: TurnHeld, max_attempts: int) -> Health:
    budget = held.max_attempts or max_attempts
    of = f" of {budget}" if budget else ""
    what = _what_failed(held.failure, held.reason)
    next_step = "send a message or `ds control QUEST resume` to try again"
    return Health(
        state="failed", summary=f"failed: attempt {held.attempt}{of} — {what}; {next_step}",
        since=held.ts, since_seq=held.seq, run_id=held.run_id, attempt=held.attempt, max_attempts=budget or None,
        reason=held.reason, failure=held.failure,
    )  # fmt: skip


def _retrying(turns: turns_view.State, plan: turns_view.RetryPlan, max_attempts: int) -> Health:
    budget = 0 if plan.by_user else (plan.max_attempts or max_attempts)
    of = f" of {budget}" if budget else ""
    at = _iso(_seconds(plan.scheduled_at) + plan.delay_s) if plan.scheduled_at else None
    why = f" — {_what_failed(plan.failure, plan.reason)}" if not plan.by_user else " — resumed by the user"
    return Health(
        state="retrying", summary=f"retrying: attempt {plan.attempt}{of} at {at}{why}", since=plan.scheduled_at,
        since_seq=plan.scheduled_seq, run_id=plan.run_id, attempt=plan.attempt, max_attempts=budget or None,
        next_attempt_at=at, reason=plan.reason, failure=plan.failure,
    )  # fmt: skip


def _exhausted_without_hold(turns: turns_view.State, max_attempts: int) -> Health | None:
    """A log written before holds were recorded: its last turn failed with no retry
    after it. Its attempts were spent (or the quest was paused, then resumed): failed."""
    last = turns.turns.get(turns.last_finished or "")
    if last is None or last.outcome not in ("failed", "stalled"):
        return None
    cause = "stalled" if last.outcome == "stalled" else "agent_failed"
    failure = last.failure or TurnFailure(failure_class="transient", cause=cause, error=last.reason or None)
    of = f" of {max_attempts}" if max_attempts else ""
    return Health(
        state="failed", summary=f"failed: attempt {last.attempt}{of} — {last.outcome}: {last.reason}",
        since=last.finished_at, since_seq=last.finished_seq, run_id=last.run_id, attempt=last.attempt,
        max_attempts=max_attempts or None, reason=last.reason, failure=failure,
    )  # fmt: skip


def _waiting(waiting: list[interactions_view.InteractionRecord], run_id: str | None) -> Health:
    first = waiting[0]
    more = f" (and {len(waiting) - 1} more)" if len(waiting) > 1 else ""
    text = first.message if len(first.message) <= 80 else first.message[:79] + "…"
    return Health(
        state="waiting_for_user", summary=f"waiting for the user: {first.kind} {first.interaction_id}{more}: {text}",
        since=first.ts, since_seq=first.seq, run_id=run_id, reason=f"{first.kind} {first.interaction_id}",
    )  # fmt: skip


def _what_failed(failure: TurnFailure | None, reason: str) -> str:
    if failure is None:
        return reason or "failed"
    if failure.tool:
        code = f" ({failure.error})" if failure.error else ""
        return f"{failure.tool} refused{code}" if failure.cause == "refused_call" else f"{failure.cause}: {failure.tool}{code}"
    return f"{failure.cause}{f': {failure.error}' if failure.error else ''}"


# -- small helpers ----------------------------------------------------------------------


def _ts(event: object) -> str | None:
    return getattr(event, "ts", None) or None


def _seq(event: object) -> int:
    return int(getattr(event, "seq", 0) or 0)


def _seconds(ts: str) -> float:
    try:
        return ts_seconds(ts)
    except ValueError:
        return 0.0


def _iso(seconds: float) -> str:
    return seconds_ts(seconds)
