"""The stop-reason table of :mod:`projections.acp_stop`, row by row: how a prompt ends
for each way its last turn ended, and whether a scheduled retry keeps it waiting."""

from __future__ import annotations

import typing

import pytest

from acp import schema
from ds_events.events import Event
from ds_events.events.runner import TurnFailure, TurnFinished, TurnHeld, TurnRetryScheduled, TurnStarted
from projections import acp_stop
from projections.base import fold
from projections.turns import PROJECTION as TURNS


def turns_after(*events: Event):
    """The turns view of a log: a user message at seq 1, then ``events`` of turn run-1."""
    stamped = [
        type(e)(**{**{f: getattr(e, f) for f in e.__struct_fields__}, "seq": n, "id": f"e{n}",
                   "ts": "2026-12-02T04:00:00.000000Z", "run_id": e.run_id or "run-1"})
        for n, e in enumerate(events, 2)
    ]  # fmt: skip
    return fold(TURNS, stamped)


def started(attempt: int = 1) -> TurnStarted:
    return TurnStarted(runner="scripted", skill="scout", attempt=attempt)


def test_the_table_uses_exactly_the_schemas_stop_reasons() -> None:
    assert set(acp_stop.STOP_REASONS) == set(typing.get_args(schema.StopReason))


def test_a_completed_turn_ends_the_turn_saying_nothing() -> None:
    end = acp_stop.prompt_end(turns_after(started(), TurnFinished(outcome="completed")), since_seq=1)
    assert (end.stop_reason, end.message, end.run_id, end.outcome) == ("end_turn", "", "run-1", "completed")


def test_no_turn_since_the_message_ends_the_turn() -> None:
    state = turns_after(started(), TurnFinished(outcome="failed", reason="exit 1"))
    end = acp_stop.prompt_end(state, since_seq=5)  # the failed turn is older than the prompt
    assert (end.stop_reason, end.run_id) == ("end_turn", None)


@pytest.mark.parametrize(
    ("outcome", "reason", "stop", "opening"),
    [
        ("failed", "exit 1: the model API is down", "refusal", "The turn failed: exit 1: the model API is down"),
        ("stalled", "no output for 900 s", "refusal", "The turn stalled: no output for 900 s"),
        ("failed", "exit 1: context_length_exceeded", "max_tokens", "The turn stopped at a token or usage limit"),
        ("failed", "exit 1: You've hit your usage limit", "max_tokens", "The turn stopped at a token or usage limit"),
        ("failed", "error_max_turns: Reached maximum number of turns (30)", "max_turn_requests",
         "The turn hit the agent's turn limit"),
        ("interrupted", "host_died", "refusal", "The turn was interrupted: host_died"),
        ("interrupted", "paused", "cancelled", "The turn was paused"),
        ("cancelled", "stopped", "cancelled", "The turn was stopped"),
    ],
)  # fmt: skip
def test_a_turn_that_did_not_complete_ends_with_its_reason_said(outcome, reason, stop, opening) -> None:
    state = turns_after(started(attempt=3), TurnFinished(outcome=outcome, reason=reason))
    assert not acp_stop.waits_for_retry(state)
    end = acp_stop.prompt_end(state, since_seq=1, quest_id="q1")
    assert end.stop_reason == stop and end.message.startswith(opening), end.message
    assert "attempt 3" in end.message and end.outcome == outcome
    if reason == "paused":
        assert "`ds control q1 resume`" in end.message


def test_a_scheduled_retry_keeps_the_prompt_waiting_but_a_usage_limits_does_not() -> None:
    failed = TurnFinished(outcome="failed", reason="exit 1: the model API is down")
    state = turns_after(started(), failed, TurnRetryScheduled(attempt=2, delay_s=5, reason="failed: exit 1"))
    assert acp_stop.waits_for_retry(state)
    limited = turns_after(
        started(), TurnFinished(outcome="failed", reason="exit 1: usage limit reached, resets 06:00"),
        TurnRetryScheduled(attempt=2, delay_s=3600, reason="failed: usage limit"),
    )  # fmt: skip
    assert not acp_stop.waits_for_retry(limited)
    end = acp_stop.prompt_end(limited, since_seq=1)
    assert end.stop_reason == "max_tokens" and "retries by itself as attempt 2 in 3600 s" in end.message


def test_this_clients_cancel_ends_cancelled_whatever_the_turn_did() -> None:
    state = turns_after(started(), TurnFinished(outcome="failed", reason="exit 1"))
    end = acp_stop.prompt_end(state, since_seq=1, cancelled=True)
    assert (end.stop_reason, end.message) == ("cancelled", "")


def test_a_classified_cause_wins_over_the_reasons_words() -> None:
    assert acp_stop.limit_of("exit 1: quota of something", cause="provider_5xx") is None
    assert acp_stop.limit_of("exit 1", cause="usage_limit") == "max_tokens"
    assert acp_stop.limit_of("exit 1: boom") is None


def test_a_held_turn_ends_in_refusal_at_once_with_the_quests_health() -> None:
    refused = TurnFailure(failure_class="deterministic", cause="refused_call", tool="artifact.record",
                          error="invalid_metrics")  # fmt: skip
    state = turns_after(
        started(), TurnFinished(outcome="failed", reason="exit 1: artifact.record refused"),
        TurnHeld(attempt=1, max_attempts=3, reason="refused call", failure=refused),
    )  # fmt: skip
    assert not acp_stop.waits_for_retry(state)
    health = "failed: attempt 1 of 3 — artifact.record refused (invalid_metrics); `ds control QUEST resume` to try again"
    end = acp_stop.prompt_end(state, since_seq=1, quest_id="q1", health=health)
    assert end.stop_reason == "refusal"
    assert "it is held for you, not retried" in end.message and "`ds control q1 resume`" in end.message
    assert "quest health: failed: attempt 1 of 3" in end.message


def test_a_retry_classified_as_a_usage_limit_does_not_keep_the_prompt_waiting() -> None:
    limit = TurnFailure(failure_class="transient", cause="usage_limit", error="resets at 06:00")
    state = turns_after(started(), TurnFinished(outcome="failed", reason="exit 1: 429"),
                        TurnRetryScheduled(attempt=2, delay_s=7200, failure=limit))  # fmt: skip
    assert not acp_stop.waits_for_retry(state)
    assert acp_stop.prompt_end(state, since_seq=1).stop_reason == "max_tokens"
    plain = turns_after(started(), TurnFinished(outcome="failed", reason="exit 1: 502"),
                        TurnRetryScheduled(attempt=2, delay_s=5,
                                           failure=TurnFailure(failure_class="transient", cause="provider_5xx")))  # fmt: skip
    assert acp_stop.waits_for_retry(plain)
